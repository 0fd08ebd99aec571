"""The report as plain lines with text bars: the terminal's `askdesk report`, and the figures
Slack's App Home and Teams' card show (neither can show an image from a local page)."""

from __future__ import annotations

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


def cluster_lines(report: Report) -> list[str]:
    out = []
    for c in report.clusters:
        out.append(f"{c.size:>4} questions ({c.unanswered} unanswered, {c.down_voted} 👎)")
        out += [f"       · {e}" for e in c.examples]
    return out


def lines(report: Report) -> list[str]:
    f = report.figures
    out = [f"askdesk report {f.since:%Y-%m-%d %H:%M} – {f.until:%Y-%m-%d %H:%M} UTC", ""]
    out += [f"{k:<34}{v}" for k, v in summary_rows(report)]
    out += ["", "Questions per day", *per_day_lines(report)]
    if f.top_documents:
        out += ["", "Most-cited documents", *document_lines(report)]
    out += ["", "Unanswered and down-voted questions, grouped by meaning", *report.notes, *cluster_lines(report)]
    if not report.gap_questions:
        out.append("None in this period.")
    return out
