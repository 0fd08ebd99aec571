"""Is a message about the knowledge base at all? Decided by meaning, in any language, against
this deployment's own calibration.

Two sides are compared in the embedder's space: how close the message comes to the knowledge
base (the retrieval the turn runs anyway) and how close it comes to shipped examples of
requests to decline (agent/data/offtopic_*.yaml: chit-chat, trivia, writing, coding, shopping,
weather, sports... in English, Spanish and Vietnamese; plus the domain file's own). Both are
measured as centered similarities, and judged against where the examples themselves sit for
this collection (agent/knowledge/calibration.py), each message against the examples in its own
language. No threshold is a raw similarity tuned to one knowledge base.

Three outcomes (`TopicVerdict.zone`):
- `off`: the message leans toward an example to decline (rather than toward the knowledge base)
  as far as most of the examples themselves do, and does not point back at its thread: refused
  without a model;
- `on`: the message comes closer to the knowledge base than any example does: answered;
- `doubt`: everything else — the router model decides when there is one; without one the
  message is answered (a search costs less than a refused question), with a note that it may be
  outside what the documents cover.
A code or acronym the documents use ("PEIMS", "BCY25"), a message made only of words of the
documents' titles and headings ("who is eligible?") or a domain-file term is never refused
without a model.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np

from agent.accents import fold, phrases_re
from agent.knowledge import calibration as cal
from agent.knowledge.calibration import calibrate, examples
from agent.knowledge.language import detect_language
from agent.knowledge.vocabulary import Vocabulary, vocabulary
from agent.understanding.domain import Domain

log = logging.getLogger(__name__)

# The deciding number is the margin: the message's centered similarity to the knowledge base
# minus that to its nearest example to decline. Each example has one too (against the examples
# of other kinds), so the examples' margins say where "a request to decline" sits for this
# collection and language. A message is refused without a model when its margin is no higher
# than the REFUSE-th percentile of those. Set on the development sets (the HR sample's
# eval/dev-gate.yaml, the demo's calibration/dev/fresh4/fresh5/thread_offtopic), never on the
# held-out ones.
REFUSE = 50
# Inside a thread a short message may say little on its own: it is refused only on stronger
# evidence (a lower percentile). A message in a thread that says as much as a full question
# (classify.STANDALONE_TERMS words of its own) is judged like one sent alone. One that points
# back at the thread ("how often do I have to change *it*?") cannot be judged alone at all: it
# is never refused without a model (at worst doubtful: the router model decides, else answered).
THREAD = 25
# Centered similarities need the collection's mean passage; a knowledge base of a few passages
# (a first test with one file) has no meaningful mean, so nothing is refused or accepted by
# numbers until it has this many: every message is doubtful (the model decides, else answered).
MIN_PASSAGES = 8
CHECK_SECONDS = 5.0  # how often a cached calibration is compared with the collection's version

Zone = Literal["off", "doubt", "on"]


@dataclass(frozen=True)
class TopicVerdict:
    zone: Zone
    reason: str
    kb: float | None = None  # the message's centered similarity to the knowledge base
    margin: float | None = None  # ...minus its centered similarity to the nearest example

    @property
    def offtopic(self) -> bool:
        return self.zone == "off"


@dataclass
class _Calibrated:
    calibration: cal.Calibration
    examples: np.ndarray  # centered unit vectors of the examples kept for this collection
    checked: float


class TopicCheck:
    """Bound to one runtime, collection and domain; classification calls `judge` per message."""

    def __init__(self, runtime, collection: str | None, domain: Domain) -> None:
        self.runtime = runtime
        self.collection = collection
        self.domain = domain
        self.terms = phrases_re(domain.terms)  # the domain file's words: never refused without a model
        self._state: _Calibrated | None = None
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.collection or self.runtime.settings.collection

    async def protected(self, text: str) -> str | None:
        """Why `text` must never be refused without a model, or None."""
        if self.terms is not None and self.terms.search(fold(text)):
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

    async def calibrated(self) -> _Calibrated | None:
        """The collection's calibration (computed once when it has none, re-read when another
        ingest changed the collection); None when the store cannot say."""
        now = time.monotonic()
        if self._state is not None and now - self._state.checked < CHECK_SECONDS:
            return self._state
        async with self._lock:
            try:
                stored, version = await cal.stored(self.runtime, self.name)
                ex = await examples(self.runtime, self.domain)
                if stored is None or stored.examples_version != cal.examples_version(ex.texts) or \
                        (version is not None and stored.content_version != version):
                    # not calibrated yet (an older collection), or for other examples or content
                    stored = await calibrate(self.runtime, self.name, self.domain)
            except cal.NotIngested:  # an empty deployment: nothing to judge by until an ingest
                return self._state
            except Exception as exc:
                log.warning("off-topic calibration unavailable: %s", type(exc).__name__)
                return self._state
            if self._state is None or self._state.calibration is not stored:
                keep = np.ones(len(ex.texts), dtype=bool)
                keep[stored.close] = False
                centered = cal.unit(ex.vectors[keep] - np.asarray(stored.query_center, dtype=np.float32))
                self._state = _Calibrated(stored, centered, now)
            self._state.checked = now
            return self._state

    async def judge(self, text: str, kb: float | None, *, in_thread: bool = False,
                    refers_back: bool = False) -> TopicVerdict:
        """`kb`: the message's best centered similarity to the knowledge base (from the turn's
        retrieval); None when the knowledge base could not be searched."""
        if kb is None:
            return TopicVerdict("doubt", "no similarity to judge by")
        why = await self.protected(text)
        if why:
            return TopicVerdict("on", why, kb)
        state = await self.calibrated()
        if state is None:
            return TopicVerdict("doubt", "not calibrated", kb)
        try:
            # the turn's search embedded the same text: the runtime's in-memory query cache has it
            vector = cal.unit(np.asarray(await self.runtime.embedder().embed_query(text), dtype=np.float32))
        except Exception as exc:
            log.warning("off-topic check unavailable: %s", type(exc).__name__)
            return TopicVerdict("doubt", "off-topic check unavailable", kb)
        c = state.calibration
        centered = cal.unit(vector - np.asarray(c.query_center, dtype=np.float32))
        nearest = float((state.examples @ centered).max()) if len(state.examples) else -1.0
        lang, margin = detect_language(text), kb - nearest
        verdict = decide(c, lang, kb, margin, in_thread=in_thread, held="points back at the thread" if refers_back else None)
        # the documents' vocabulary is read only for a short thread message about to be refused
        if verdict.zone == "off" and in_thread and await self._documents_words_only(text):
            verdict = decide(c, lang, kb, margin, in_thread=True, held="every word of it is the documents' own")
        return verdict

    async def _documents_words_only(self, text: str) -> bool:
        """"what do I need to bring?" after a question on the documents: a short message made only
        of words the documents use says nothing of another subject; it continues the thread."""
        vocab = await self._vocabulary()
        return vocab is not None and vocab.coverage(text) == 1.0


def decide(c: cal.Calibration, lang: str, kb: float, margin: float, *, in_thread: bool = False,
           held: str | None = None) -> TopicVerdict:
    """The zone of a message with centered similarity `kb` to the knowledge base and `margin`
    (kb minus its similarity to the nearest example to decline), written in `lang`. `held`: why a
    short message inside a thread cannot be judged alone (it points back at the thread, or says
    nothing the documents do not): never refused by numbers then."""
    if c.chunks < MIN_PASSAGES:
        return TopicVerdict("doubt", f"{c.chunks} passages: too few to calibrate", kb, margin)
    floor = c.percentile("margin", lang, THREAD if in_thread else REFUSE)
    ceiling = c.percentile("kb", lang, 100)
    detail = f"kb {kb:+.3f}, margin {margin:+.3f} ({lang})"
    if floor is not None and margin <= floor:
        if in_thread and held:
            return TopicVerdict("doubt", f"{detail}: leans to the examples to decline, but {held}", kb, margin)
        return TopicVerdict("off", f"{detail}: leans to the examples to decline", kb, margin)
    if ceiling is not None and kb > ceiling:
        return TopicVerdict("on", f"{detail}: closer to the documents than any example", kb, margin)
    return TopicVerdict("doubt", detail, kb, margin)
