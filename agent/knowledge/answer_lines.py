"""The lines of the best passages that answer a question: the table row, the list item, the
sentence with the asked figure, put first in a search-only answer (agent/capabilities/knowledge.py).

Without a model nobody reads the passages for the asker, and a passage's answer can sit in its
fifth sentence or its twelfth table row. Each passage is cut into units — a sentence, a list
item, a table row with its header; a line that introduces a list ("Boards must:") is shown with
it — by the CommonMark parser, and a unit is scored by the
question's index terms it holds (the BM25 tokenizer's stems, stopwords and codes, so "biz
license renewl fee" meets "renewal fee"), each weighted by how rare it is among the units
(a term every unit has tells none apart). A question that asks for an amount (words in
agent/data/answer_words.yaml, or a `$`) is answered by a unit with a figure, and a figure of
the question itself ("family of 3", "$2,890") counts double. The better passage wins a tie.
Words match only within a language: lines are read from the leading passages written in one
language, none from below a passage in another one (a Spanish question whose best passage is an
English table would otherwise be headed by a Spanish line that merely shares its words, from a
passage ranked under the answer). When that language is not the question's, the lines are read
by meaning alone (their figures and codes aside): none without it.

Words alone miss a line that says the same in other words ("dead car in the driveway" against
"one inoperable vehicle, kept in the driveway for no more than 30 days"). So the lines a reader
would check first (those of the passages' matched chunks, and the best lines by words) are also
weighed by meaning when the caller has their closeness to the question (agent/knowledge/
line_meaning.py, the collection's own multilingual embedder): a line's score is then its words'
share of the best words' score and its closeness's place between the least and the most close,
mixed. Lines in another language than the question are all weighed: their words cannot pick them.

On a Q&A page the asker's question is usually closest to the page's own question, which a line
does not repeat ("Q21: Can a relative provide care and be paid?" / "A21: Yes, but only …"). So a
line under such a question is read with it: by the question's words as well as its own, and by a
closeness half its own, half the question's. A question over more than ASKS_UNITS lines is a
section's title ("Do I need a permit?" above a table of cases), not one answer's, and lends none.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Literal, NamedTuple

from markdown_it import MarkdownIt
from pydantic import BaseModel

from agent.accents import fold
from agent.knowledge.language import detect_language, typed_without_marks
from agent.knowledge.sparse import tokens
from agent.tables import Table, parse_table
from agent.yamlio import safe_load

if TYPE_CHECKING:
    from agent.knowledge.search import Passage

WORDS_FILE = "answer_words.yaml"
MAX_LINES = 3  # answer lines put first
BEST_PASSAGES = 3  # the passages they are picked from
NEAR_BEST = 0.55  # a line scores at least this share of the best line's score
RANK_DECAY = 0.08  # each later passage's lines count this much less
FIGURELESS = 0.55  # an amount question's line without a figure counts this much
LENGTH_TERMS = 60.0  # a unit of this many terms counts half as much as a one-term unit would
FIGURE_WEIGHT = 2.0  # a figure of the question ("family of 3", "$2,890") found in a line counts double
PARAGRAPH_CHARS = 320  # a paragraph up to this long is one unit; a longer one, its sentences
MEANING_SHARE = 0.75  # with closeness: how much of a line's score its meaning is (the rest its words)
NEAR_BEST_MEANING = 0.7  # with closeness: a line scores at least this share of the best line's score
WEIGHED_BY_WORDS = 8  # the best lines by words that are weighed by meaning too (beside the matched chunks')
MAX_WEIGHED = 24  # lines weighed by meaning per question at most (each new one is embedded once)
THEN_CHARS = 600  # an introduction's list is shown with it up to this many characters
ASKS_SHARE = 0.5  # with closeness: how much of a line's closeness is that of the question it answers
ASKS_UNITS = 8  # a question followed by more lines than this is a section's title, not one answer's

_PARSER = MarkdownIt("commonmark").enable("table")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(*¿¡\[]?[A-ZÀ-Ỹ0-9$])")
_FIGURE = re.compile(r"\d")
_NUMBER = re.compile(r"^[\d.,:/\-]+$")
_QUESTION = re.compile(r"[?？]\W*$")  # a unit that ends as a question (after its markup)
_INTRODUCES = re.compile(r"[:：][*_\s]*$")  # a unit that introduces what follows ("Boards must:")

# A row that answers is shown with the rest of its table when the table has at most WHOLE_ROWS
# rows: a reader takes in a short table at a glance, and its other rows are often the answer the
# words could not pick ("sign permit 50 sqft cost": the row "33 to 100 square feet", a range the
# terms do not see). A longer table shows the rows that answer, with its header. On the kept sets
# (every eval file; 325 of 1,673 questions quote a row, all in city permits and university IT)
# the quoted lines hold the expected text for 612 → 618 and the first line for 492 → 510; the
# characters quoted per question there go 277 → 366 and 318 → 501; at 6 rows 617 / 505, at 4
# 614 / 497 (docs/answers.md).
WHOLE_ROWS = 8
Kind = Literal["sentence", "item", "row"]


class AnswerWords(BaseModel):
    amount_words: dict[str, list[str]]
    amount_symbols: list[str]


@lru_cache(maxsize=1)
def answer_words() -> tuple[frozenset[str], frozenset[str], tuple[str, ...]]:
    """(the amount words' index terms in their language, the words and phrases themselves
    accent-folded, the amount symbols), from the YAML data."""
    words = AnswerWords.model_validate(safe_load(resources.files("agent.data").joinpath(WORDS_FILE).read_text("utf-8")))
    terms: set[str] = set()
    phrases: set[str] = set()
    for lang, listed in words.amount_words.items():
        for phrase in listed:
            phrases.add(" ".join(fold(phrase.lower()).split()))
            found = tokens(phrase, lang)
            if len(found) == 1:
                terms.add(found[0])
    return frozenset(terms), frozenset(phrases), tuple(words.amount_symbols)


def asks_for_amount(question: str) -> bool:
    """Whether the question asks for an amount, a count, a limit or a date: an amount word
    (as written, accents aside, or as its stem) or symbol in it."""
    terms, phrases, symbols = answer_words()
    if any(s in question for s in symbols):
        return True
    if terms & set(tokens(question)):
        return True
    folded = " " + " ".join(re.findall(r"\w+", fold(question.lower()))) + " "
    return any(f" {p} " in folded for p in phrases)


@dataclass(frozen=True)
class Unit:
    """A sentence, a list item or a table row (a one-row table with its header)."""

    kind: Kind
    text: str  # the Markdown as written (a row: its cells joined by " | ")
    table: Table | None = None
    then: str = ""  # a line that introduces a list ("Boards must:"): that list's Markdown, shown with it
    # the heading it stands under in its passage's text (shown with the sections around its own);
    # None before the first one: the passage's own section
    heading: str | None = None
    # on a Q&A page: the question it answers (the question paragraph or heading it stands under)
    asks: str | None = None
    whole: Table | None = None  # a row's whole table

    @property
    def shown(self) -> Table | None:
        """A row's table as shown: whole when it has at most WHOLE_ROWS rows, else the row with
        its header."""
        if self.whole is not None and len(self.whole.rows) <= WHOLE_ROWS:
            return self.whole
        return self.table

    def markdown(self) -> str:
        """The unit as shown: a row with its table (`shown`), an introduction with its list."""
        if self.table is not None:
            return self.shown.markdown()
        return f"{self.text}\n{self.then}" if self.then else self.text

    def weighed(self) -> str:
        """The unit as its meaning is weighed: as shown, but an introduction without its list
        (whose items are weighed as units of their own)."""
        return self.table.markdown() if self.table is not None else self.text


@dataclass(frozen=True)
class AnswerLine:
    unit: Unit
    passage: int  # its passage's index in the list given
    score: float
    order: int = 0  # its place among the units read


def units(text: str) -> list[Unit]:
    """The units of a passage's Markdown, in order. Headings and questions are not units: they
    name or ask, they do not answer (a Q&A page's "**Q4: …?**" matches the question best); a
    unit under a question records it (`Unit.asks`)."""
    return list(_units(text))


@lru_cache(maxsize=32)
def _units(text: str) -> tuple[Unit, ...]:
    """`units`, parsed once per text: the lines to weigh and the lines picked read the same
    passages, one answer's few at a time (a small cache: a long-lived process keeps little)."""
    lines = text.splitlines()
    tokens_ = _PARSER.parse(text)
    out: list[Unit] = []
    items = 0  # list items open around the current token
    skip_until = -1
    heading: str | None = None
    asks: str | None = None  # the question the units now read answer
    for i, token in enumerate(tokens_):
        if i < skip_until:
            continue
        before = len(out)
        if token.type == "heading_open" and i + 1 < len(tokens_):
            heading = " ".join(tokens_[i + 1].content.replace("*", "").split())
            asks = heading if _QUESTION.search(heading) else None
        elif token.type == "list_item_open":
            items += 1
        elif token.type == "list_item_close":
            items -= 1
        elif token.type == "table_open" and token.map is not None:
            table = parse_table("\n".join(lines[token.map[0]:token.map[1]]))
            close = next((j for j in range(i, len(tokens_)) if tokens_[j].type == "table_close"), len(tokens_))
            skip_until = close + 1
            if table is not None:
                out.extend(Unit("row", " | ".join(row), table.with_rows([row]), whole=table) for row in table.rows)
        elif token.type == "inline" and i and tokens_[i - 1].type == "paragraph_open":
            content = " ".join(token.content.split())
            if not content:
                continue
            if not items and _QUESTION.search(content):
                asks = content
                continue
            sentences = [s for s in _SENTENCE_END.split(content) if s.strip()]
            if not items and len(sentences) > 1 and _QUESTION.search(sentences[0]):  # "Q4: …? A4: …" as one paragraph
                asks = sentences[0]
                content = content[content.index(sentences[1]):]
                sentences = sentences[1:]
            if items:
                out.append(Unit("item", content))
            elif len(content) <= PARAGRAPH_CHARS:  # a short paragraph reads as one line
                out.append(Unit("sentence", content))
            else:
                out.extend(Unit("sentence", s) for s in sentences)
            listed = _introduced_list(tokens_, i, lines)
            if listed and out and _INTRODUCES.search(out[-1].text):
                out[-1] = replace(out[-1], then=listed)
        if len(out) > before:
            out[before:] = [replace(u, heading=heading, asks=asks) for u in out[before:]]
    answers: dict[str, int] = {}
    for unit in out:
        if unit.asks:
            answers[unit.asks] = answers.get(unit.asks, 0) + 1
    out = [replace(u, asks=None) if u.asks and answers[u.asks] > ASKS_UNITS else u for u in out]
    return tuple(u for u in out if not _QUESTION.search(u.text))  # a question asks, it does not answer


def _introduced_list(tokens_: list, index: int, lines: list[str]) -> str:
    """The Markdown of the list right after the paragraph whose inline token is at `index`
    ("" when none follows), its first lines up to THEN_CHARS, cut between lines, blank ones left out."""
    after = index + 2  # past the paragraph's close
    if after >= len(tokens_) or tokens_[after].type not in ("bullet_list_open", "ordered_list_open"):
        return ""
    span = tokens_[after].map
    if span is None:
        return ""
    # blank lines left out: a loose list reads the same tight, and stays one quote on every surface
    block = [line for line in textwrap.dedent("\n".join(lines[span[0]:span[1]])).splitlines() if line.strip()]
    kept: list[str] = []
    size = 0
    for line in block:
        if size + len(line) > THEN_CHARS and kept:
            kept.append("…")
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept)


def _terms(unit: Unit) -> set[str]:
    """A unit's index terms, with those of the question it answers."""
    text = unit.text if unit.table is None else " ".join((*unit.table.header, *unit.table.rows[0]))
    return set(tokens(text)) | _question_terms(unit.asks) if unit.asks else set(tokens(text))


@lru_cache(maxsize=256)
def _question_terms(question: str) -> frozenset[str]:
    """A page's question's index terms: read once for all the lines under it."""
    return frozenset(tokens(question))


class _Entry(NamedTuple):
    passage: int  # its passage's index
    unit: Unit
    terms: set[str]  # its index terms


class _Pool(NamedTuple):
    lead: "list[Passage]"  # the passages the lines are read from (`_lead`)
    foreign: bool  # they are written in another language than the question
    entries: list[_Entry]  # their units, each once


def _lead(question: str, passages: "list[Passage]") -> "tuple[list[Passage], bool]":
    """The leading passages whose lines may be quoted, and whether they are written in another
    language than `question`: the passages up to the first one in another language than the first
    passage (all of them when the question's language or a passage's cannot be told: a code, a
    table of figures). Vietnamese typed without its marks is Vietnamese: its words meet the
    marked ones in the index (`agent.accents.fold`)."""
    asked = "vi" if typed_without_marks(question) else detect_language(question, default="")
    if not asked or not passages:
        return passages, False
    first = passages[0].lang
    lead = first if first and first != "und" else asked
    for index, passage in enumerate(passages):
        if passage.lang and passage.lang not in (lead, "und"):
            return passages[:index], lead != asked
    return passages, lead != asked


def _pool(question: str, passages: "list[Passage]") -> _Pool:
    """The units of the leading passages (`_lead`), each once; none from another language than
    a question typed without its marks, whose meaning the embedder reads apart from every
    written language's (on the kept sets, half the lines so read were wrong)."""
    lead, foreign = _lead(question, passages[:BEST_PASSAGES])
    if foreign and typed_without_marks(question):
        return _Pool(lead, foreign, [])
    entries: list[_Entry] = []
    seen: set[str] = set()
    for index, passage in enumerate(lead):
        for unit in units(getattr(passage, "context", None) or passage.text):
            if unit.text in seen:
                continue
            seen.add(unit.text)
            entries.append(_Entry(index, unit, _terms(unit)))
    return _Pool(lead, foreign, entries)


def _wanted(question: str) -> set[str]:
    # "$2,890/mo" is one index term; the figure alone ("2,890", "2890") is what a line holds
    return set(tokens(question)) | set(tokens(question.replace("/", " ")))


def _by_words(question: str, pool: _Pool) -> dict[str, float]:
    """Each unit's score by the question's words it holds, by their rarity among the units, for
    its length (units holding too few of the words are left out). A unit in another language
    than the question is matched on its figures and codes only: other words meet only by chance."""
    wanted = _wanted(question)
    if pool.foreign:
        wanted = {t for t in wanted if _FIGURE.search(t)}
    if not wanted:
        return {}
    frequency: dict[str, int] = {}
    for entry in pool.entries:
        for term in entry.terms & wanted:
            frequency[term] = frequency.get(term, 0) + 1
    idf = {t: math.log(1 + len(pool.entries) / n) for t, n in frequency.items()}
    needed = min(3, max(1, round(0.2 * len(wanted))))
    scores: dict[str, float] = {}
    for entry in pool.entries:
        matched = entry.terms & wanted
        if len(matched) >= needed:
            scores[entry.unit.text] = sum(idf[t] * (FIGURE_WEIGHT if _NUMBER.match(t) else 1.0) for t in matched) \
                / (1 + len(entry.terms) / LENGTH_TERMS)
    return scores


def to_weigh(question: str, passages: "list[Passage]") -> list[Unit]:
    """The lines worth weighing by meaning for `question` (at most MAX_WEIGHED): those of the
    leading passages' matched chunks, where the search found the question closest, then the
    best WEIGHED_BY_WORDS lines by words. Passages in another language than the question are
    read by meaning only, so all their lines are weighed, the matched chunks' first."""
    pool = _pool(question, passages)
    if not _wanted(question) or not pool.entries:
        return []
    matched = [" ".join(p.text.split()) for p in pool.lead]
    chunk_units = {u.text for p in pool.lead for u in units(p.text)}
    in_match = [e.unit for e in pool.entries
                if e.unit.text in chunk_units or any(" ".join(e.unit.text.split()) in m for m in matched)]
    words = _by_words(question, pool)
    best_words = [e.unit for e in sorted(pool.entries, key=lambda e: -words.get(e.unit.text, 0.0)) if e.unit.text in words]
    rest = [e.unit for e in pool.entries] if pool.foreign else []
    chosen = list({u.text: u for u in [*in_match, *best_words[:WEIGHED_BY_WORDS], *rest]}.values())
    return chosen[:MAX_WEIGHED]


def answer_lines(question: str, passages: "list[Passage]", limit: int = MAX_LINES,
                 closeness: Mapping[str, float] | None = None) -> list[AnswerLine]:
    """The units of the best passages that answer `question`, best first. Passages are read
    whole: `context` (the section around the match) when the search gave it, else the passage's
    text. By words alone, none when no unit holds enough of its terms; with `closeness` (a unit's
    text: its embedding's cosine to the question's, for the units of `to_weigh`), by words and
    meaning. Passages in another language than the question's are read by meaning only: none
    without `closeness`."""
    if not _wanted(question):
        return []
    pool = _pool(question, passages)
    meaning = _spread(_with_questions(pool, closeness or {}))
    if not pool.entries or (pool.foreign and not meaning):
        return []
    amount = asks_for_amount(question)
    words = _by_words(question, pool)
    best_words = max(words.values(), default=0.0)
    scored: list[AnswerLine] = []
    for order, entry in enumerate(pool.entries):
        unit = entry.unit
        if meaning:
            score = (1 - MEANING_SHARE) * (words.get(unit.text, 0.0) / best_words if best_words else 0.0) \
                + MEANING_SHARE * meaning.get(unit.text, 0.0)
        elif unit.text in words:
            score = words[unit.text]
        else:
            continue
        if amount and not _FIGURE.search(unit.text):
            score *= FIGURELESS
        score *= 1 - RANK_DECAY * entry.passage
        if score > 0:
            scored.append(AnswerLine(unit, entry.passage, score, order))
    if not scored:
        return []
    scored.sort(key=lambda line: -line.score)
    near = NEAR_BEST_MEANING if meaning else NEAR_BEST
    picked = [line for line in scored if line.score >= near * scored[0].score][:limit]
    shown = " ".join(" ".join(line.unit.then.split()) for line in picked if line.unit.then)
    # an item of a list an introduction picked shows anyway: once
    return [line for line in picked if line.unit.then or " ".join(line.unit.text.split()) not in shown]


def _with_questions(pool: _Pool, closeness: Mapping[str, float]) -> dict[str, float]:
    """Each pooled unit's closeness (by its text), mixed with its question's when both are known."""
    out: dict[str, float] = {}
    for entry in pool.entries:
        own = closeness.get(entry.unit.text)
        if own is None:
            continue
        asked = closeness.get(entry.unit.asks) if entry.unit.asks else None
        out[entry.unit.text] = own if asked is None else (1 - ASKS_SHARE) * own + ASKS_SHARE * asked
    return out


def _spread(closeness: dict[str, float]) -> dict[str, float]:
    """Each closeness placed between the least close (0) and the closest (1) of its lines:
    an embedder's cosines sit in a narrow band whose place differs by question."""
    if len(closeness) < 2:
        return {}
    low, high = min(closeness.values()), max(closeness.values())
    if high - low < 1e-6:
        return {}
    return {text: (c - low) / (high - low) for text, c in closeness.items()}
