"""What the wording of a message says, before any search or model call.

Greetings, follow-ups ("and for a family of 6?"), words that point back at the thread, a
registry search recognised by its words (each registry capability `claims` its own), and the
message rewritten with its thread for a search. No word of any domain lives here: these are
patterns of how people write, in English, Spanish and Vietnamese; whether a message is
on-topic is decided by meaning (agent/understanding/gate.py), with the similarity verdict at
the end of this module. Deliberately biased towards answering: a terse on-topic question
("PEIMS #s?") must never be refused.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from collections.abc import Iterable
from typing import TYPE_CHECKING

from agent.accents import Cue, fold
from agent.asking import folded, load_asking
from agent.messages import ChatMessage
from agent.understanding.route import Greet, Use

if TYPE_CHECKING:
    from agent.capabilities.base import Capability

# No domain words here: the knowledge base's own vocabulary and the deployment's domain file
# (agent/understanding/domain.py) supply them; these patterns are about how people write, in any domain.

_GREETING_RE = re.compile(
    r"^(hi|hello|hey|hiya|howdy|yo|good (morning|afternoon|evening)|thanks?( you)?( so much)?|thank you|thx|ty|"
    r"hola|buen[oa]s (d[ií]as|tardes|noches)|gracias|xin ch[aà]o|ch[aà]o|c[aả]m [oơ]n|"
    r"what can you do|who are you|what are you|help|ok(ay)?|cool|great|bye|goodbye)"
    r"( (there|all|team|askdesk|bot|again|everyone))?[\s!.?,:)]*$",
    re.IGNORECASE,
)

# Asking about amounts, rules, reasons or procedures: a question for the documents, even with a
# place in it; asking where to find something: a search (agent/data/asking.yaml, en/es/vi;
# matched on lower-cased, accent-folded text). A registry's requests for its records by their
# noun are its `records_cue` (agent/registry/cue.py).
_RULES_RE = load_asking().rules_re()
_MODAL_RE = load_asking().modal_re()
_WHERE_RE = load_asking().records_re()

# Follow-ups that only make sense with the thread.
_FOLLOWUP_START_RE = re.compile(
    r"^\s*(and|also|plus|but|or|what about|how about|same for|what if|then|y|¿y|e|và|còn|thế còn|qu[eé] tal)\b",
    re.IGNORECASE,
)
# The lead words of a follow-up, dropped from the detail ("and for a family of 6?" -> "family of 6?").
# Whole words only: "What if their income…" keeps "their", "And another child?" keeps "another".
_FOLLOWUP_LEAD_RE = re.compile(
    r"^\s*(and|also|plus|but|or|what about|how about|same for|what if|then|y|¿y|và|còn|thế còn)\b[\s,]*"
    r"(?:(?:for|the|a|an)\b)?\s*",
    re.IGNORECASE,
)
# Words that point back at something said before ("that limit", "esas personas", "họ").
_ANAPHORA_RE = re.compile(
    r"\b(that|this|those|these|it|they|them|the same|the year before|the one"
    r"|eso|esa|ese|esos|esas|esto|ellos|ellas|lo mismo"
    r"|đó|đấy|này|họ)\b",
    re.IGNORECASE,
)


def normalize(text: str) -> str:
    return unicodedata.normalize("NFC", " ".join(text.split()))


def is_greeting(text: str) -> bool:
    return bool(_GREETING_RE.match(normalize(text)))


def asks_about_rules(text: str, *, modal: bool = True) -> bool:
    """"how much does TWC pay a daycare in Houston?", "do people at the Chicago office get
    reimbursed for parking?": amounts, rules, reasons or procedures are for the documents even
    when the message names a place and a registry's records. `modal`: "can a daycare…?" counts
    too (it does not against a request for records: "which daycares can take a baby?")."""
    text = folded(text)
    return bool(_RULES_RE.search(text) or modal and _MODAL_RE is not None and _MODAL_RE.search(text))


def asks_where(text: str) -> bool:
    """"where can I find…", "¿dónde hay…?", "ở đâu": it asks where to find something."""
    return _WHERE_RE is not None and bool(_WHERE_RE.search(folded(text)))


def asks_for_records(text: str, capability: "Capability") -> bool:
    """"which offices have a cafeteria?", "¿qué guarderías…?", "văn phòng nào…": a request for
    `capability`'s records by their noun (its `records_cue`; none for the documents)."""
    records: Cue | None = getattr(capability, "records_cue", None)
    return records is not None and records(normalize(text))


def requested(text: str, capabilities: Iterable["Capability"]) -> "Capability | None":
    """The capability whose records `text` asks for by their noun, if any."""
    return next((c for c in capabilities if asks_for_records(text, c)), None)


def claimed_by(text: str, capabilities: Iterable["Capability"]) -> "Capability | None":
    """The registry whose search the wording alone makes `text`: a request for its records
    ("which clinics have Vietnamese speakers?"), or its claim rule ("infant care in San
    Antonio"); never a question about amounts, rules or procedures ("which providers are
    eligible for…?") unless it asks where to find something ("where can I find infant care…")."""
    text = normalize(text)
    where = asks_where(text)
    if not where and asks_about_rules(text, modal=False):
        return None
    capabilities = list(capabilities)
    if (asked := requested(text, capabilities)) is not None:
        return asked
    for capability in capabilities:
        # a capability's cue (agent.accents.Cue), when it has one, is a quick necessary condition
        # of its claim: a message without it is not asked about (a registry's parser never runs)
        cue: Cue | None = getattr(capability, "cue", None)
        if (cue is None or cue(text)) and capability.claims(text):
            return capability if where or not asks_about_rules(text) else None
    return None


def refers_back(text: str) -> bool:
    """"can the center start that process themselves?": it points at something said before."""
    return bool(_ANAPHORA_RE.search(normalize(text)))


def starts_like_followup(text: str) -> bool:
    """"and for 5 people?", "what about…": it continues something, even where the thread is unknown."""
    return bool(_FOLLOWUP_START_RE.match(normalize(text)))


def previous_user_messages(history: list[ChatMessage]) -> list[str]:
    return [m.content for m in history if m.role == "user" and m.content.strip()]


def is_followup(text: str, history: list[ChatMessage]) -> bool:
    """A message that leans on the thread: starts with "and"/"what about", or is short and anaphoric."""
    if not previous_user_messages(history):
        return False
    text = normalize(text)
    if _FOLLOWUP_START_RE.match(text):
        return True
    words = text.split()
    return len(words) <= 6 and bool(_ANAPHORA_RE.search(text))


# A message of this many words of its own or fewer ("who runs it?", "and two-star ones?") says
# too little to search alone or to be the question later follow-ups lean on.
SHORT_TERMS = 3
# A message of this many words of its own or more says as much as a full question: in a thread it
# is judged, and routed, as if sent alone (agent/understanding/classify.py).
STANDALONE_TERMS = 6


def own_terms(text: str) -> int:
    """How many distinct index words the message has, each word alone and once: stopwords out,
    stems in, not the joined forms of adjacent words BM25 also indexes ("two-star" is two words,
    not three), nor a word's accent-free spelling ("bệnh" is one word, not "bệnh" and "benh")."""
    from agent.knowledge.sparse import detect_language, tokens

    lang = detect_language(text)
    words = (tokens(word, lang) for word in re.split(r"[\s\-/]+", text) if word)
    return len({fold(terms[0]) for terms in words if terms})


def thread_anchor(history: list[ChatMessage]) -> str | None:
    """The question the thread's follow-ups lean on: its last user message that is neither a
    follow-up itself ("and for teens?") nor too short to stand alone ("who runs it?"); the
    last user message when all are (None: no thread)."""
    previous = previous_user_messages(history)
    if not previous:
        return None
    anchor = previous[-1]
    for candidate in reversed(previous):
        anchor = candidate
        if not _FOLLOWUP_START_RE.match(normalize(candidate)) and own_terms(candidate) > SHORT_TERMS:
            break
    return normalize(anchor)


def followup_detail(text: str) -> str:
    """What a follow-up adds, its lead words dropped ("and for a family of 6?" -> "family of 6?")."""
    return _FOLLOWUP_LEAD_RE.sub("", normalize(text)).strip() or normalize(text)


def leans_on_thread(text: str, history: list[ChatMessage], claimed: bool) -> bool:
    """"and in Austin?", "y con transporte?", "any in Plano?": a short message that says what it
    asks only with its thread, so it is routed with the thread's subject. A follow-up by its
    wording with fewer than STANDALONE_TERMS words of its own, or a message of SHORT_TERMS words
    or fewer that is no search by itself (`claimed`: a registry's wording claims it alone) or
    that points back ("which providers are left out of it?")."""
    if not previous_user_messages(history):
        return False
    if is_followup(text, history):
        return own_terms(text) < STANDALONE_TERMS
    return (not claimed or refers_back(text)) and own_terms(text) <= SHORT_TERMS


def heuristic_rewrite(text: str, history: list[ChatMessage]) -> str:
    """Self-contained query without a model: the thread's last standalone question + the new details.

    Hybrid search copes well with the concatenation: BM25 and the embedding both keep the
    topic words of the earlier question while the new details (a family size, a date, "two-parent")
    pull the ranking towards the right passage."""
    anchor = thread_anchor(history)
    if anchor is None:
        return text
    detail = followup_detail(text)
    shift = _year_shift(detail)
    if shift:
        # "and the year before?": move the thread's years instead of leaving the arithmetic to search
        anchor = _YEAR_IN_TEXT_RE.sub(lambda m: str(int(m.group(0)) + shift), anchor)
        detail = _YEAR_AFTER_RE.sub("", _YEAR_BEFORE_RE.sub("", detail)).strip(" ?.!,")
    if re.search(r"\d", detail):
        # The follow-up brings its own figures (a family size, an amount, dates): drop the
        # earlier ones so they do not outvote the new details; years stay (they set the context).
        anchor = _FIGURE_RE.sub(lambda m: m.group(0) if _YEAR_RE.fullmatch(m.group(0)) else "", anchor)
        anchor = " ".join(anchor.split())
    return f"{anchor} {detail}".strip()


_YEAR_IN_TEXT_RE = re.compile(r"(?<!\d)(19|20)\d\d(?!\d)")
_YEAR_BEFORE_RE = re.compile(r"\b(the )?(year|fiscal year|fy) before\b|\b(previous|prior|preceding|last) (fiscal )?year\b", re.IGNORECASE)
_YEAR_AFTER_RE = re.compile(r"\b(the )?(year|fiscal year|fy) after\b|\b(next|following) (fiscal )?year\b", re.IGNORECASE)


def _year_shift(detail: str) -> int:
    if _YEAR_BEFORE_RE.search(detail):
        return -1
    if _YEAR_AFTER_RE.search(detail):
        return 1
    return 0


_FIGURE_RE = re.compile(r"(?<![\w$])\$?\d[\d,.:/-]*%?(?![\w])")
_YEAR_RE = re.compile(r"(19|20)\d\d")


@dataclass(frozen=True)
class PrefilterVerdict:
    """`route` None means undecided: the message's meaning decides (agent/understanding/classify.py)."""

    route: Greet | Use | None
    reason: str
    followup: bool = False


def classify_rules(text: str, history: list[ChatMessage], capabilities: Iterable["Capability"] = ()) -> PrefilterVerdict:
    """Everything the pre-filter can say from the wording alone (greetings, registry searches);
    whether a message is on-topic is decided by meaning (agent/understanding/gate.py)."""
    text = normalize(text)
    followup = is_followup(text, history)
    if is_greeting(text):
        return PrefilterVerdict(Greet(decided_by="prefilter", reason="greeting"), "greeting")
    claimed = claimed_by(text, capabilities)
    if claimed is not None:
        anchor = "place" if claimed.anchored(text) else "criteria"
        reason = f"{claimed.name} words + {anchor}"
        return PrefilterVerdict(Use(claimed, text, decided_by="prefilter", reason=reason), reason, followup)
    return PrefilterVerdict(None, "needs similarity", followup)
