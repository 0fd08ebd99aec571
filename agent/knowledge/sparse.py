"""BM25 sparse vectors for Qdrant (the IDF half is Qdrant's `Modifier.IDF`).

Documents get BM25's saturated, length-normalised term frequency; queries get weight 1 per
unique term, so Qdrant's dot product with IDF applied is the BM25 score. Terms are hashed to
32-bit indices (stable across processes and machines).

Tokens are built for the staff's questions: amounts and codes survive whole ("$4,106" ->
"4,106" and "4106", "TX3C", "800-735-2989", "6:00"), a short code followed by a number also
yields a joined term ("HB 59" and "HB-59" -> "hb59", as "HB59" is written), accent-folded duplicates let "dias" match "días",
Snowball stems (English, Spanish) let "drills" match "drill"; a language whose words do not
inflect (Vietnamese: agent/data/languages.yaml `unstemmed`) is indexed as written, each word
also accent-folded, so a question typed without its marks ("giay phep") matches the page's words
and drops the same stopwords ("khong", "duoc"). Two adjacent words also
yield their joined form ("child care" -> "childcare", "day care" -> "daycare"), so a compound
written as one word or two finds the same passages — in any language, no word list.
SPARSE_VERSION is part of every file's hash: changing tokenisation re-indexes on the next ingest.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from functools import lru_cache

import snowballstemmer

import agent.store.models as models
from agent.accents import fold
from agent.knowledge.language import _STOP, UNSTEMMED, detect_language

SPARSE_VERSION = 6
K1 = 1.2
B = 0.75
AVG_DOC_TERMS = 90.0  # mean index terms per chunk of the sample KB at chunk_chars=1200

# A word, possibly joined to more word parts by . , : / - ' (numbers, codes, dates, phone numbers).
_RAW = re.compile(r"\w+(?:[.,:/'’\-]\w+)*")
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_NUMERIC = re.compile(r"^[\d.,:/\-]+$")
_SPLIT = re.compile(r"[.,:/'’\-]")

_STOPWORDS = frozenset().union(*_STOP.values()) | frozenset(
    "a i me my we our us it its they them their he she his her there here then than so but "
    "also any all about into over after before up out ya q pa e u".split()
) | frozenset(fold(word) for word in _STOP["vi"])  # "khong", "duoc": Vietnamese typed without its marks
_STEMMERS = {"en": snowballstemmer.stemmer("english"), "es": snowballstemmer.stemmer("spanish")}
# Joined forms of adjacent words: both parts alphabetic, each at least COMPOUND_PART letters,
# joined at most COMPOUND_MAX ("child care" yes, "the board" no: "the" is a stopword anyway).
COMPOUND_PART = 3
COMPOUND_MAX = 10


@lru_cache(maxsize=200_000)
def _stem(word: str, lang: str) -> str:
    stemmer = _STEMMERS.get(lang)
    return stemmer.stemWord(word) if stemmer else word


_CODE_YEAR = re.compile(r"([a-z]{1,4})(?:19|20)(\d\d)")


def _code_forms(code: str) -> list[str]:
    """A code with a four-digit year also as its two-digit form ("bcy2025" -> "bcy25", "fy2024"
    -> "fy24"), the way fiscal and contract years are abbreviated."""
    m = _CODE_YEAR.fullmatch(code)
    return [code, m.group(1) + m.group(2)] if m else [code]


def _word_terms(word: str, lang: str) -> list[str]:
    """The word's stem, plus its accent-folded form when that differs ("días" -> "dia", "dias").

    One stem rather than surface + stem keeps vectors short: embedded Qdrant scores sparse
    vectors in Python, point by point, so every term costs search time."""
    stemmed = word.isalpha() and len(word) > 3 and lang not in UNSTEMMED
    term = _stem(word, lang if lang in _STEMMERS else "en") if stemmed else word
    folded = fold(term)
    return [term] if folded == term else [term, folded]


def tokens(text: str, lang: str | None = None) -> list[str]:
    """Index terms of `text`, with repeats (term frequency matters for documents)."""
    text = unicodedata.normalize("NFKC", text).lower()
    lang = lang or detect_language(text)
    out: list[str] = []
    prev: str | None = None  # last surface token, for "hb 59" style pairs
    prev_word: str | None = None  # last alphabetic word, for "child care" -> "childcare"
    last_end = 0
    for match in _RAW.finditer(text):
        if text[last_end : match.start()].strip():
            prev = None  # only directly adjacent words pair up ("HB 59", not "hours/week $7")
            prev_word = None
        last_end = match.end()
        raw = match.group().strip("'’")
        if not raw:
            continue
        if _NUMERIC.match(raw) and any(ch.isdigit() for ch in raw):
            raw = raw.rstrip(".,:/-")
            out.append(raw)
            if _THOUSANDS.match(raw):
                out.append(raw.replace(",", ""))
            elif "-" in raw or "/" in raw:
                out.extend(p for p in _SPLIT.split(raw) if p)  # ranges: "0-17" -> 0, 17
            if prev and prev.isalpha() and len(prev) <= 4:
                out.extend(_code_forms(f"{prev}{raw}"))  # "BCY 26" -> "bcy26", as staff also write it
            prev = raw
            continue
        parts = [p for p in _SPLIT.split(raw) if p] if _SPLIT.search(raw) else [raw]
        if len(parts) > 1 and any(ch.isdigit() for ch in raw):
            out.append(raw)  # codes like "b-3", "covid-19"
            if len(parts) == 2 and parts[0].isalpha() and len(parts[0]) <= 4 and parts[1].isdigit():
                out.extend(_code_forms(parts[0] + parts[1]))  # "bcy-26" -> "bcy26"
        for part in parts:
            if part in _STOPWORDS or (len(part) == 1 and not part.isdigit()):
                prev = prev_word = None
                continue
            out.extend(_word_terms(part, lang))
            if not part.isalpha():
                out.extend(_code_forms(part)[1:])  # "bcy2025" also as "bcy25"
            if (prev_word and part.isalpha() and len(part) >= COMPOUND_PART
                    and len(prev_word) + len(part) <= COMPOUND_MAX):
                out.extend(_word_terms(prev_word + part, lang))  # "day care" also indexes "daycare"
            prev = part
            prev_word = part if part.isalpha() and len(part) >= COMPOUND_PART else None
    return out


def term_index(term: str) -> int:
    """Stable 32-bit index of a term (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "little")


def _vector(weights: dict[str, float]) -> models.SparseVector:
    merged: dict[int, float] = {}
    for term, weight in weights.items():
        idx = term_index(term)
        merged[idx] = max(merged.get(idx, 0.0), weight)
    indices = sorted(merged)
    return models.SparseVector(indices=indices, values=[merged[i] for i in indices])


def file_name_words(source: str) -> str:
    """The words of a document's file name ("bcy26-board-max-rates-qa.md" -> "bcy26 board max
    rates qa"): organisations name files with the shorthand staff type ("BCY26"), while the
    text spells it out ("Board Contract Year 2026"), so BM25 indexes them with every chunk."""
    stem = source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return " ".join(re.split(r"[-_.\s]+", stem)).strip()


def bm25_document(text: str, lang: str | None = None) -> models.SparseVector:
    """BM25 term weights of a chunk: tf*(k1+1) / (tf + k1*(1 - b + b*len/avglen))."""
    terms = tokens(text, lang)
    counts = Counter(terms)
    norm = K1 * (1 - B + B * len(terms) / AVG_DOC_TERMS)
    return _vector({t: tf * (K1 + 1) / (tf + norm) for t, tf in counts.items()})


def bm25_query(text: str, lang: str | None = None) -> models.SparseVector:
    """Weight 1 per unique query term; Qdrant multiplies by IDF at search time."""
    return _vector({t: 1.0 for t in tokens(text, lang)})


# --- fusion with the dense retriever ----------------------------------------------------------
# Candidates each retriever contributes to the fusion. Wider than top_k so that a passage
# ranked mid-list by both retrievers can win; small enough to stay fast.
PREFETCH_MIN = 30
# RRF constant and per-retriever weights (dense, sparse), chosen by 5-fold cross-validation
# over the dev questions (bench/cv_fusion.py: picked on the other folds in 4 of 5 folds and on
# the whole set; held-out-fold MRR 0.922, recall@5 1.0). Qdrant's own default k=2 rewards a
# passage that one retriever is sure about; the multilingual dense model is the stronger
# retriever here, so BM25 counts less (Qdrant applies a weight w as rank/w). k=20 and k=60
# (the textbook value) lose questions that only the dense retriever finds.
# A query holding an exact identifier (a figure, code, phone number or e-mail address: any
# digit or "@") gives BM25 full weight: that is what embeddings cannot represent, and the one
# chunk that contains "1-888-265-6461" must beat the dense retriever's vague favourite.
RRF_K = 2
RRF_WEIGHTS = (1.0, 0.4)
RRF_WEIGHTS_EXACT = (1.0, 1.0)
_EXACT_TERM = re.compile(r"\d|@")


def fusion(query: str) -> "models.RrfQuery":
    """The RRF parameters for `query` (see the constants above)."""
    weights = RRF_WEIGHTS_EXACT if _EXACT_TERM.search(query) else RRF_WEIGHTS
    return models.RrfQuery(rrf=models.Rrf(k=RRF_K, weights=list(weights)))
