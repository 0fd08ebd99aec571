"""Whether the documents support an answer: a judgement per turn, calibrated per collection.

Evidence: how close the best passage comes to the question (centered similarity, the gate's
measure), read against the collection's own calibration (agent/knowledge/calibration.py):

- **the collection's own near misses** (agent/knowledge/answerable_calibration.py): at ingest,
  pseudo-questions made from the passages are searched with their answering passage held out;
  a question whose best passage is no closer than the weakest 30 % of those is marked. Only a
  question in a language the collection was calibrated in, and no longer than the
  pseudo-questions, is judged this way;
- otherwise (a collection too small to make enough pseudo-questions of), where the shipped
  examples of requests to decline sit relative to this knowledge base: the best passage no
  closer than 75 % of them come.

- Without a model (search-only): unanswerable when the evidence says so. The passages are still
  shown, headed as "closest", never hidden.
- With a model: unanswerable when the model's confidence is below UNSURE (the agent prompt tells
  it to say it does not know and score low), or when it cites nothing and the evidence says so.
  The model's words stay: the prompt makes them say plainly that the documents do not answer.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agent.knowledge.language import detect_language, typed_without_marks

if TYPE_CHECKING:
    from agent.knowledge.calibration import Calibration

UNSURE = 0.4  # the model's confidence below which it did not find the answer in the documents
SEARCH_ONLY_PCT = 75  # the examples' percentile, for a collection without near-miss cuts
NO_CITATION_PCT = 100
_WORD = re.compile(r"\S+")


def weak_evidence(calibration: "Calibration", question: str, evidence: float, *, model: bool) -> bool:
    """Whether the best passage is as far from `question` as an unanswered question's would be.
    Never for Vietnamese typed without its marks: the embedder barely reads it, so its best
    passage is far whether the documents answer it or not (tune-38: 11 of 52 answerable such
    questions were marked, none of the 8 typed with marks)."""
    if typed_without_marks(question):
        return False
    lang = detect_language(question)
    cuts = calibration.answerable_cuts()
    if cuts is not None and cuts.cuts:
        return bool(cuts.unanswerable(lang, evidence, len(_WORD.findall(question))))
    floor = calibration.percentile("kb", lang, NO_CITATION_PCT if model else SEARCH_ONLY_PCT)
    return floor is not None and evidence <= floor


def unanswerable(calibration: "Calibration | None", question: str, evidence: float | None, *, model: bool,
                 confidence: float | None = None, cited: bool = True) -> bool:
    """The judgement for one knowledge answer to `question` (False when there is nothing to judge by)."""
    if model and confidence is not None and confidence < UNSURE:
        return True
    if calibration is None or evidence is None:
        return False
    if model and cited:
        return False
    return weak_evidence(calibration, question, evidence, model=model)
