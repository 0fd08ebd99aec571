"""The report as one self-contained HTML file: figures, charts embedded as base64 PNG, and the
gap questions grouped by meaning. Every stored text is escaped (questions are user input)."""

from __future__ import annotations

from html import escape

from agent.report.build import Report
from agent.report.charts import all_charts
from agent.report.figures import OUTCOMES

STYLE = ("body{font-family:system-ui,sans-serif;max-width:56rem;margin:2rem auto;padding:0 1rem;color:#222}"
         "table{border-collapse:collapse}td,th{padding:.2rem .8rem;border-bottom:1px solid #ddd;text-align:left}"
         "img{max-width:100%}.note{color:#8a6d3b;background:#fcf8e3;padding:.5rem}")


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def summary_rows(report: Report) -> list[tuple[str, str]]:
    f = report.figures
    rows = [("Questions", str(f.questions))]
    rows += [(o.replace("_", "-"), f"{f.outcomes[o]} ({percent(f.shares[o])})") for o in OUTCOMES if f.outcomes[o]]
    if f.outcomes.get("refused") or f.overridden:  # a refusal the asker overrode was a wrong one
        rows.append(("Refusals overridden by the asker", str(f.overridden)))
    rows += [("👍 / 👎", f"{f.thumbs_up} / {f.thumbs_down} (👎 {percent(f.down_rate)})"),
             ("Escalations (answered)", f"{f.escalations} ({f.escalations_answered})"),
             ("Median time to a person's reply",
              "–" if f.median_reply_minutes is None else f"{f.median_reply_minutes:g} min")]
    return rows


def render(report: Report) -> str:
    f = report.figures
    charts = all_charts(f)
    period = f"{f.since:%Y-%m-%d %H:%M} – {f.until:%Y-%m-%d %H:%M} UTC"
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>askdesk report</title>"
             f"<style>{STYLE}</style></head><body><h1>askdesk knowledge-gap report</h1><p>{escape(period)}</p>",
             "<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>"
                                 for k, v in summary_rows(report)) + "</table>"]
    parts += [f"<p><img alt='{escape(name.replace('_', ' '))}' src='data:image/png;base64,{data}'></p>"
              for name, data in charts.items()]
    parts.append("<h2>Unanswered and down-voted questions, grouped by meaning</h2>")
    parts += [f"<p class='note'>{escape(note)}</p>" for note in report.notes]
    if report.clusters:
        parts.append("<table><tr><th>questions</th><th>unanswered</th><th>👎</th><th>examples</th></tr>")
        parts += [f"<tr><td>{c.size}</td><td>{c.unanswered}</td><td>{c.down_voted}</td><td>"
                  + "<br>".join(escape(e) for e in c.examples) + "</td></tr>" for c in report.clusters]
        parts.append("</table>")
    elif not report.gap_questions:
        parts.append("<p>None in this period.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
