"""A capability needs only `name`, `description` and `tools()` (agent/capabilities/base.py):
everything else has a default that does nothing, so the smallest one warms up, routes and is
answered; docs/capabilities.md's example runs as written; the loader keeps a deployment's
capabilities sound."""

from __future__ import annotations

import logging
import re

import pytest
from pydantic import BaseModel

from agent.capabilities.base import Capabilities, Capability, Found, answer_without_model
from agent.capabilities.knowledge import KnowledgeCapability
from agent.capabilities.loader import CapabilityError, capabilities_from, load_capabilities
from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.plugins import Registrar
from agent.prompts import default_prompts
from agent.providers.function import ScriptedModel
from agent.providers.models import ServiceModels
from agent.runtime import Runtime
from agent.state.memory import MemoryState
from agent.tools.base import Tool, ToolResult
from agent.turn.service import Askdesk, AskRequest
from tests.conftest import REPO
from tests.crash_child import EMBEDDER, HashEmbedder
from tests.fakes.steps import final, tool_calls


class Args(BaseModel):
    name: str


class Minimal(Capability):
    name = "rooms"
    description = "asking which meeting room someone booked"

    def tools(self) -> list[Tool]:
        async def room(args: Args) -> ToolResult:
            """The room a person booked."""
            return ToolResult(text=f"{args.name} booked room 4.")

        return [Tool("room_of", Args, room)]


def with_knowledge(*kinds: type) -> Registrar:
    r = Registrar()
    r.capability(KnowledgeCapability)
    for kind in kinds:
        r.capability(kind)
    return r


@pytest.fixture
async def runtime(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rooms.md").write_text("# Meeting rooms\n\nRooms are booked in the calendar.\n", encoding="utf-8")
    rt = Runtime.open(Settings(data_dir=tmp_path / "data", embedder=EMBEDDER, embedding_cache=False))
    rt._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    await ingest(rt, [docs])
    yield rt
    await rt.close()


async def test_a_capability_with_only_the_required_members_warms_up_and_answers(runtime):
    model = ScriptedModel(tool_calls(("room_of", {"name": "Ada"})), final("Ada booked room 4."))
    with capabilities_from(with_knowledge(Minimal)):
        askdesk = Askdesk(runtime.settings, runtime, state=MemoryState(),
                          models=ServiceModels(router=None, agent=model, notice=None))
    try:
        took = await askdesk.warm_up()
        assert set(took) >= {"knowledge", "rooms"} and askdesk.ready
        assert askdesk.commands() == [] and askdesk.capabilities().names == ["knowledge", "rooms"]
        result = await askdesk.answer(AskRequest(text="which meeting room did Ada book?"))
    finally:
        await askdesk.close()
    model.assert_done()
    assert result.answer == "Ada booked room 4." and "room_of" in result.tool_calls
    assert any(m.name == "room_of" and m.content == "Ada booked room 4." for m in model.calls[1].messages)


async def test_the_defaults_do_nothing():
    minimal = Minimal()
    assert not minimal.claims("which room did Ada book?") and minimal.anchored("x")
    assert minimal.kind == "capability" and minimal.bound("other") is minimal
    assert minimal.commands() == [] and minimal.eval_sections() == {} and minimal.search_only(None, None) is None
    assert [type(c) for c in Minimal.build(None, Settings())] == [Minimal]
    assert await minimal.prefetch("x") is None and await minimal.vocabulary() is None
    assert await minimal.unplaced("x") == "" and await minimal.warm() is None
    found = Found("minimal", "room_of", {}, ToolResult(text="Ada booked room 4."), "which room?")
    assert await minimal.read_closely(found) is found and found.closeness == {}
    with pytest.raises(KeyError):
        await minimal.run_command("rooms", "x")
    # without a model, what its tool returned is the answer (or that nothing was found)
    prompts = default_prompts()
    found = Found("rooms", "room_of", {"name": "Ada"}, ToolResult(text="Ada booked room 4."))
    assert answer_without_model(minimal, found, prompts).text == "Ada booked room 4."
    assert answer_without_model(minimal, None, prompts).text == prompts.render("search_only_empty")
    with pytest.raises(NotImplementedError):
        Capability().tools()


async def test_the_example_in_docs_capabilities_md_runs_as_written(runtime):
    page = (REPO / "docs" / "capabilities.md").read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    namespace: dict = {}
    exec(compile(code, "docs/capabilities.md", "exec"), namespace)  # noqa: S102 - our own documentation
    with capabilities_from(with_knowledge(namespace["StatusCapability"])):
        askdesk = Askdesk(runtime.settings, runtime, state=MemoryState(),
                          models=ServiceModels(router=None, agent=None, notice="search-only"))
    try:
        took = await askdesk.warm_up()
        result = await askdesk.answer(AskRequest(text="is the vpn down?"))
    finally:
        await askdesk.close()
    assert "status" in took
    assert (result.route, result.answer, result.search_only) == ("status", "vpn: down", True)


def test_the_loader_builds_plug_ins_knowledge_first_and_refuses_what_cannot_route(caplog):
    class NotOne:
        name = "stray"

    class Clash(Minimal):
        name = "offtopic"

    class Twice(Minimal):
        @classmethod
        def build(cls, runtime, settings):
            return [cls(runtime), cls(runtime)]

    r = Registrar()
    r.capability(Minimal)
    r.capability(NotOne)
    r.capability(KnowledgeCapability)
    with caplog.at_level(logging.ERROR, logger="askdesk.capabilities"):
        built = load_capabilities(None, Settings(), r)
    assert built.names == ["knowledge", "rooms"] and "stray is not a Capability subclass" in caplog.text
    with pytest.raises(CapabilityError, match="reserved"):
        load_capabilities(None, Settings(), with_knowledge(Clash))
    with pytest.raises(CapabilityError, match="used twice"):
        load_capabilities(None, Settings(), with_knowledge(Twice))
    only = Registrar()
    only.capability(Minimal)
    with pytest.raises(CapabilityError, match="no knowledge capability"):
        load_capabilities(None, Settings(), only)
    assert Capabilities.ordered([Minimal(), KnowledgeCapability(None)]).names == ["knowledge", "rooms"]


def test_askdesks_own_capabilities_are_plug_ins():
    from agent.plugins import plugins

    registered = plugins().capabilities
    assert registered["knowledge"] is KnowledgeCapability
    assert registered["registries"].__name__ == "RegistryCapability"
    assert load_capabilities(None, Settings()).names[0] == "knowledge"
