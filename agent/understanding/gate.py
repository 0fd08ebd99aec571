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
- `on`: the message comes closer to the knowledge base than any example does, or leans to it
  (rather than to its nearest example) further than any example does: answered, no note;
- `doubt`: everything else — the router model decides when there is one; without one the
  message is answered (a search costs less than a refused question), with a note that it may be
  outside what the documents cover.
A message in a language the documents are mostly not written in (a Vietnamese question to
English documents) is measured on both sides with its language's mean removed, against the examples
measured the same way: its language no longer draws it to the examples in that language.
Vietnamese typed without its marks is read by the embedder too poorly to judge: never refused
by numbers (`UNREADABLE`). Where search writes its marks back from the documents' own Vietnamese
pages (agent/knowledge/vietnamese_marks.py), the restored message is judged as Vietnamese, and
only a verdict that answers it without the note is kept: a wrong refusal costs more than a note.
A code or acronym the documents use ("PEIMS", "BCY25"), a message made only of words of the
documents' titles and headings ("who is eligible?") or a domain-file term is never refused
without a model; nor is a message every word of which one passage holds ("dryer vent": a row of
a fee table), however close its words come to a request to decline ("can you put a wool sweater
in the dryer"), nor a terse one every word of which the documents use ("check in app"). A
doubtful message that both searches, by meaning and by words, find in one document, one of whose
passages holds most of its words, is answered without the "may be outside" note.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from cachetools import TTLCache

from agent.accents import fold, phrases_re
from agent.audience import VIEWING, narrowed
from agent.knowledge import calibration as cal
from agent.knowledge import versions
from agent.knowledge.calibration import calibrate, examples
from agent.knowledge.language import UNMARKED_VI, detect_language, writing
from agent.knowledge.search import as_searched, search
from agent.knowledge.sparse import tokens
from agent.knowledge.store import DENSE
from agent.knowledge.vocabulary import MAIN_SHARE, Vocabulary, vocabulary
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
# A terse message is made of the words of its subject, and the examples to decline use the same
# words about something else: "dryer vent" sits next to "can you put a wool sweater in the dryer",
# "lemonade stand" next to "slogan for my kid's lemonade stand". What tells them apart is
# lexical: one passage of the documents holds every word of the message (a fee table's "Dryer
# vent" row, the exemption for "children's lemonade stands"). On the kept eval sets no request to
# decline that the margin refuses has every word in one passage (0 of 361), so such a message is
# held back from a refusal by numbers (doubtful: the router model decides, else answered). The
# passages are BM25's best PHRASE_PASSAGES for the message, searched only for a message about to
# be refused or doubtful. The same evidence lifts a doubtful message to `on` (answered without the
# "may be outside our documents" note): on the kept sets 34 doubtful answerable questions and no
# doubtful request to decline have every word in one passage (docs/understanding.md, "plain
# questions answered plainly").
PHRASE_PASSAGES = 10
# ...and a message of at most TERSE_WORDS words every word of which the documents use, though no
# one passage holds them all ("check in app": the attendance page says "check in" and the app's
# name elsewhere). On the kept sets and tune-38-terse (64 terse questions, 80 terse requests to
# decline, four organisations) it keeps two questions from a refusal and one request ("baby
# stroller reviews", to the child-care documents), and refuses none the fewer otherwise.
TERSE_WORDS = 4
# ...and a terse message of HELD_BUT_ONE_WORDS words or more, one of which the documents never use
# (a brand, a synonym, a typo) while one passage holds all the others: "tesla charger permit" and
# the EV charger row of the electrical permit fees. On the kept sets and tune-38/tune-40-terse it
# keeps one question from a refusal and one request to decline of 4 words (of the 95 terse ones
# refused); docs/understanding.md, "terse and cross-language questions".
HELD_BUT_ONE_WORDS = 3
# A message in a language the documents are not written in (Vocabulary.languages) is judged
# across languages: its vector and the examples' from their own language's mean
# (calibration.Calibration.query_centers), its similarity to the documents the best of the
# ACROSS_PASSAGES passages nearest to it (one more query, for such a message only), against the
# examples' `kb_across`/`margin_across`. On the kept eval sets: a Vietnamese question to the Texas
# documents (no domain file) no longer refused, as many requests to decline refused as before
# (361 of 513; docs/understanding.md, "terse and cross-language questions").
ACROSS_PASSAGES = 40
# ...and so is a message in a language fewer than ACROSS_BELOW of the passages are written in: a
# Spanish question to documents 12 % of which are Spanish is mostly answered by an English page,
# and its language draws it to the Spanish examples all the same. At the former 10 % (a language
# of the documents was any above it) "comida en laboratorios" (university IT, Spanish pages 12 %)
# was refused; on the kept sets nothing else changed (requests refused 362 of 513 either way; on
# tune-38-minority, 32 Spanish and Vietnamese questions answered by English pages, none refused
# either way).
ACROSS_BELOW = MAIN_SHARE
# Vietnamese typed without its marks ("nghi phep nam duoc bao nhieu ngay") is a language the
# embedder barely reads: on the tune-38 sets (four kept organisations) the margins of such
# questions (-0.32 to +0.08) and of such requests to decline (-0.84 to +0.02) overlap over
# their whole range, with or without its own language mean removed. Numbers decide nothing
# about it: it is doubtful (the router model decides, else it is answered with a note), unless
# it holds a code or heading words of the documents or a domain-file term.
UNREADABLE = frozenset({UNMARKED_VI})

# Without a router model a doubtful message is answered from the documents under the "may be
# outside what our documents cover" note. One whose margin is above PLAIN_PCT of the examples'
# margins leans to the documents as only a few examples do: it is answered without the note
# (`TopicVerdict.plain`; with a router model it is still the model's to decide, as every doubtful
# message is) — when judged across languages (where its words cannot be the documents'), or when
# at least PLAIN_COVERAGE of its words are the documents' own: "Salem weather tomorrow" leans
# that far too, and keeps the note. On the kept sets (four organisations, every eval file) the
# note came off 155 of the 501 doubtful answerable questions (90 of them judged across languages)
# and 12 of the 203 doubtful requests to decline; by the margin alone off 310 and 34, at p90 370
# and 48; docs/understanding.md, "the note".
PLAIN_PCT = 95
PLAIN_COVERAGE = 0.75
# ...and one whose two searches agree: by meaning and by words, the best passage is in the same
# document, and one of BM25's best PHRASE_PASSAGES passages holds at least AGREE_SHARE of its
# words, and AGREE_WORDS at least ("sign permit 50 sqft cost", "EV charger circut fee for my
# garage", Vietnamese typed without marks whose words the Vietnamese pages hold). Two readings
# of the message settling on one document are evidence the documents answer it as worded. Two
# held words of three are not: "weather" and "Salem" are both on the office-hours page. On the
# kept sets (four organisations, every eval file, tune-43-boundary included) the note came off
# 21 of 406 noted answerable questions and no request to decline; with two words enough, 33 and
# one request, and "what's the weather in Salem tomorrow?" (docs/understanding.md, "the note").
AGREE_SHARE = 0.6
AGREE_WORDS = 3

Zone = Literal["off", "doubt", "on"]


@dataclass(frozen=True)
class TopicVerdict:
    zone: Zone
    reason: str
    kb: float | None = None  # the message's centered similarity to the knowledge base
    margin: float | None = None  # ...minus its centered similarity to the nearest example
    plain: bool = False  # doubtful, yet leaning to the documents as few examples do (PLAIN_PCT): no note

    @property
    def offtopic(self) -> bool:
        return self.zone == "off"


@dataclass
class _Calibrated:
    calibration: cal.Calibration
    examples: np.ndarray  # centered unit vectors of the examples kept for this collection
    checked: float
    across: np.ndarray | None = None  # the same, each from its own language's mean


class TopicCheck:
    """Bound to one runtime, collection and domain; classification calls `judge` per message."""

    def __init__(self, runtime, collection: str | None, domain: Domain) -> None:
        self.runtime = runtime
        self.collection = collection
        self.domain = domain
        self.terms = phrases_re(domain.terms)  # the domain file's words: never refused without a model
        self._state: _Calibrated | None = None
        self._lock = asyncio.Lock()
        self._searched: TTLCache = TTLCache(maxsize=64, ttl=CHECK_SECONDS)  # _by_words

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
                kept_langs = [lang for lang, k in zip(ex.langs, keep) if k]
                across = cal.unit(ex.vectors[keep] - np.stack([stored.query_center_of(lang) for lang in kept_langs])) \
                    if kept_langs else centered
                self._state = _Calibrated(stored, centered, now, across)
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
        lang = writing(text)
        if lang in UNREADABLE and (read := await self._as_read(text, kb, in_thread, state)) is not None:
            return read
        try:
            # the turn's search embedded the same text: the runtime's in-memory query cache has it
            vector = cal.unit(np.asarray(await self.runtime.embedder().embed_query(text), dtype=np.float32))
        except Exception as exc:
            log.warning("off-topic check unavailable: %s", type(exc).__name__)
            return TopicVerdict("doubt", "off-topic check unavailable", kb)
        c = state.calibration
        kb, margin, across = await self._measured(lang, vector, kb, state)
        verdict = decide(c, lang, kb, margin, in_thread=in_thread, held="points back at the thread" if refers_back else None,
                         across=across)
        # the documents' vocabulary is read only for a short thread message about to be refused
        if verdict.zone == "off" and in_thread and await self._documents_words_only(text):
            verdict = decide(c, lang, kb, margin, in_thread=True, held="every word of it is the documents' own",
                             across=across)
        # a doubtful message is lifted only from a verdict of the numbers (not one of a knowledge
        # base too small to calibrate, nor of a writing the embedder cannot read)
        liftable = verdict.zone == "off" or (c.chunks >= MIN_PASSAGES and lang not in UNREADABLE)
        if verdict.zone != "on" and liftable and (source := await self._one_passage_holds(text)):
            verdict = TopicVerdict("doubt" if verdict.zone == "off" else "on",
                                   f"{verdict.reason}, but one passage holds every word of it ({source})", kb, margin)
        if verdict.zone == "off" and len(text.split()) <= TERSE_WORDS and await self._documents_words_only(text):
            verdict = TopicVerdict("doubt", f"{verdict.reason}, but it is terse and every word of it is the "
                                            "documents' own", kb, margin)
        if verdict.zone == "off" and len(text.split()) <= TERSE_WORDS and (source := await self._held_but_one(text)):
            verdict = TopicVerdict("doubt", f"{verdict.reason}, but it is terse and one passage holds every word of it "
                                            f"but one the documents never use ({source})", kb, margin)
        if verdict.plain and not across and (await self._coverage(text) or 0.0) < PLAIN_COVERAGE:
            verdict = replace(verdict, plain=False,
                              reason=f"{verdict.reason}, but fewer than {PLAIN_COVERAGE:.0%} of its words are the documents' own")
        if verdict.zone == "doubt" and not verdict.plain and not across and c.chunks >= MIN_PASSAGES and \
                (source := await self._searches_agree(text)):
            verdict = replace(verdict, plain=True, reason=f"{verdict.reason}, but both searches find it in {source} "
                                                          f"and one passage holds most of its words")
        return verdict

    async def _as_read(self, text: str, kb: float, in_thread: bool, state: _Calibrated) -> TopicVerdict | None:
        """The verdict on Vietnamese typed without its marks, judged with them written back as
        search writes them (the turn's `kb` was measured so), when that answers it without the
        note; None otherwise (it stays unreadable: never refused by numbers, noted)."""
        restored = await as_searched(self.runtime, text, collection=self.collection)
        if restored == text:
            return None
        try:
            vector = cal.unit(np.asarray(await self.runtime.embedder().embed_query(restored), dtype=np.float32))
        except Exception:  # noqa: BLE001 - judged as typed
            return None
        lang = detect_language(restored)
        kb, margin, across = await self._measured(lang, vector, kb, state)
        verdict = decide(state.calibration, lang, kb, margin, in_thread=in_thread, across=across)
        if verdict.zone != "on" and not verdict.plain:
            return None
        if verdict.zone != "on" and not across and (await self._coverage(text) or 0.0) < PLAIN_COVERAGE:
            return None
        return replace(verdict, reason=f"{verdict.reason}; typed without marks, read as {restored!r}")

    async def _measured(self, lang: str, vector: np.ndarray, kb: float, state: _Calibrated) -> tuple[float, float, bool]:
        """(similarity to the documents, margin over the nearest example to decline, whether both
        were measured across languages): `kb` as the turn's search measured it, unless the message
        is measured across languages (`_across`)."""
        across = await self._across(lang, vector, state)
        if across is not None:
            kb, nearest = across
        else:
            centered = cal.unit(vector - np.asarray(state.calibration.query_center, dtype=np.float32))
            nearest = float((state.examples @ centered).max()) if len(state.examples) else -1.0
        return kb, kb - nearest, across is not None

    async def _across(self, lang: str, vector: np.ndarray, state: _Calibrated) -> tuple[float, float] | None:
        """(similarity to the documents, to the nearest example) with the language's mean removed
        from the message and each example's from its own, for a message in a language the
        documents are mostly not written in; None for one in their main language (or when the
        store or the calibration cannot say)."""
        c = state.calibration
        if state.across is None or not len(state.across) or lang not in c.query_centers or not c.margin_across:
            return None
        vocab = await self._vocabulary()
        if vocab is None or not vocab.chunks or lang in vocab.languages(ACROSS_BELOW):
            return None
        query = cal.unit(vector - c.query_center_of(lang))
        try:  # what the asker's search may see: the audience's documents, each file's current version
            metadata = await self.runtime.store.collection_metadata(self.name) or {}
            flt = versions.visible(None if VIEWING.get() is None else narrowed(None), metadata)
            points = await self.runtime.store.query_points(self.name, query=vector.tolist(), using=DENSE,
                                                           limit=ACROSS_PASSAGES, with_payload=False,
                                                           with_vectors=[DENSE], query_filter=flt)
        except Exception as exc:
            log.warning("cross-language check unavailable: %s", type(exc).__name__)
            return None
        vectors = [p.vector[DENSE] for p in points if isinstance(p.vector, dict) and DENSE in p.vector]
        if not vectors:
            return None
        passages = cal.unit(cal.unit(np.asarray(vectors, dtype=np.float32)) - np.asarray(c.passage_center, dtype=np.float32))
        return float((passages @ query).max()), float((state.across @ query).max())

    async def _one_passage_holds(self, text: str, words: set[str] | None = None) -> str | None:
        """The document one of whose passages holds every word of `text` (as BM25 indexes them,
        each word on its own: no joined pairs, no bare numbers; or only `words`), or None."""
        words = message_words(text) if words is None else words
        if not words:
            return None
        try:
            found = await self._by_words(text)
        except Exception as exc:  # the store is down: judge by meaning only
            log.warning("passage check unavailable: %s", type(exc).__name__)
            return None
        for passage in found:
            if words <= set(tokens(f"{passage.title}\n{passage.section}\n{passage.text}", passage.lang or None)):
                return passage.source
        return None

    async def _searches_agree(self, text: str) -> str | None:
        """The document in which both searches, by meaning and by words, find their best passage
        for a doubtful message, when one of BM25's passages holds at least AGREE_SHARE of its words
        (AGREE_WORDS at least); None otherwise."""
        words = message_words(text)
        if len(words) < AGREE_WORDS:
            return None
        try:
            by_words = await self._by_words(text)
            by_meaning = await search(self.runtime, text, top_k=1, collection=self.collection, mode="dense")
        except Exception as exc:  # the store is down: the note stays
            log.warning("search agreement unavailable: %s", type(exc).__name__)
            return None
        if not by_words or not by_meaning or by_words[0].source != by_meaning[0].source:
            return None
        need = max(AGREE_WORDS, math.ceil(AGREE_SHARE * len(words)))
        held = (len(words & set(tokens(f"{p.title}\n{p.section}\n{p.text}", p.lang or None))) for p in by_words)
        return by_words[0].source if max(held) >= need else None

    async def _by_words(self, text: str) -> list:
        """BM25's best PHRASE_PASSAGES passages for `text`, as this asker may see them: searched
        once for the lexical checks of one judgement (kept CHECK_SECONDS)."""
        key = (text, VIEWING.get())
        if (found := self._searched.get(key)) is None:
            found = await search(self.runtime, text, top_k=PHRASE_PASSAGES, collection=self.collection, mode="sparse")
            self._searched[key] = found
        return found

    async def _held_but_one(self, text: str) -> str | None:
        """For a message of HELD_BUT_ONE_WORDS words or more, exactly one of which the documents
        never use (a brand, a synonym, a typo: "tesla charger permit"): the document one of whose
        passages holds all the others, or None."""
        words = message_words(text)
        vocab = await self._vocabulary()
        if vocab is None or len(words) < HELD_BUT_ONE_WORDS:
            return None
        unknown = {w for w in words if not vocab.knows(w)}
        return await self._one_passage_holds(text, words - unknown) if len(unknown) == 1 else None

    async def _coverage(self, text: str) -> float | None:
        """The share of the message's words that the documents use (None: nothing to tell by)."""
        vocab = await self._vocabulary()
        return vocab.coverage(text) if vocab is not None else None

    async def _documents_words_only(self, text: str) -> bool:
        """"what do I need to bring?" after a question on the documents: a short message made only
        of words the documents use says nothing of another subject; it continues the thread."""
        return await self._coverage(text) == 1.0


def message_words(text: str) -> set[str]:
    """The index terms of each word of `text` taken alone (a joined pair such as "dryervent" is
    a term of BM25 but no word of the message), bare numbers left out."""
    lang = detect_language(text)
    return {term for word in text.split() for term in tokens(word, lang)
            if not term.replace(",", "").replace(".", "").isdigit()}


def decide(c: cal.Calibration, lang: str, kb: float, margin: float, *, in_thread: bool = False,
           held: str | None = None, across: bool = False) -> TopicVerdict:
    """The zone of a message with centered similarity `kb` to the knowledge base and `margin`
    (kb minus its similarity to the nearest example to decline), written in `lang`. `held`: why a
    short message inside a thread cannot be judged alone (it points back at the thread, or says
    nothing the documents do not): never refused by numbers then. `across`: both were measured
    across languages (each language's mean removed): compared with the examples measured so."""
    if c.chunks < MIN_PASSAGES:
        return TopicVerdict("doubt", f"{c.chunks} passages: too few to calibrate", kb, margin)
    kb_table, margin_table = ("kb_across", "margin_across") if across else ("kb", "margin")
    floor = c.percentile(margin_table, lang, THREAD if in_thread else REFUSE)
    ceiling = c.percentile(kb_table, lang, 100)
    leaning = c.percentile(margin_table, lang, 100)
    detail = f"kb {kb:+.3f}, margin {margin:+.3f} ({lang}{', across languages' if across else ''})"
    if lang in UNREADABLE:
        return TopicVerdict("doubt", f"{detail}: the embedder cannot read this writing well enough to judge it",
                            kb, margin)
    if floor is not None and margin <= floor:
        if in_thread and held:
            return TopicVerdict("doubt", f"{detail}: leans to the examples to decline, but {held}", kb, margin)
        return TopicVerdict("off", f"{detail}: leans to the examples to decline", kb, margin)
    if ceiling is not None and kb > ceiling:
        return TopicVerdict("on", f"{detail}: closer to the documents than any example", kb, margin)
    if leaning is not None and margin > leaning:
        return TopicVerdict("on", f"{detail}: leans to the documents further than any example", kb, margin)
    near = c.percentile(margin_table, lang, PLAIN_PCT)
    if near is not None and margin > near:
        return TopicVerdict("doubt", f"{detail}: leans to the documents further than {PLAIN_PCT} % of the examples",
                            kb, margin, plain=True)
    return TopicVerdict("doubt", detail, kb, margin)
