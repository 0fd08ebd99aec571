"""The report's charts as PNG images in base64, ready for an `<img src="data:image/png;base64,…">`.

matplotlib (Agg, no display) is imported here only, when a chart is drawn: `askdesk ask` and
the bots' start-up never load it."""

from __future__ import annotations

import base64
import io
from typing import Any

from agent.report.figures import OUTCOMES, Figures

COLOURS = {"answered": "#2e7d32", "search_only": "#1565c0", "unanswerable": "#c62828", "refused": "#6d4c41",
           "clarify": "#f9a825", "error": "#616161"}
SIZE = (7.0, 2.8)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    _pyplot().close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def questions_per_day(fig_data: Figures) -> str:
    """Stacked bars: questions per day, one colour per surface."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE)
    days = list(fig_data.per_day)
    bottom = [0] * len(days)
    for surface in fig_data.surfaces or ["(none)"]:
        values = [fig_data.per_day[d].get(surface, 0) for d in days]
        ax.bar([d[5:] for d in days], values, bottom=bottom, label=surface)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_title("Questions per day")
    ax.legend(loc="upper left", fontsize="small")
    ax.tick_params(axis="x", labelrotation=45, labelsize="small")
    return _png(fig)


def outcomes(fig_data: Figures) -> str:
    """Horizontal bars: how the period's questions ended."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE)
    names = [o for o in OUTCOMES if fig_data.outcomes.get(o)] or ["answered"]
    ax.barh(names, [fig_data.outcomes.get(o, 0) for o in names], color=[COLOURS[o] for o in names])
    ax.invert_yaxis()
    ax.set_title("How questions ended")
    return _png(fig)


def top_documents(fig_data: Figures) -> str:
    """Horizontal bars: the most-cited documents."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE)
    docs = fig_data.top_documents or [("(none)", 0)]
    ax.barh([d if len(d) <= 40 else "…" + d[-39:] for d, _ in docs], [n for _, n in docs], color="#455a64")
    ax.invert_yaxis()
    ax.set_title("Most-cited documents")
    return _png(fig)


def all_charts(fig_data: Figures) -> dict[str, str]:
    """name → base64 PNG."""
    return {"questions_per_day": questions_per_day(fig_data), "outcomes": outcomes(fig_data),
            "top_documents": top_documents(fig_data)}
