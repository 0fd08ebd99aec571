"""*** DELETE WITH agent/facilities/ *** What the old code's callers did with it, as of the
switch-over, so tests/test_registry_equivalence.py does not depend on the turn pipeline and the
surfaces being rewritten at the same time: the pre-filter's facility rule (without its
knowledge-marker veto), the facility prefetch's arguments, the search-only facility answer and the
Slack and Teams renderings of a facility hit. `test_snapshots_match_the_live_code` checks each
against the live function while that still exists."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import yaml

from agent.accents import fold
from agent.facilities.query_parser import mentions_facility_criteria, parse_with_registry
from agent.facilities.words import shipped_words
from agent.registry.words import phrases_re
from tests.conftest import REPO

DOMAIN = REPO / "examples" / "texas-childcare" / "domain.yaml"

# agent/prefilter.py `_PLACE_RE`
_PLACE_RE = re.compile(
    r"(\b\d{5}\b|\bwithin \d+(\.\d+)? ?(mi|miles?|km)\b|\bnear (me|\w+)|\b[A-Z][a-z]+ (county|co\.)\b|"
    r"\b\d+\+? (kids|children|slots|capacity)\b|\bopen (by|until|till|at) \d|" + shipped_words().place_marker_re() + ")",
)
_NOUNS = phrases_re([*shipped_words().facility_nouns,
                     *yaml.safe_load(DOMAIN.read_text(encoding="utf-8"))["facility_nouns"]])


def old_claims(text: str) -> bool:
    """agent.prefilter.looks_like_facility_search(text, <the demo's domain>) without the veto."""
    text = unicodedata.normalize("NFC", " ".join(text.split()))
    if not _PLACE_RE.search(fold(text)):
        return False
    return bool(_NOUNS.search(fold(text))) or mentions_facility_criteria(text)


async def old_arguments(runtime: Any, query: str) -> dict:
    """agent.prefetch.facility_arguments without a router model."""
    try:
        parsed = await parse_with_registry(runtime, query)
    except Exception:
        return {"query": query}
    return parsed.args.model_dump(exclude_none=True, exclude_defaults=True)


def old_search_only(result: Any, prompts: Any) -> str:
    """agent.search_only.facility_answer"""
    if result is None or not result.text.strip():
        return prompts.render("search_only_empty")
    return result.text.strip()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def old_slack_line(hit: Any) -> str:
    """bot.slack.blocks.facility_line"""
    name = _escape(hit.name or "Unnamed facility")
    address = ", ".join(x for x in (hit.address, hit.city.title() if hit.city.isupper() else hit.city, hit.zip) if x)
    details = [_escape(address)] if address else []
    if hit.phone:
        details.append(f":telephone_receiver: {_escape(hit.phone)}")
    if hit.ages:
        details.append("ages: " + _escape(", ".join(hit.ages).lower()))
    if hit.distance_miles is not None:
        details.append(f"{hit.distance_miles:.1f} mi")
    return f"*{name}*\n" + " · ".join(details)


def old_teams_details(hit: Any) -> str:
    """bot.teams.cards.details_line"""
    city = hit.city.title() if hit.city.isupper() else hit.city
    address = ", ".join(x for x in (hit.address, city, hit.zip) if x)
    details = [address] if address else []
    if hit.phone:
        details.append(f"☎ {hit.phone}")
    if hit.ages:
        details.append("ages: " + ", ".join(hit.ages).lower())
    if hit.distance_miles is not None:
        details.append(f"{hit.distance_miles:.1f} mi")
    return " · ".join(details)


def old_teams_more(hit: Any) -> list[str]:
    """bot.teams.cards.facility_card's lines under the details"""
    return ([f"Hours: {hit.hours}"] if hit.hours else []) + ([f"Operation #{hit.operation_number}"]
                                                              if hit.operation_number else [])
