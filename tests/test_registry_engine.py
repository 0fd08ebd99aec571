"""The registry engine beyond the two samples: a registry with no places at all (an equipment
catalogue declared inline), the places cache each registry object owns, and the router model's
one extraction call for unplaced words (the real openai SDK against the fake LLM server)."""

from __future__ import annotations

import pytest_asyncio

from agent.capabilities.registry import RegistryCapability, registry_capabilities
from agent.config import Settings
from agent.providers.chain import ModelChain
from agent.registry import registry as registry_module
from agent.registry.declaration import load_declaration, parse_declaration
from agent.registry.registry import Registry
from agent.runtime import Runtime
from agent.yamlio import safe_load
from tests.conftest import REPO

OFFICE = REPO / "examples" / "hr-it-handbook" / "registries" / "office.yaml"
OFFICES = REPO / "examples" / "hr-it-handbook" / "offices.csv"

EQUIPMENT = {
    "name": "equipment", "collection": "equipment", "title": "IT equipment catalogue",
    "description": "looking for laptops, monitors or docks in the catalogue",
    "record": {"singular": "item", "plural": "items"},
    "words": {"nouns": ["gear", "hardware"]},
    "fields": {
        "sku": {"type": "id", "label": "SKU"},
        "model": "name",
        "kind": {"type": "tags", "noun": "kind of item", "values": {
            "laptop": {"words": ["laptops?", "notebooks?"]},
            "monitor": {"words": ["monitors?", "screens?", "displays?"]},
            "dock": {"words": ["docks?", "docking stations?"]}}},
        "in_stock": {"type": "flag", "label": "in stock", "ask": "True: in stock now.", "words": ["in stock", "available"]},
        "price": {"type": "number", "filter": "max", "words": {"units": ["dollars", "usd"], "names": ["price"]}},
        "added": "date",
    },
    "display": {"line": ["{model} ({sku})", "{kind}", "${price}", "{flags}", "added {added}"]},
    "json": ["sku", "model", "price"],
    "command": {"name": "equipment", "usage": "Find equipment: /equipment laptops under 1500 dollars"},
    "tool": {"name": "search_equipment", "description": "Find items of the IT equipment catalogue."},
}
CSV = """sku,model,kind,in_stock,price,added
L-1,ThinkPad T14,laptop,Y,1399,2024-01-10
L-2,MacBook Pro 14,laptop,N,1999,01/15/2024
L-3,Latitude 5440,Laptop,Y,1199,2024-03-01
M-1,UltraSharp 27,monitor,Y,449,2023-11-20
D-1,ThinkPad Dock,"dock, monitor",Y,249,2023-09-01
"""


@pytest_asyncio.fixture
async def equipment(settings, tmp_path):
    runtime = Runtime.open(settings)
    registry = Registry(parse_declaration(EQUIPMENT, "equipment.yaml"), runtime)
    path = tmp_path / "equipment.csv"
    path.write_text(CSV, encoding="utf-8")
    report = await registry.ingest(path)
    assert (report.loaded, report.errors) == (5, [])
    yield RegistryCapability(registry)
    await runtime.close()


async def test_a_registry_without_places(equipment):
    result = await equipment.run_command("equipment", "laptops in stock under 1500 dollars")
    assert result.summary == "laptop · in stock · price up to 1499"
    assert [r.id for r in result.records] == ["L-3", "L-1"]  # by name: Latitude, ThinkPad
    assert result.reply.splitlines()[2] == "1. Latitude 5440 (L-3) · laptop · $1199 · in stock · added 2024-03-01"
    assert result.to_json()["items"][0] == {"sku": "L-3", "model": "Latitude 5440", "price": 1199,
                                            "matched_features": ["laptop", "in_stock"]}
    assert {r.id for r in (await equipment.run_command("equipment", "all monitors")).records} == {"M-1", "D-1"}
    assert [r.id for r in (await equipment.run_command("equipment", "macbook")).records] == ["L-2"]
    vague = await equipment.run_command("equipment", "something nice")  # a name no record has: the closest, said so
    assert "No item name or description contains 'something nice'; these are the closest by meaning." in vague.reply
    assert 0 < len(vague.records) <= 5
    assert (await equipment.run_command("equipment", "x" * 501)).reply.startswith(
        "That is 501 characters; a item search takes at most 500. Keep to the kind and features you need.")
    (tool,) = equipment.tools()
    assert list(tool.schema()["parameters"]["properties"]) == ["query", "kind", "in_stock", "max_price", "limit"]


async def test_claims_without_places_need_a_number_phrase(equipment):
    assert equipment.claims("a laptop under 1500 dollars")  # a criterion word + a number with its unit
    assert equipment.claims("hardware, 2 usd")
    assert not equipment.claims("laptops in Austin")  # no place means nothing to this registry


async def test_places_are_reread_when_another_object_ingests(settings, tmp_path, monkeypatch):
    """Each registry object owns its places cache; an ingest elsewhere (another object, the
    admin channel, another process) changes the collection's version and every object rereads."""
    monkeypatch.setattr(registry_module, "CHECK_SECONDS", 0.0)
    runtime = Runtime.open(settings)
    try:
        decl = load_declaration(OFFICE)
        serving, admin = Registry(decl, runtime), Registry(decl, runtime)
        assert not (await serving.places()).exists
        lines = OFFICES.read_text(encoding="utf-8").splitlines()
        first = tmp_path / "offices.csv"
        first.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")  # Austin only
        await admin.ingest(first)
        assert set((await serving.places()).known.get("city")) == {"austin"}
        first.write_text("\n".join([lines[0], *lines[1:3], lines[7]]) + "\n", encoding="utf-8")  # + Chicago
        await admin.ingest(first)
        assert (await serving.parse("offices in chicago")).args.city == "Chicago"
        cached = await serving.places()
        assert await serving.places() is cached  # unchanged version: no re-read
    finally:
        await runtime.close()


@pytest_asyncio.fixture(scope="module")
async def offices(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("extract") / "data", registries=[OFFICE])
    runtime = Runtime.open(settings)
    (capability,) = registry_capabilities(runtime)
    await capability.registry.ingest(OFFICES)
    yield capability
    await runtime.close()


TEXT = "offices in Austin, ideally walking distance from the Domain mall"


async def test_unplaced_words_get_one_extraction_call(offices, llm_server):
    llm_server.script("openai", {"near": "78758", "radius_miles": 3})
    chain = ModelChain(["openai/gpt-4.1-mini"], max_retries=0)
    try:
        found = await offices.prefetch(TEXT, model=chain)
    finally:
        await chain.aclose()
    assert found.arguments == {"city": "Austin", "near": "78758", "radius_miles": 3.0}  # no name: the words were a place
    (request,) = llm_server.requests
    prompt = request.body["messages"][-1]["content"]
    assert TEXT in prompt and "Northwind office locations" in prompt and "in Austin" in prompt
    assert "could not place these words: ideally walking distance" in prompt


async def test_a_failed_call_keeps_the_parse_and_no_model_means_no_call(offices, llm_server):
    llm_server.script_error("openai", 503)
    chain = ModelChain(["openai/gpt-4.1-mini"], max_retries=0)
    try:
        result = await offices.run_command("office", TEXT, model=chain)
    finally:
        await chain.aclose()
    assert result.summary == 'in Austin · matching "ideally walking distance"'
    plain = await offices.prefetch("parking in Austin", model=object())  # nothing unplaced: never called
    assert plain.arguments == {"city": "Austin", "parking": True} and len(llm_server.requests) == 1


async def test_a_store_outage_is_an_apology_not_a_crash(tmp_path):
    from qdrant_client import AsyncQdrantClient

    from agent.store.server import ServerStore

    url = "http://127.0.0.1:9"  # nothing listens there
    runtime = Runtime(settings=Settings(data_dir=tmp_path, qdrant_url=url),
                      store=ServerStore(AsyncQdrantClient(url=url, check_compatibility=False), where=url))
    try:
        capability = RegistryCapability(Registry(load_declaration(OFFICE), runtime))
        result = await capability.run_command("office", "parking in Austin")
    finally:
        await runtime.close()
    assert result.reply.startswith("The office registry is unavailable right now (")
    assert result.records == [] and result.to_json()["offices"] == [] and result.notes == [result.reply]


# --------------------------------------------------------------------------- the cue before the claim

SAMPLE_REGISTRIES = sorted(REPO.glob("examples/*/registries/*.yaml"))
# what the parser's normalisation, day and hours translations and stated ages read: phrases the
# eval sets hardly hold, each a claim of the registry that declares what it needs
EDGE_CASES = [
    "daycares w/ infant care in Austin", "centros con bebés & transporte en Houston", "infant care open sat/sun",
    "after-school care mon-fri near 78702", "daycares open until 7pm in Dallas", "abiertas hasta las 7 de la tarde",
    "nhà trẻ mở cửa từ 6 giờ sáng ở Houston", "care for my 8-month-old in Austin", "150+ kids capacity in Austin",
    "within 8 km of 78702", "open on weekends and sundays", "ＩＮＦＡＮＴ ＣＡＲＥ in Austin", "guarderías los domingos",
    "offices open saturdays", "labs open 24 hours", "contractors licensed for roofing near Plano",
]


def sample_messages() -> list[str]:
    """Every text of the samples' eval sets (questions, searches, thread turns), and the edge cases."""
    found: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str) and 0 < len(value) < 300:
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted(REPO.glob("examples/*/eval/*.yaml")):
        walk(safe_load(path.read_text(encoding="utf-8")))
    return [*dict.fromkeys(found), *EDGE_CASES]


def test_a_registry_claims_no_message_without_its_cue_and_the_cue_passes_few_questions():
    """The cue (agent/registry/cue.py) is a necessary condition of the claim: a message it does not
    match never reaches the parser, so it must match every message the parser would claim. And it
    must rule out most questions for the documents, or it saves nothing."""
    messages = sample_messages()
    declarations = [load_declaration(p) for p in SAMPLE_REGISTRIES] + [parse_declaration(EQUIPMENT, "equipment.yaml")]
    claimed_somewhere = 0
    for decl in declarations:
        registry = Registry(decl, None)  # claims need no store
        claimed = [m for m in messages if registry.claims(m)]
        assert claimed, decl.name
        missed = [m for m in claimed if not registry.cue(m)]
        assert missed == [], f"{decl.name}: claimed without its cue: {missed}"
        passed = sum(1 for m in messages if registry.cue(m))
        assert passed < len(messages) * 0.6, f"{decl.name}: the cue passes {passed} of {len(messages)} messages"
        claimed_somewhere += len(claimed)
    assert claimed_somewhere > 200  # the samples hold many registry searches: the check has teeth
