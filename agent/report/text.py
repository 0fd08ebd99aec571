"""The report as plain lines with text bars: the terminal's `askdesk report`, and the figures
Slack's App Home and Teams' card show (neither can show an image from a local page). Words come
from the report's messages, in the language being spoken (the terminal's: English)."""

from __future__ import annotations

from agent.prompts import PromptSet, default_prompts
from agent.report.build import Report
from agent.report.page import summary_rows

BAR = 20


def bar(value: int, most: int, width: int = BAR) -> str:
    return "█" * (round(width * value / most) if most else 0)


def per_day_lines(report: Report) -> list[str]:
    per_day = report.figures.per_day
    most = max((sum(d.values()) for d in per_day.values()), default=0)
    return [f"{day}  {bar(sum(c.values()), most):<{BAR}} {sum(c.values())}"
            + (f"  ({', '.join(f'{s} {n}' for s, n in sorted(c.items()))})" if c else "")
            for day, c in per_day.items()]


def document_lines(report: Report) -> list[str]:
    return [f"{n:>6}  {source}" for source, n in report.figures.top_documents]


def cluster_lines(report: Report, prompts: PromptSet | None = None) -> list[str]:
    say = (prompts or default_prompts()).text
    out = []
    for c in report.clusters:
        out.append(say("report_cluster", size=f"{c.size:>4}", unanswered=c.unanswered, down_voted=c.down_voted))
        out += [f"       · {e}" for e in c.examples]
    return out


def lines(report: Report, prompts: PromptSet | None = None) -> list[str]:
    f, prompts = report.figures, prompts or default_prompts()
    say = prompts.text
    out = [f"askdesk report {f.since:%Y-%m-%d %H:%M} – {f.until:%Y-%m-%d %H:%M} UTC", ""]
    out += [f"{k:<34}{v}" for k, v in summary_rows(report, prompts)]
    out += ["", say("report_per_day"), *per_day_lines(report)]
    if f.top_documents:
        out += ["", say("report_top_documents"), *document_lines(report)]
    out += ["", say("report_gaps"), *report.notes_said(prompts), *cluster_lines(report, prompts)]
    if not report.gap_questions:
        out.append(say("report_none"))
    return out
