"""The one model call for words a /facility parse could not place: the real openai SDK and
instructor against the fake LLM server; without a model nothing is called."""

from __future__ import annotations

import csv

from agent.facilities.extraction import fill_unplaced
from agent.facilities.geocode import KnownPlaces
from agent.facilities.query_parser import parse_facility_query_explained
from agent.providers.chain import ModelChain
from tests.conftest import SAMPLE_FACILITIES


def places() -> KnownPlaces:
    with SAMPLE_FACILITIES.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return KnownPlaces.from_records(
        (r["city"], r["county"], r["zip"][:5], float(r["latitude"]), float(r["longitude"])) for r in rows)


TEXT = "infant care in Austin, ideally walking distance from the Domain mall"


async def test_unplaced_words_get_one_extraction_call(llm_server):
    parsed = parse_facility_query_explained(TEXT, places())
    assert parsed.leftover and parsed.args.ages == ["infant"] and parsed.args.city == "Austin"
    llm_server.script("openai", {"near": "78758", "radius_miles": 3, "ages": ["infant"]})
    chain = ModelChain(["openai/gpt-4.1-mini"], max_retries=0)
    try:
        filled = await fill_unplaced(chain, TEXT, parsed)
    finally:
        await chain.aclose()
    assert filled.args.near == "78758" and filled.args.radius_miles == 3 and filled.args.ages == ["infant"]
    assert filled.args.city == "Austin"  # what the parser understood is kept
    assert filled.args.query is None  # the unplaced words were a place, not a name: no name filter
    assert filled.leftover == "" and any("router model" in n for n in filled.notes)
    (request,) = llm_server.requests
    prompt = request.body["messages"][-1]["content"]
    assert TEXT in prompt and parsed.leftover in prompt and "infant care" in prompt


async def test_a_failed_call_keeps_the_parse(llm_server):
    parsed = parse_facility_query_explained(TEXT, places())
    llm_server.script_error("openai", 503)
    chain = ModelChain(["openai/gpt-4.1-mini"], max_retries=0)
    try:
        assert await fill_unplaced(chain, TEXT, parsed) is parsed
    finally:
        await chain.aclose()


async def test_no_model_or_nothing_unplaced_means_no_call():
    parsed = parse_facility_query_explained(TEXT, places())
    assert await fill_unplaced(None, TEXT, parsed) is parsed
    clean = parse_facility_query_explained("infant care in Austin", places())
    assert clean.leftover == ""
    assert await fill_unplaced(object(), "infant care in Austin", clean) is clean  # never called
