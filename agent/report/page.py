"""The report as one self-contained HTML file: figures, charts embedded as base64 PNG, and the
gap questions grouped by meaning. Every stored text is escaped (questions are user input).

Its words are the report's messages (prompts/messages.yaml), said in the language being spoken:
English for `askdesk report --html` and the web console, which know no reader's language; an
admin's on Slack and Teams, which share `summary_rows`."""

from __future__ import annotations

from html import escape

from agent.prompts import PromptSet, default_prompts
from agent.report.build import Report
from agent.report.charts import all_charts
from agent.report.figures import OUTCOMES

STYLE = ("body{font-family:system-ui,sans-serif;max-width:56rem;margin:2rem auto;padding:0 1rem;color:#222}"
         "table{border-collapse:collapse}td,th{padding:.2rem .8rem;border-bottom:1px solid #ddd;text-align:left}"
         "img{max-width:100%}.note{color:#8a6d3b;background:#fcf8e3;padding:.5rem}")


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def summary_rows(report: Report, prompts: PromptSet | None = None) -> list[tuple[str, str]]:
    """(label, figure) of the period's figures, the labels in the language being spoken."""
    f, say = report.figures, (prompts or default_prompts()).text
    rows = [(say("report_questions"), str(f.questions))]
    rows += [(say("report_outcome", outcome=o), f"{f.outcomes[o]} ({percent(f.shares[o])})")
             for o in OUTCOMES if f.outcomes[o]]
    if f.outcomes.get("refused") or f.overridden:  # a refusal the asker overrode was a wrong one
        rows.append((say("report_overridden"), str(f.overridden)))
    rows += [("👍 / 👎", f"{f.thumbs_up} / {f.thumbs_down} (👎 {percent(f.down_rate)})"),
             (say("report_escalations"), f"{f.escalations} ({f.escalations_answered})"),
             (say("report_median_reply"),
              "–" if f.median_reply_minutes is None
              else say("report_minutes", minutes=f"{f.median_reply_minutes:g}"))]
    return rows


def render(report: Report, prompts: PromptSet | None = None) -> str:
    f, prompts = report.figures, prompts or default_prompts()
    say = prompts.text
    charts = all_charts(f)
    period = f"{f.since:%Y-%m-%d %H:%M} – {f.until:%Y-%m-%d %H:%M} UTC"
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>askdesk report</title>"
             f"<style>{STYLE}</style></head><body><h1>askdesk knowledge-gap report</h1><p>{escape(period)}</p>",
             "<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>"
                                 for k, v in summary_rows(report, prompts)) + "</table>"]
    parts += [f"<p><img alt='{escape(name.replace('_', ' '))}' src='data:image/png;base64,{data}'></p>"
              for name, data in charts.items()]
    parts.append(f"<h2>{escape(say('report_gaps'))}</h2>")
    parts += [f"<p class='note'>{escape(note)}</p>" for note in report.notes_said(prompts)]
    if report.clusters:
        parts.append("<table><tr><th>questions</th><th>unanswered</th><th>👎</th><th>examples</th></tr>")
        parts += [f"<tr><td>{c.size}</td><td>{c.unanswered}</td><td>{c.down_voted}</td><td>"
                  + "<br>".join(escape(e) for e in c.examples) + "</td></tr>" for c in report.clusters]
        parts.append("</table>")
    elif not report.gap_questions:
        parts.append(f"<p>{escape(say('report_none'))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
