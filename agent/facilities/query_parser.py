"""`/facility` text -> `FacilitySearchArgs`, deterministically (no model call).

Each recogniser takes its words out of the text, in an order that keeps overlapping
phrases apart ("after-school" before "school-age", "pre-k program" before "pre-k",
"Dallas County" before the city "Dallas"; days of the week before times, so "open
weekends until 7pm" keeps its time). "sat"/"sun" count as days only after "open"/"on" or
as "sat/sun", and not when a name-like word follows ("on Sun Valley Dr"). Places are
matched against the registry's own city and county names (case-insensitive, fuzzy for
typos), their nicknames from the domain file ("SA", "H-town": data, not code) and the
state's gazetteer; "downtown X" is X, and a zip code or coordinates win over words the parser
cannot place. A place that matches nothing is passed on as written so the search can answer
"I don't know where X is — did you mean …?". Words left over become the free-text query,
minus filler ("care", "centers", "in", "w/"); the search ranks by them and never excludes by
them when other criteria are given.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from agent.facilities.geocode import KnownPlaces, state_index
from agent.facilities.registry import norm_key, title_case
from agent.facilities.schema import FacilitySearchArgs
from agent.facilities.words import shipped_words

SEP = " | "  # what a recognised phrase leaves behind: stops phrases from joining across it
FUZZY_CUTOFF = 0.8  # Damerau-Levenshtein similarity: one typo (swap, drop, extra) per five letters

_WORDS = shipped_words()  # the schema's ages and services in words of several languages (data)
_FEATURES = _WORDS.feature_patterns()
_NEGATION = _WORDS.negation_re()
_AGES = _WORDS.age_patterns()

_WEEK = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_DAY_FULL = r"(?P<{g}>mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|satur|sun)(?:day)s?"  # "tuesdays", "thursday"
_DAY_ABBR = r"(?P<{g}>mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?"
_DAY_SPAN_END = r"(?P<{g}>mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?s?\.?"  # "mon-fri", "monday to friday"
_DAY_ANY = r"(?:" + _DAY_FULL.replace("(?P<{g}>", "(?:") + "|" + _DAY_ABBR.replace("(?P<{g}>", "(?:") + ")"
_OPEN_ON = r"(?:(?:(?:open(?:s|ed)?|available)\s+)?(?:on\s+|every\s+)?)"

_FILLER = _WORDS.filler_words()
_STOP_WORDS_AFTER_PLACE = frozenset(
    "with w that who which for and or open opens opening within near around offering offer offers having "
    "has have serving serves accepting".split()
)


@dataclass
class ParsedQuery:
    args: FacilitySearchArgs
    notes: list[str] = field(default_factory=list)  # e.g. "'san antono' read as San Antonio"
    leftover: str = ""


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("’", "'").replace("“", '"').replace("”", '"')
    text = re.sub(r"\bw/o\b", " without ", text)
    text = re.sub(r"\bw/\s*", " with ", text)
    text = text.replace("&", " and ")
    return text


def _word_re(phrase: str) -> str:
    return r"(?<![\w-])(?:" + phrase + r")(?![\w-])"


_CRITERIA_RE = re.compile(
    "|".join(_word_re(pattern) for pattern, _ in _FEATURES + _AGES), re.IGNORECASE
)


def mentions_facility_criteria(text: str) -> bool:
    """Does `text` name an age group or a service of the registry's schema ("infant care",
    "after-school", "drop-in")? The router's facility check uses it, with a place."""
    return bool(_CRITERIA_RE.search(_normalise(text)))


@dataclass
class _State:
    text: str
    values: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def take(self, pattern: str, handle, flags: int = 0) -> None:
        def repl(m: re.Match) -> str:
            out = handle(m)
            if isinstance(out, str):
                return out  # the handler kept part of the match
            return SEP if out is not False else m.group(0)

        self.text = re.sub(pattern, repl, self.text, flags=flags)


class _Places:
    """Place names the parser can recognise: the registry's (and their nicknames from the domain
    file), then the state's."""

    def __init__(self, places: KnownPlaces, state: str | None, aliases: dict[str, str] | None = None) -> None:
        self.places = places
        self.registry_cities = set(places.cities)
        self.registry_counties = set(places.counties)
        idx = state_index(state) if state else None
        self.state_cities = set(idx.cities) if idx else set()
        self.state_counties = set(idx.counties) if idx else set()
        self.aliases = {norm_key(a): norm_key(t) for a, t in (aliases or {}).items() if norm_key(a) and norm_key(t)}

    def exact(self, key: str) -> tuple[str, str] | None:
        """('city'|'county', key) for an exact name or nickname, registry first."""
        key = self.aliases.get(key, key)
        if key in self.registry_cities:
            return "city", key
        if key in self.registry_counties:
            return "county", key
        if key in self.state_cities:
            return "city", key
        if key in self.state_counties:
            return "county", key
        return None

    def fuzzy(self, key: str) -> tuple[str, str] | None:
        if len(key) < 4:
            return None
        best: tuple[float, str, str] | None = None
        for kind, pool in (("city", self.registry_cities), ("county", self.registry_counties)):
            hit = process.extractOne(
                key, list(pool), scorer=DamerauLevenshtein.normalized_similarity, score_cutoff=FUZZY_CUTOFF
            )
            if hit and (best is None or hit[1] > best[0]):
                best = (hit[1], kind, hit[0])
        return (best[1], best[2]) if best else None


def _place_words(phrase: str) -> list[str]:
    """Words of a place phrase, up to the first word that starts another clause."""
    words: list[str] = []
    for word in re.findall(r"[a-z0-9][a-z0-9.'-]*", phrase):
        if word in _STOP_WORDS_AFTER_PLACE:
            break
        words.append(word)
    return words


def _match_place(words: list[str], known: _Places) -> tuple[str, str, int, bool] | None:
    """Longest leading run of `words` naming a place: (kind, key, words used, fuzzy?)."""
    for n in range(min(len(words), 4), 0, -1):
        key = norm_key(" ".join(words[:n]))
        hit = known.exact(key)
        if hit:
            return hit[0], hit[1], n, False
    for n in range(min(len(words), 4), 0, -1):
        key = norm_key(" ".join(words[:n]))
        hit = known.fuzzy(key)
        if hit:
            return hit[0], hit[1], n, True
    return None


def _display(known: _Places, kind: str, key: str) -> str:
    if kind == "city":
        return known.places.cities[key].name if key in known.places.cities else title_case(key)
    return known.places.counties[key].name if key in known.places.counties else title_case(key) + " County"


def _known_place(rest: str, words: list[str], known, notes: list[str]) -> tuple[str, str, int] | None:
    """(kind, display name, characters of `rest` used) when `words` start with a known place;
    a fuzzy read is noted so the reply can say how the text was understood."""
    hit = _match_place(words, known)
    if not hit:
        return None
    kind, key, n, fuzzy = hit
    name = _display(known, kind, key)
    if fuzzy:
        notes.append(f"read '{' '.join(words[:n])}' as {name}")
    return kind, name, _span_of_words(rest, n)


def _to_hhmm(hour: int, minute: int, half: str | None) -> str | None:
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    return f"{hour:02d}:{minute:02d}"


def parse_facility_query_explained(text: str, places: KnownPlaces, *, state: str | None = "TX",
                                  aliases: dict[str, str] | None = None) -> ParsedQuery:
    st = _State(_normalise(text or ""))
    v = st.values
    known = _Places(places, state, aliases)
    # "downtown Austin" is Austin (the zip code, when one is given, says where exactly)
    st.text = re.sub(r"(?<![\w-])(?:downtown|uptown|midtown|central)(?![\w-])", " ", st.text)

    # quoted text is a name, verbatim
    quoted: list[str] = []
    st.take(r'"([^"]+)"', lambda m: quoted.append(m.group(1).strip()))

    # result count
    def _limit(m: re.Match) -> None:
        v["limit"] = int(m.group("n")) if m.group("n") else 0

    st.take(r"\b(?:top|first)\s+(?P<n>\d{1,3})\b", _limit)
    st.take(r"\b(?:give\s+me|show(?:\s+me)?|list|find(?:\s+me)?)\s+(?P<n>\d{1,3})\b(?!\s*(?:\+|mi|km|miles?|years?|months?))",
            _limit)
    st.take(r"\b(?P<n>\d{1,3})\s+(?=(?:centers|facilities|places|options|results|daycares|providers)\b)", _limit)
    st.take(r"\b(?:(?:show|list|find|give\s+me)\s+)?(?:all|every|everything)(?:\s+of\s+them)?\b(?P<n>)", _limit)

    # lat,lon
    def _latlon(m: re.Match) -> None:
        v["near"] = f"{m.group(1)},{m.group(2)}"

    st.take(r"(-?\d{1,2}\.\d+)\s*,\s*(-?\d{1,3}\.\d+)", _latlon)

    # days of the week: "weekend care", "open saturdays", "mon-fri", "open on sat/sun"
    days: set[str] = set()

    def _day(word: str) -> str:
        return _WEEK[[d.lower() for d in _WEEK].index(word[:3])]

    def _rest(m: re.Match) -> str | None:
        """Keep 'open' when a time follows, so "open weekends until 7pm" still reads the time."""
        if m.group(0).startswith("open") and re.match(
            r"\s+(?:until|till|til|to|past|after|at|by|before|from)\s+\d", m.string[m.end():]
        ):
            return "open"
        return None

    def _span(m: re.Match) -> str | None:
        i, j = _WEEK.index(_day(m.group("a"))), _WEEK.index(_day(m.group("b")))
        days.update(_WEEK[i : j + 1] if i <= j else _WEEK[i:] + _WEEK[: j + 1])
        return _rest(m)

    def _abbr(m: re.Match) -> str | bool | None:
        # "sun"/"sat" alone is a day only when nothing name-like follows ("on Sun Valley Dr" is a street)
        nxt = re.match(r"[\s|,;.!?]*([a-z0-9]*)", m.string[m.end():]).group(1)
        if nxt and nxt not in _FILLER and nxt not in _STOP_WORDS_AFTER_PLACE and not re.fullmatch(_DAY_ANY, nxt):
            return False
        days.update(_day(w) for w in re.findall(r"[a-z]+", m.group("list")) if w not in ("and", "on", "open"))
        return _rest(m)

    st.take(_word_re(_OPEN_ON + r"(?:week[\s-]?ends?|sat(?:urday)?s?\s*(?:/|and|&|-)\s*sun(?:day)?s?)"),
            lambda m: days.update(("Sat", "Sun")) or _rest(m))
    st.take(_word_re(_OPEN_ON + r"(?:week[\s-]?days?|m\s*-\s*f)"),
            lambda m: days.update(_WEEK[:5]) or _rest(m))
    st.take(_word_re(_OPEN_ON + _DAY_SPAN_END.format(g="a") + r"\s*(?:-|–|to|thru|through)\s*"
                     + _DAY_SPAN_END.format(g="b")), _span)
    st.take(_word_re(_OPEN_ON + _DAY_FULL.format(g="d")), lambda m: days.add(_day(m.group("d"))) or _rest(m))
    st.take(r"(?<![\w-])(?:open(?:s|ed)?\s+(?:on\s+)?|on\s+)(?P<list>" + _DAY_ABBR.format(g="d")
            + r"(?:\s*(?:/|,|and|&)\s*" + _DAY_ABBR.format(g="e") + r")*)(?![\w-])", _abbr)
    if days:
        v["days"] = [d for d in _WEEK if d in days]

    # opening time: "open at 6:30", "open by 6:30am", "opens before 7"
    def _open(m: re.Match) -> bool | None:
        hhmm = _to_hhmm(int(m.group("h")), int(m.group("m") or 0), m.group("half"))
        if hhmm is None:
            return False
        v["open_at"] = hhmm
        return None

    def _until(m: re.Match) -> bool | None:
        hour, half = int(m.group("h")), m.group("half")
        if not half and 1 <= hour <= 11:
            half = "pm"  # "open until 6:30" means the evening
        hhmm = _to_hhmm(hour, int(m.group("m") or 0), half)
        if hhmm is None:
            return False
        v["open_until"] = hhmm
        return None

    st.take(
        r"\b(?:(?:open(?:s|ing)?|stay(?:s|ing)?\s+open)\s+(?:until|till|til|to|past|after)|clos(?:es|ing)\s+(?:at|after)"
        r"|pick[\s-]?up\s+(?:until|by|at))\s+(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<half>a\.?m\.?|p\.?m\.?)?(?![\w:])",
        _until,
    )
    st.take(
        r"\b(?:open(?:s|ing)?|drop[\s-]?off)\s+(?:at|by|before|from|no\s+later\s+than)?\s*"
        r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<half>a\.?m\.?|p\.?m\.?)?(?![\w:])",
        _open,
    )

    # capacity: "150+ kids", "capacity 150", "at least 150 children", "over 100 kids"
    def _cap(m: re.Match, bump: int = 0) -> None:
        v["min_capacity"] = int(m.group("n")) + bump

    st.take(r"(?P<n>\d{1,5})\s*\+\s*(?:kids|children|child|spots|seats|slots|capacity)?", _cap)
    st.take(r"\b(?:capacity|licensed\s+for|room\s+for|holds?|serves?)\s*(?:of\s+)?(?:at\s+least\s+|>=?\s*)?(?P<n>\d{1,5})\b"
            r"(?:\s*(?:kids|children|spots|seats|slots))?", _cap)
    st.take(r"\b(?:at\s+least|min(?:imum)?)\s+(?P<n>\d{1,5})\s*(?:kids|children|spots|seats|slots|capacity)\b", _cap)
    st.take(r"\b(?P<n>\d{1,5})\s+or\s+more\s*(?:kids|children|spots|seats|slots)?", _cap)
    st.take(r"\b(?:over|more\s+than)\s+(?P<n>\d{1,5})\s*(?:kids|children|spots|seats|slots)\b", lambda m: _cap(m, 1))

    # radius + place: "within 10 miles of X", "10 mi from X", "within 5 km of X"
    def _radius(m: re.Match) -> None:
        miles = float(m.group("r"))
        if m.group("unit").startswith("k"):
            miles = round(miles / 1.609344, 2)
        v["radius_miles"] = miles
        v["_near_pending"] = True

    st.take(
        r"\b(?:within|in\s+a|under|less\s+than)?\s*(?P<r>\d{1,3}(?:\.\d+)?)\s*[- ]?(?P<unit>miles?|mi|kilometers?|km)\b"
        r"(?:\s+(?:radius\s+)?(?:of|from|around|near))?",
        _radius,
    )

    # features (before ages: "after-school" contains "school", "pre-k program" contains "pre-k")
    for pattern, flag in _FEATURES:
        def _feature(m: re.Match, flag: str = flag) -> None:
            v[flag] = not m.group("neg")

        st.take(_word_re(_NEGATION + "(?:" + pattern + ")"), _feature)

    # ages
    ages: list[str] = []

    def _age_from_number(m: re.Match) -> None:
        months = int(m.group("n")) * (1 if m.group("unit").startswith("mo") else 12)
        age = "infant" if months < 18 else "toddler" if months < 36 else "pre-k" if months < 60 else "school"
        if age not in ages:
            ages.append(age)
        st.notes.append(f"read '{m.group(0).strip()}' as {age}")

    st.take(r"\b(?P<n>\d{1,2})[\s-]*(?P<unit>years?|yrs?|months?|mos?)[\s-]*olds?\b", _age_from_number)
    for pattern, age in _AGES:
        st.take(_word_re(pattern), lambda m, age=age: ages.append(age) if age not in ages else None)
    if ages:
        v["ages"] = [a for a in ("infant", "toddler", "pre-k", "school") if a in ages]

    # near X (after a radius phrase the place follows directly)
    def _near_target(rest: str) -> tuple[str | None, int]:
        """(place text, characters used) for the phrase starting at `rest`."""
        m = re.match(r"\s*(\d{5})(?:-\d{4})?\b", rest)
        if m:
            return m.group(1), m.end()
        m = re.match(r"\s*([^|,;?!]*)", rest)
        phrase = m.group(1) if m else ""
        z = re.search(r"(?<![\d.-])(\d{5})(?:-\d{4})?(?![\d.])", phrase)
        if z:
            return z.group(1), m.start(1) + z.end()  # a zip code is more precise than the words before it
        words = _place_words(phrase)
        if not words:
            return None, 0
        place = _known_place(rest, words, known, st.notes)
        if place:
            _, name, used = place
            return name, used
        trimmed = [w for w in words if w not in _FILLER]
        if not trimmed:
            return None, 0
        return " ".join(words), _span_of_words(rest, len(words))

    def _take_near(marker: str) -> None:
        while True:
            m = re.search(marker, st.text)
            if not m:
                return
            place, used = _near_target(st.text[m.end():])
            if place is None:
                st.text = st.text[: m.start()] + SEP + st.text[m.end():]
                continue
            v.setdefault("near", place)
            st.text = st.text[: m.start()] + SEP + st.text[m.end() + used:]

    if v.pop("_near_pending", False):
        # the radius phrase left a SEP where it was; the place follows it
        idx = st.text.find(SEP)
        while idx != -1 and "near" not in v:
            place, used = _near_target(st.text[idx + len(SEP):])
            if place:
                v["near"] = place
                st.text = st.text[:idx] + SEP + st.text[idx + len(SEP) + used:]
                break
            idx = st.text.find(SEP, idx + 1)
    _take_near(r"\b(?:near(?:by)?|around|close\s+to|closest\s+to|next\s+to|by)\s+")

    # "X county"
    def _county(m: re.Match) -> str | bool:
        words = re.findall(r"[a-z][a-z.'-]*", m.group("before"))

        def keep(n: int) -> str:  # words before the county name stay in the text
            return " ".join(words[: len(words) - n]) + SEP

        for n in range(min(len(words), 3), 0, -1):
            key = norm_key(" ".join(words[-n:]))
            if key in known.registry_counties or key in known.state_counties:
                v.setdefault("county", _display(known, "county", key))
                return keep(n)
        for n in range(min(len(words), 3), 0, -1):
            if any(w in _FILLER for w in words[-n:]):
                continue
            key = norm_key(" ".join(words[-n:]))
            hit = known.fuzzy(key)
            if hit and hit[0] == "county":
                name = _display(known, "county", hit[1])
                v.setdefault("county", name)
                st.notes.append(f"read '{key} county' as {name}")
                return keep(n)
        # an unknown county name: pass it on as written so the search can suggest
        n = 0
        while n < min(len(words), 2) and words[-(n + 1)] not in _FILLER:
            n += 1
        if n:
            v.setdefault("county", " ".join(words[-n:]) + " county")
            return keep(n)
        return False

    st.take(r"(?P<before>(?:[a-z][a-z.'-]*\s+){0,2}[a-z][a-z.'-]*)\s+county\b", _county)

    # zip codes
    st.take(r"(?<![\d.-])(\d{5})(?:-\d{4})?(?![\d.])", lambda m: v.setdefault("zip", m.group(1)) and None)

    # "in X" / "at X": a place phrase
    text = st.text
    out = []
    pos = 0
    for m in re.finditer(r"\b(?:in|at|from)\s+", text):
        if m.start() < pos:
            continue
        rest = text[m.end():]
        phrase = re.match(r"[^|,;?!]*", rest).group(0)
        words = _place_words(phrase)
        if not words:
            continue
        place = _known_place(rest, words, known, st.notes)
        if place:
            kind, name, used = place
            v.setdefault(kind, name)
        else:
            content = [w for w in words if w not in _FILLER]
            if not content or any(ch.isdigit() for w in content for ch in w):
                continue
            if "zip" in v or "near" in v:
                continue  # a zip code or coordinates say where: unknown words do not
            # an unknown place: hand it on as written, the search answers with suggestions
            v.setdefault("city", title_case(" ".join(words)))
            used = _span_of_words(rest, len(words))
        out.append(text[pos : m.start()])
        out.append(SEP)
        pos = m.end() + used
    out.append(text[pos:])
    st.text = "".join(out)

    # bare place names anywhere: registry cities/counties and their nicknames, longest first
    nicknames = {a: t for a, t in known.aliases.items() if t in known.registry_cities}
    for kind, pool in (("city", known.registry_cities | set(nicknames)), ("county", known.registry_counties)):
        if kind in v or (kind == "county" and ("city" in v or "near" in v)):
            continue
        for key in sorted(pool, key=len, reverse=True):
            if key in _FILLER:
                continue  # a city named "Center" only counts after "in"
            pattern = _word_re(re.escape(key).replace(r"\ ", r"\s+"))
            if re.search(pattern, st.text):
                v[kind] = _display(known, kind, nicknames.get(key, key) if kind == "city" else key)
                st.text = re.sub(pattern, SEP, st.text, count=1)
                break

    # leftover words: fuzzy place names, then the free-text query
    leftover_words = [w for w in re.findall(r"[^\W_][\w.'&-]*", st.text) if w not in _FILLER]
    if leftover_words and not {"city", "county", "near", "zip"} & set(v):
        for n in (3, 2, 1):
            done = False
            for i in range(0, len(leftover_words) - n + 1):
                key = " ".join(leftover_words[i : i + n])
                hit = known.fuzzy(key) if len(key) >= 5 else None
                if hit:
                    name = _display(known, hit[0], hit[1])
                    v[hit[0]] = name
                    st.notes.append(f"read '{key}' as {name}")
                    del leftover_words[i : i + n]
                    done = True
                    break
            if done:
                break
    query_parts = quoted + leftover_words
    if query_parts:
        v["query"] = " ".join(query_parts)
    args = FacilitySearchArgs(**{k: val for k, val in v.items() if not k.startswith("_")})
    return ParsedQuery(args=args, notes=st.notes, leftover=" ".join(leftover_words))


def _span_of_words(rest: str, n: int) -> int:
    """Characters of `rest` covering its first n words (and the space before them)."""
    count = 0
    for m in re.finditer(r"[a-z0-9][a-z0-9.'-]*", rest):
        count += 1
        if count == n:
            return m.end()
    return len(rest)


def parse_facility_query(text: str, places: KnownPlaces, *, state: str | None = "TX",
                         aliases: dict[str, str] | None = None) -> FacilitySearchArgs:
    """Deterministic `/facility` parse (see the module docstring)."""
    return parse_facility_query_explained(text, places, state=state, aliases=aliases).args


async def parse_with_registry(runtime, text: str, *, collection: str | None = None) -> ParsedQuery:
    """Parse with the known places of the registry in `collection` (cached per process)."""
    from agent.facilities.places import known_places

    from agent.understanding.domain import domain_path, load_domain

    places = await known_places(runtime, collection)
    aliases = load_domain(domain_path(runtime.settings)).place_aliases
    return parse_facility_query_explained(text, places, state=runtime.settings.facilities_state, aliases=aliases)
