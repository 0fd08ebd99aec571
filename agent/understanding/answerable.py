"""Whether the documents support an answer: a judgement per turn, calibrated per collection.

Evidence: how close the best passage comes to the question (centered similarity, the gate's
measure), read against the collection's own calibration — where the shipped examples of
requests to decline sit relative to THIS knowledge base (agent/knowledge/calibration.py) — plus,
with a model, its own confidence and whether its answer cites anything.

- Without a model (search-only): unanswerable when the best passage is no closer than 75 % of
  the examples to decline come (written in the question's language). On the tuning sets
  (examples/*/eval/answerable-tune.yaml against dev/eval questions) this flagged no answerable
  question, and caught a third of the unanswerable ones: the passages are still shown, headed
  as "closest", never hidden.
- With a model: unanswerable when the model's confidence is below UNSURE (the agent prompt
  tells it to say it does not know and score low), or when it cites nothing and the best
  passage is no closer than every example to decline. The model's words stay: the prompt
  makes them say plainly that the documents do not answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.knowledge.calibration import Calibration

UNSURE = 0.4  # the model's confidence below which it did not find the answer in the documents
SEARCH_ONLY_PCT = 75
NO_CITATION_PCT = 100


def unanswerable(calibration: "Calibration | None", lang: str, evidence: float | None, *, model: bool,
                 confidence: float | None = None, cited: bool = True) -> bool:
    """The judgement for one knowledge answer (False when there is nothing to judge by)."""
    if model and confidence is not None and confidence < UNSURE:
        return True
    if calibration is None or evidence is None:
        return False
    floor = calibration.percentile("kb", lang, NO_CITATION_PCT if model else SEARCH_ONLY_PCT)
    if floor is None:
        return False
    if model:
        return not cited and evidence <= floor
    return evidence <= floor
