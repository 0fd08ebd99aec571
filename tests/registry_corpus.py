"""The demo registry's request corpus and what the registry engine answers for each request.

`OWN_REQUESTS` covers each recogniser of the `/facility` parser (counts, coordinates, days,
hours, numbers, distances, flags, tags and a child's age, places, aliases, typos, unknown places,
quoted names), in English, Spanish and Vietnamese. The equivalence test adds every `/facility`
query of the old tests and evals; the golden file (tests/golden/registry_facility.json) keeps
the whole corpus with the engine's outputs.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any


def escape_mrkdwn(text: str) -> str:
    """Slack's escaping of a details line (as bot/slack/blocks.py does it)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


SLACK_ICONS = {"phone": ":telephone_receiver:"}
TEAMS_ICONS = {"phone": "☎"}
LONG_TEXT = 2000  # texts longer than this are kept in the golden file as a hash and a head
SAME_AS_TOOL_TEXT = "(the tool's text)"  # the search-only answer is the tool's text, stripped

OWN_REQUESTS = [
    # result counts
    "top 5 infant care in Dallas", "show me 3 centers in Houston", "first 2 accredited in Austin",
    "12 daycares near 75201", "all of them in Waco", "every center in Plano", "give me 4 in El Paso",
    "show 999 toddlers", "top 3 within 20 miles of Austin",
    # coordinates
    "near 32.78,-96.80", "within 5 mi of 29.76,-95.37 with transportation",
    # days
    "open every saturday in Dallas", "open tuesdays and thursdays in Austin", "mon thru fri in Lubbock",
    "open on sun in Houston", "sundays and saturdays", "weekend and weekday care", "open thursday",
    "wednesday in Tyler", "open sat. near 78702", "monday to wednesday infant care",
    # hours
    "open at 5:45am in Houston", "drop off at 7 in Austin", "pick up by 6:15 near 78702",
    "closes at 7pm in Dallas", "stays open past 6 in San Antonio", "open until 25 in Waco",
    "open by 13:00", "open no later than 6:30 am in Plano", "open until 6:30 am",
    # numbers
    "capacity of at least 200 in Dallas", "room for 40 kids", "holds 300", "over 100 children in Houston",
    "100 or more spots", "at least 150 capacity", "licensed for 250", "capacity >= 80",
    "more than 90 slots near 77002", "150+ child care in Austin",
    # distances
    "within 2.5 miles of 75201", "15 km from Austin", "in a 20 mile radius of Waco",
    "under 5 miles from 77002", "less than 3 mi of Plano", "within 600 miles of Austin",
    # flags
    "no drop-in in Austin", "without pre-k program in Dallas", "not accredited in Harris County",
    "non accredited", "sick child care in Houston", "school bus in San Antonio", "part time preschool Austin",
    "w/o transportation near 75201", "special-needs & get-well care",
    # ages
    "newborn care in Dallas", "3 year old in Houston", "18 month old near 78702", "6 yr old in Tyler",
    "grade schoolers in Austin", "preschoolers and toddlers in Waco", "my 30-month-old in Dallas",
    # Spanish
    "guardería para niños pequeños en San Antonio", "centros acreditados en el condado de Travis",
    "cuidado de medio tiempo en Houston", "guarderías cerca de 78702",
    "necesito guardería con transporte para mi bebé en Dallas", "programa de pre-kínder en El Paso",
    "niños enfermos en Houston", "guarderias para bebes en Austin",
    # Vietnamese
    "nhà trẻ gần 77002", "trung tâm được công nhận ở Austin", "chăm sóc sau giờ học ở Dallas",
    "nhà trẻ bán thời gian ở San Antonio", "mẫu giáo ở Houston", "nha tre o Houston",
    # typos
    "toddlers in Dalas", "infants in San Antono", "accredited in Lubock", "drop in care in Corpus Christy",
    "toddlers in Harriss County", "Fort Worht infant care", "richland hils",
    # unknown places
    "infant care in Atlantis", "centers in Gotham County", "near Mordor", "near 00000", "daycare 99999",
    "centers in Round Rock", "78703 with transportation", "infant care in Brazos County",
    # all
    "list all facilities", "all accredited centers in Texas", "show all in Dallas County",
    # quoted names
    '"Little Angels" in Houston', '"sun valley"', '"Bright Horizons" near 77002', '"Cliff Temple"',
    # aliases and "downtown"
    "after-school care in SA", "H-town daycare", "infant care in ATX", "Big D toddlers", "daycare in Cowtown",
    "CC drop-in", "downtown Dallas preschool", "downtown Houston 77002 infant care",
    # everything at once, and edges
    "licensed daycare with special needs, 150+ kids, open by 6:30, weekends, within 20 miles of 75201",
    "", "help", "?", "care centers please", "x" * 600, "infant " * 200, "in", "Texas", "Round Rock infant care",
    "Dallas County and Tarrant County", "in Dallas or Fort Worth", "centers in Center",
    "Richland Hills within 5 miles of 76118", "Travis county co. centers", "daycares with 30 spots",
    "infant care near me", "Austin County infant care", "Lutheran", "montessori near 78702",
]


TOKEN_HASH = "test:token-hash"


class TokenHashEmbedder:
    """A bag of words as a vector: each word adds a fixed pattern of -1/0/+1 (from its hash)
    to 64 integer components. The sums are exact, so the similarities, and every order built
    on them, are the same on every machine; records that share words with a query still come
    closest to it."""

    name = TOKEN_HASH
    dim = 64

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self._vector(text)

    def _vector(self, text: str) -> list[float]:
        vector = [0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            for i in range(self.dim):
                vector[i] += (-1, 0, 1, 0)[digest[i // 4] >> (2 * (i % 4)) & 3]
        if not any(vector):
            vector[0] = 1  # a text without words still has a direction
        return [float(v) for v in vector]


def _text(value: str) -> str | dict[str, str]:
    """Long texts as a hash and a head (the golden file stays small); short ones as they are."""
    if len(value) <= LONG_TEXT:
        return value
    return {"sha256": hashlib.sha256(value.encode()).hexdigest(), "head": value[:300], "chars": str(len(value))}


def golden_record(outputs: dict[str, Any]) -> dict[str, Any]:
    """What the golden file keeps of `engine_outputs`: the readable parts (parse, summary, reply,
    ids, arguments, claims, the first views) and a digest of everything (json, tool text,
    references, every view)."""
    command, prefetch = outputs["command"], outputs["prefetch"]
    digest = hashlib.sha256(json.dumps(outputs, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return {"request": outputs["request"], "parse": outputs["parse"], "claims": outputs["claims"],
            "command": {"summary": command["summary"], "ids": command["ids"], "reply": command["reply"]},
            "arguments": prefetch["arguments"], "views": outputs["views"][:2], "digest": digest}


async def engine_outputs(capability: Any, prompts: Any, text: str) -> dict[str, Any]:
    """What the registry engine answers for `text`: parse, command, prefetch, search-only,
    claims and the record views (every comparison the equivalence and golden tests make)."""
    registry = capability.registry
    out: dict[str, Any] = {"request": text}
    try:
        parsed = await registry.parse(text)
        out["parse"] = {"args": parsed.args.model_dump(mode="json", exclude_defaults=True), "notes": parsed.notes,
                        "leftover": parsed.leftover}
    except Exception as exc:  # the old parser raises too (e.g. a radius over 500 miles)
        out["parse"] = {"error": type(exc).__name__}
    command = await capability.run_command(registry.decl.command.name, text)
    out["command"] = {"summary": command.summary, "reply": _text(command.reply), "json": command.to_json(),
                      "ids": [r.id for r in command.records], "is_help": command.is_help}
    found = await capability.prefetch(text)
    out["prefetch"] = {"arguments": found.arguments, "text": _text(found.result.text),
                       "references": [r.model_dump(exclude_none=True) for r in found.result.references]}
    search_only = capability.search_only(found, prompts).text
    out["search_only"] = SAME_AS_TOOL_TEXT if search_only == found.result.text.strip() else _text(search_only)
    out["claims"] = capability.claims(text)
    views = capability.records(found)
    out["views"] = [{"title": v.title, "slack": escape_mrkdwn(v.details_line(SLACK_ICONS)),
                     "teams": v.details_line(TEAMS_ICONS), "more": [d.text for d in v.more], "url": v.url}
                    for v in views]
    return out


class CanonicalTies:
    """A store whose search results list equal scores in id order (the registry engine's own
    tie order), so an engine that takes the store's order ranks the same way: the old code,
    compared with the new one, and any run of the golden test whatever the segment layout."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def query_points(self, *args: Any, **kwargs: Any) -> list:
        from agent.registry.search import ties_by_id

        return ties_by_id(await self._store.query_points(*args, **kwargs))
