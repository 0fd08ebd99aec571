"""`unanswerable` eval section: questions that sound on-topic but that no passage answers.

Each is answered for real (the configured models, or search-only without them), and the
answer's `unanswerable` mark is scored against the file's `retrieval` questions, which the
documents do answer: precision and recall of "unanswerable" (agent/understanding/answerable.py),
next to the precision and recall the collection's calibration measured at ingest on its own
pseudo-questions (agent/knowledge/answerable_calibration.py).
"""

from __future__ import annotations

from typing import Any

from agent.answers import AskRequest


async def _marked(service, item: dict, tag: str) -> bool:
    result = await service.answer(AskRequest(text=str(item["question"]), thread_id=f"eval-unanswerable-{tag}"))
    return result.unanswerable


async def _calibrated(service) -> dict[str, Any] | None:
    """The collection's own measure of the judgement (None: not calibrated, or the store cannot say)."""
    from agent.knowledge import calibration

    try:
        stored, _ = await calibration.stored(service.runtime, service.runtime.settings.collection)
    except Exception:  # an unreachable store: the answers said so already
        return None
    cuts = stored.answerable_cuts() if stored is not None else None
    return cuts.summary() if cuts is not None else None


async def evaluate(items: list[dict], run: Any) -> dict[str, Any]:
    service = run.service
    answerable = [q for q in run.data.get("retrieval") or [] if q.get("question")]
    caught = [str(i["id"]) for i in items if await _marked(service, i, str(i["id"]))]
    flagged = [str(q["id"]) for q in answerable if await _marked(service, q, str(q["id"]))]
    marked = len(caught) + len(flagged)
    return {
        "precision": round(len(caught) / marked, 4) if marked else None,
        "recall": round(len(caught) / len(items), 4) if items else None,
        "n": len(items),
        "n_answerable": len(answerable),
        "answerable_marked": flagged,
        "missed": [str(i["id"]) for i in items if str(i["id"]) not in caught],
        "model": service.models.agent is not None,
        "calibrated": await _calibrated(service),
    }


def render(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"unanswerable: skipped ({result['skipped']})"
    p, r = result["precision"], result["recall"]
    line = (f"unanswerable: precision {'-' if p is None else f'{p:.0%}'}, recall {'-' if r is None else f'{r:.0%}'} "
            f"over {result['n']} unanswerable and {result['n_answerable']} answerable questions "
            f"({'with the agent model' if result['model'] else 'search-only'})")
    for lang in (result.get("calibrated") or {}).get("languages", []):
        c = result["calibrated"]
        cp = c["precision"].get(lang)
        line += (f"\n  calibrated at ingest ({lang}, {c['pseudo_questions'].get(lang, 0)} pseudo-questions): precision "
                 f"{'-' if cp is None else f'{cp:.0%}'}, recall {c['recall'][lang]:.0%}")
    if result["answerable_marked"]:
        line += "\n  answerable marked unanswerable: " + ", ".join(result["answerable_marked"])
    if result["missed"]:
        line += "\n  not marked: " + ", ".join(result["missed"])
    return line
