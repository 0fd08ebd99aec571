"""The LLM-free pre-filter: rules and knowledge-base similarity decide the clear cases.

It runs before any model call, so greetings, facility searches, obvious off-topic
messages and questions that closely match the knowledge base never pay for the router
model. Without an LLM key it is the whole router. Deliberately biased towards answering:
a terse on-topic question ("PEIMS #s?") must never be refused, so a message is refused
only when it both looks unrelated (off-topic wording or low similarity to the documents)
and carries no word of the domain.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from agent.messages import ChatMessage

# --------------------------------------------------------------------------- vocabulary
# Words of the domain (child-care assistance in Texas), in the three languages of the
# knowledge base. A match means "never refuse without asking a model".
_DOMAIN = [
    r"child ?care", r"day ?care", r"pre-?k", r"pre-?school", r"nurser(y|ies)", r"kinder",
    r"\bccs\b", r"\btrs\d?\b", r"texas rising star", r"\bpso?c\b", r"share of cost", r"co-?pay",
    r"\bsmi\b", r"\bfpg\b", r"\bbcy ?\d*", r"\bffy ?\d*", r"\bccdf\b", r"\bccr\b", r"\bcacfp\b",
    r"\btwc\b", r"\bpdg\b", r"\bqris\b", r"\bpeims\b", r"\blccc\b", r"\bcda\b", r"t\.?e\.?a\.?c\.?h",
    r"workforce", r"board", r"eligib", r"subsid", r"waitlist", r"wait list", r"provider", r"parent",
    r"famil", r"\bfam\b", r"infant", r"toddler", r"preschool", r"school-age", r"teacher", r"caregiver",
    r"attendance", r"absence", r"enroll", r"licens", r"accredit", r"inspection", r"complaint",
    r"reimburse", r"payment", r"tuition", r"income", r"job search", r"disaster", r"drill",
    r"stakeholder", r"state plan", r"legislat", r"grant", r"scholarship", r"market rate", r"desk aid",
    r"probation", r"water safety", r"kinderconnect", r"tx3c", r"workintexas", r"relative",
    # Spanish
    r"cuidado", r"niñ[oa]s?", r"guarder[ií]a", r"proveedor", r"familia", r"copago", r"padres?\b",
    r"folleto", r"cerebro", r"oficina", r"elegib", r"ingreso",
    # Vietnamese
    r"trẻ", r"nhà trẻ", r"điểm danh", r"phụ huynh", r"gia đình", r"chăm sóc", r"hỗ trợ", r"tổng đài",
]
_DOMAIN_RE = re.compile("|".join(_DOMAIN), re.IGNORECASE)

# Topics staff ask a chatbot about that the documents never cover.
_OFFTOPIC = [
    r"\bweather\b", r"\bforecast\b", r"\bfreez(e|ing)\b", r"\bsnow\b", r"\brain(ing)?\b", r"\btemperature\b",
    r"\bwho won\b", r"\bscore of\b", r"\bshowdown\b", r"\bfootball\b", r"\bbaseball\b", r"\bbasketball\b",
    r"\bsuper ?bowl\b", r"\bnfl\b", r"\bnba\b", r"\bplayoffs?\b",
    r"\bregex\b", r"\bjavascript\b", r"\bpython\b", r"\btypescript\b", r"\bsql query\b", r"\bcss\b",
    r"\bhtml\b", r"\bstack ?trace\b", r"\bcompile\b",
    r"\btallest\b", r"\bcapital of\b", r"\bpopulation of\b", r"\bwho invented\b", r"\btrivia\b",
    r"\bdeals?\b", r"\bdiscount\b", r"\bcoupon\b", r"\bstanding desk\b", r"\bamazon\b", r"\bbest price\b",
    r"\bjokes?\b", r"\bpoem\b", r"\briddle\b", r"\blyrics\b", r"\bmovie\b", r"\bnetflix\b",
    r"\brecipe\b", r"\bbake\b", r"\brestaurant\b", r"\bpizza\b", r"\bstock price\b", r"\bbitcoin\b",
    r"\bhoroscope\b", r"\blottery\b",
]
_OFFTOPIC_RE = re.compile("|".join(_OFFTOPIC), re.IGNORECASE)

_GREETING_RE = re.compile(
    r"^(hi|hello|hey|hiya|howdy|yo|good (morning|afternoon|evening)|thanks?( you)?( so much)?|thank you|thx|ty|"
    r"hola|buen[oa]s (d[ií]as|tardes|noches)|gracias|xin ch[aà]o|ch[aà]o|c[aả]m [oơ]n|"
    r"what can you do|who are you|what are you|help|ok(ay)?|cool|great|bye|goodbye)"
    r"( (there|all|team|askdesk|bot|again|everyone))?[\s!.?,:)]*$",
    re.IGNORECASE,
)

# Facility search: a kind of care or facility, plus a place / distance / capacity / hours.
_FACILITY_NOUN_RE = re.compile(
    r"\b(cent(er|re)s?|day ?cares?|facilit(y|ies)|providers?|programs?|preschools?|nurser(y|ies)|"
    r"(infant|baby|toddler|drop-?in|part-?time|full-?time|after-?school|school-?age|night|weekend|"
    r"special needs)( child)? care|toddlers|infants|babies)\b",
    re.IGNORECASE,
)
_PLACE_RE = re.compile(
    r"(\b\d{5}\b|\bwithin \d+(\.\d+)? ?(mi|miles?|km)\b|\bnear (me|\w+)|\b[A-Z][a-z]+ (county|co\.)\b|"
    r"\bin [A-Z][a-z]+(?: [A-Z][a-z]+)*\b|\b\d+\+? (kids|children|slots|capacity)\b|\bopen (by|until|till|at) \d)",
)
_KNOWLEDGE_MARKERS_RE = re.compile(
    r"(\$|%|\brates?\b|\bbcy|\bpso?c\b|\bboard\b|\bpolicy\b|\brules?\b|\beligib|\bincome\b|\bpayment|"
    r"\bhow (many|much|often|long)\b|\bwhat (is|are|does)\b|\bwhy\b)",
    re.IGNORECASE,
)

# Follow-ups that only make sense with the thread.
_FOLLOWUP_START_RE = re.compile(
    r"^\s*(and|also|plus|but|or|what about|how about|same for|what if|then|y|¿y|e|và|còn|thế còn|qu[eé] tal)\b",
    re.IGNORECASE,
)
_FOLLOWUP_LEAD_RE = re.compile(
    r"^\s*(and|also|plus|but|or|what about|how about|same for|what if|then|y|¿y|và|còn|thế còn)\b[\s,]*(for|the|a|an)?\s*",
    re.IGNORECASE,
)
_ANAPHORA_RE = re.compile(r"\b(that|this|those|these|it|they|them|the same|the year before|the one)\b", re.IGNORECASE)


def normalize(text: str) -> str:
    return unicodedata.normalize("NFC", " ".join(text.split()))


def is_greeting(text: str) -> bool:
    return bool(_GREETING_RE.match(normalize(text)))


def has_domain_words(text: str) -> bool:
    return bool(_DOMAIN_RE.search(text))


def has_offtopic_words(text: str) -> bool:
    return bool(_OFFTOPIC_RE.search(text))


def looks_like_facility_search(text: str) -> bool:
    """"infant care in San Antonio", "centers within 10 miles of 78702", "drop-in care, 150+ kids"."""
    text = normalize(text)
    if not _FACILITY_NOUN_RE.search(text) or not _PLACE_RE.search(text):
        return False
    return not _KNOWLEDGE_MARKERS_RE.search(text)


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


def heuristic_rewrite(text: str, history: list[ChatMessage]) -> str:
    """Self-contained query without a model: the thread's last standalone question + the new details.

    Hybrid search copes well with the concatenation: BM25 and the embedding both keep the
    topic words of the earlier question while the new details (a family size, a date, "two-parent")
    pull the ranking towards the right passage."""
    previous = previous_user_messages(history)
    if not previous:
        return text
    anchor = previous[-1]
    for candidate in reversed(previous):  # skip earlier follow-ups: find the question they lean on
        anchor = candidate
        if not _FOLLOWUP_START_RE.match(normalize(candidate)):
            break
    detail = _FOLLOWUP_LEAD_RE.sub("", normalize(text)).strip() or normalize(text)
    anchor = normalize(anchor)
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
    """`route` None means undecided: ask the router model (or default to knowledge without one)."""

    route: str | None
    reason: str
    followup: bool = False


def classify_rules(text: str, history: list[ChatMessage]) -> PrefilterVerdict:
    """Everything the pre-filter can say before looking at the knowledge base."""
    text = normalize(text)
    followup = is_followup(text, history)
    if is_greeting(text):
        return PrefilterVerdict("smalltalk", "greeting")
    if looks_like_facility_search(text):
        return PrefilterVerdict("facility", "facility words + place", followup)
    if has_offtopic_words(text) and not has_domain_words(text) and not followup:
        return PrefilterVerdict("offtopic", "off-topic words, no domain words")
    return PrefilterVerdict(None, "needs similarity", followup)


def classify_similarity(text: str, best_score: float | None, *, refuse_below: float, accept_above: float) -> PrefilterVerdict:
    """Decide with the best dense similarity of the message to the knowledge base."""
    domain = has_domain_words(text)
    if best_score is None:  # empty knowledge base / store down: cannot judge, do not refuse
        return PrefilterVerdict(None, "no similarity available")
    if best_score < refuse_below and not domain:
        return PrefilterVerdict("offtopic", f"similarity {best_score:.3f} < {refuse_below}, no domain words")
    if best_score >= accept_above or domain:
        return PrefilterVerdict("knowledge", f"similarity {best_score:.3f}" + (", domain words" if domain else ""))
    return PrefilterVerdict(None, f"similarity {best_score:.3f} in the grey zone")
