"""What "the documents do not answer this" looks like for one knowledge collection, learned at
ingest from the collection's own passages, without a model.

The evidence a turn has is the search it ran: the best centered similarity of the passages it
found (agent/knowledge/calibration.py). Where that number falls for a question the documents do
not answer differs per knowledge base, so it is measured on the knowledge base itself:

- **answered**: a pseudo-question made from a sample of passages (one of its sentences, cut to a
  length a person types; a question the passage holds first), searched as a turn searches;
- **held out**: the same pseudo-question searched with its answering passage, and every near
  copy of it, held out: a near miss on the same subject, the answer absent.

The held-out searches stand for the questions the documents do not answer (on the kept eval sets
their best similarities fall where the real unanswerable questions' do); a question is marked
when its evidence is as weak as the weakest SHARE of them, per language of the passages. The
answered searches give the precision and recall of that cut on the pseudo-questions, reported by
`askdesk ingest --json` and `askdesk eval`. A language with too few passages to sample, or a
question longer than the pseudo-questions (a story around the question dilutes its vector), is
not judged by these numbers.
"""

from __future__ import annotations

import logging
import random
import re
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import numpy as np
from pydantic import BaseModel, Field

import agent.store.models as models
from agent.knowledge import versions
from agent.knowledge.sparse import bm25_query
from agent.knowledge.store import DENSE, SPARSE

if TYPE_CHECKING:
    from agent.runtime import Runtime

# each point's centered similarity to a query vector, given the calibration's centers
Centered = Callable[[list[float], list[Any], dict[str, Any]], list["float | None"]]
Embed = Callable[["Runtime", list[str]], Awaitable[np.ndarray]]

log = logging.getLogger(__name__)

SAMPLE = 120  # passages a calibration makes pseudo-questions from (cost: two searches each)
DUPLICATE = 0.97  # raw cosine: a passage this close to the held-out one holds the same answer
# The share of held-out searches whose evidence a mark reaches: chosen on the kept eval sets
# (examples/*/eval: answerable-tune, unanswerable-heldout, heldout-5, heldout-6; docs/answerable.md).
SHARE = 0.3
MIN_EACH = 20  # held-out pseudo-questions a language needs for a cut of its own
WORDS = (5, 14)  # a pseudo-question's length in words: a sentence cut as a person types it
MAX_WORDS = 20  # longer questions are not judged by the calibrated cut
SEED = 34

_SENTENCE = re.compile(r"(?<=[.?!])\s+|\n+")
_WORD = re.compile(r"\S+")


def best(scores: list[float | None]) -> float | None:
    """The best centered similarity of a search's passages (None: none has one)."""
    values = [s for s in scores if s is not None]
    return max(values) if values else None


class AnswerableCalibration(BaseModel):
    """Per language: the cut (a question whose best passage is no closer is marked), and the
    precision and recall of that cut on the collection's own pseudo-questions."""

    cuts: dict[str, float] = Field(default_factory=dict)
    precision: dict[str, float | None] = Field(default_factory=dict)
    recall: dict[str, float] = Field(default_factory=dict)
    answered: dict[str, int] = Field(default_factory=dict)  # pseudo-questions per language
    held_out: dict[str, int] = Field(default_factory=dict)
    share: float = SHARE
    max_words: int = MAX_WORDS
    seconds: float = 0.0

    def unanswerable(self, lang: str, evidence: float | None, words: int) -> bool | None:
        """The judgement, or None when this question is not one the calibration can judge."""
        cut = self.cuts.get(lang)
        if cut is None or evidence is None or words > self.max_words:
            return None
        return evidence <= cut

    def summary(self) -> dict[str, Any]:
        return {"languages": sorted(self.cuts), "precision": self.precision, "recall": self.recall,
                "pseudo_questions": self.answered, "held_out": self.held_out, "share": self.share,
                "seconds": round(self.seconds, 2)}


def fit(answered: dict[str, list[float]], held_out: dict[str, list[float]], *, share: float = SHARE,
        min_each: int = MIN_EACH) -> AnswerableCalibration:
    """The cut per language: the `share` quantile of the held-out searches' evidence."""
    out = AnswerableCalibration(share=share)
    for lang, held in sorted(held_out.items()):
        if len(held) < min_each:
            continue
        cut = float(np.quantile(np.asarray(held), share))
        caught = sum(1 for v in held if v <= cut)
        wrong = sum(1 for v in answered.get(lang, []) if v <= cut)
        out.cuts[lang] = round(cut, 4)
        out.recall[lang] = round(caught / len(held), 4)
        out.precision[lang] = round(caught / (caught + wrong), 4) if caught + wrong else None
        out.answered[lang], out.held_out[lang] = len(answered.get(lang, [])), len(held)
    return out


def pseudo_question(text: str, rng: random.Random) -> str | None:
    """A question-sized piece of a passage: a question it holds, else one of its sentences, cut
    to a length a person types (None when it has no sentence long enough)."""
    sentences = [s.strip(" -*#>|\t") for s in _SENTENCE.split(text)]
    sentences = [s for s in sentences if len(_WORD.findall(s)) >= WORDS[0]]
    if not sentences:
        return None
    asked = [s for s in sentences if s.endswith("?")]
    words = _WORD.findall(rng.choice(asked or sentences))
    return " ".join(words[: rng.randint(*WORDS)])


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n == 0, 1, n)


async def _sample(runtime: "Runtime", collection: str, flt: models.Filter | None, size: int,
                  rng: random.Random) -> list[Any]:
    """`size` visible passages (payload and dense vector), drawn evenly from the collection: the
    same ones for the same content (drawn from them in document order, not the store's)."""
    points: list[Any] = []
    offset = None
    while True:
        page, offset = await runtime.store.scroll(collection, limit=1024, offset=offset, scroll_filter=flt,
                                                  with_payload=["text", "lang", "source", "chunk_index"],
                                                  with_vectors=[DENSE])
        points += [p for p in page if isinstance(p.vector, dict) and DENSE in p.vector]
        if offset is None:
            break
    points.sort(key=lambda p: (str((p.payload or {}).get("source", "")), int((p.payload or {}).get("chunk_index", 0))))
    return rng.sample(points, size) if len(points) > size else points


async def _centered(runtime: "Runtime", collection: str, query: str, vector: list[float], flt: models.Filter | None,
                    centers: dict[str, Any], measure: "Centered") -> tuple[list[float | None], list[Any]]:
    """The centered similarities of the passages a turn's hybrid search for `query` (its dense
    `vector`) shows: as many, fused the same way (agent/knowledge/search.py)."""
    from agent.knowledge.sparse import PREFETCH_MIN, fusion

    top_k = runtime.settings.top_k
    prefetch = max(PREFETCH_MIN, 3 * top_k)
    points = await runtime.store.query_points(
        collection,
        prefetch=[models.Prefetch(query=vector, using=DENSE, limit=prefetch, filter=flt),
                  models.Prefetch(query=bm25_query(query), using=SPARSE, limit=prefetch, filter=flt)],
        query=fusion(query), limit=top_k, with_payload=False, with_vectors=[DENSE])
    return measure(vector, points, centers), points


def _excluding(flt: models.Filter | None, ids: list[Any]) -> models.Filter:
    held = models.HasIdCondition(has_id=ids)
    if flt is None:
        return models.Filter(must_not=[held])
    return models.Filter(must=[flt], must_not=[held])


async def calibrate(runtime: "Runtime", collection: str, centers: dict[str, Any], *, measure: "Centered",
                    embed: "Embed", sample: int = SAMPLE, seed: int = SEED) -> AnswerableCalibration:
    """Measure the collection's pseudo-questions (`centers`: its calibration's passage and query
    centers; `measure`: the gate's centered similarity, and `embed`: its cached query vectors,
    agent/knowledge/calibration.py `centered` and `embed_queries`, handed in by the calibration
    that calls this) and fit the cut per language; one with no language judged when it has too
    few."""
    started = time.perf_counter()
    rng = random.Random(seed)
    metadata = await runtime.store.collection_metadata(collection)
    flt = versions.visible(None, metadata)
    chosen = await _sample(runtime, collection, flt, sample, rng)
    sampled = [(p.id, _unit(np.asarray(p.vector[DENSE], dtype=np.float32))) for p in chosen]
    questions = [pseudo_question(str((p.payload or {}).get("text", "")), rng) for p in chosen]
    asked = [q for q in questions if q]
    # one cached batch: a re-ingest that changed a few files asks mostly the same questions
    vectors = dict(zip(asked, (v.tolist() for v in await embed(runtime, asked)))) if asked else {}
    answered: dict[str, list[float]] = {}
    held_out: dict[str, list[float]] = {}
    for point, (_, own), question in zip(chosen, sampled, questions):
        if not question:
            continue
        lang = str((point.payload or {}).get("lang") or "")
        vector = vectors[question]
        scores, _ = await _centered(runtime, collection, question, vector, flt, centers, measure)
        if (found := best(scores)) is not None:
            answered.setdefault(lang, []).append(found)
        ids = [pid for pid, v in sampled if float(v @ own) >= DUPLICATE]  # itself and its copies
        for _ in range(3):  # copies outside the sample show up among what is found
            scores, points = await _centered(runtime, collection, question, vector, _excluding(flt, ids), centers,
                                             measure)
            copies = [p.id for p in points if isinstance(p.vector, dict) and DENSE in p.vector
                      and float(_unit(np.asarray(p.vector[DENSE], dtype=np.float32)) @ own) >= DUPLICATE]
            if not copies:
                break
            ids += copies
        else:
            continue
        if (found := best(scores)) is not None:
            held_out.setdefault(lang, []).append(found)
    model = fit(answered, held_out)
    model.seconds = time.perf_counter() - started
    log.info("answerable calibration of %s: cuts %s, precision %s, recall %s, %.1f s", collection, model.cuts,
             model.precision, model.recall, model.seconds)
    return model
