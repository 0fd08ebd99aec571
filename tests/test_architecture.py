"""The architecture holds: no import cycles, surfaces above the service only, no registry's
domain outside the registry capability, and a question's path through the code stays short and
never climbs back up (docs/architecture.md says how each is measured)."""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from agent.messages import ChatMessage
from tests.conftest import REPO

SOURCES = sorted([*REPO.glob("agent/**/*.py"), *REPO.glob("bot/**/*.py")])


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(REPO).with_suffix("").parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


MODULES = {module_name(p): p for p in SOURCES}


def imports(path: Path, *, functions: bool = True) -> set[str]:
    """Our modules `path` imports (inside functions too, unless told not to; never TYPE_CHECKING ones)."""
    name = module_name(path)
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        if not functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for n in ast.walk(node):
            if isinstance(n, ast.Import):
                found.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom) and n.module:
                base = n.module if n.level == 0 else ".".join([*name.split(".")[: -n.level], n.module])
                found.add(base)
                found.update(f"{base}.{a.name}" for a in n.names)
    return {m for m in found if m in MODULES and m != name}


def cycles() -> list[list[str]]:
    graph = {m: imports(p) for m, p in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_even_through_imports_inside_functions():
    assert cycles() == []


@pytest.mark.parametrize("surface", ["bot.slack", "bot.teams", "bot.turn"])
def test_surfaces_talk_to_the_service_only(surface):
    """Surfaces import the service's shapes (answers, capability result types, prompts), never a
    capability's engine, a provider, a store or the understanding layer."""
    forbidden = ("agent.knowledge", "agent.registry", "agent.providers", "agent.store", "agent.understanding",
                 "agent.tools", "agent.capabilities.knowledge", "agent.capabilities.registry")
    for name, path in MODULES.items():
        if name == surface or name.startswith(surface + "."):
            bad = sorted(m for m in imports(path) if m.startswith(forbidden))
            assert bad == [], f"{name} imports {bad}"


# The registry capability, and the demo's shortcut commands the issue keeps (`ingest-facilities`,
# `facility`, `demo`), may name the demo's registry; nothing else in agent/ or bot/ may.
REGISTRY_OWN = ("agent/registry/", "agent/capabilities/registry.py", "agent/tools/registry_search.py",
                "bot/commands/facility.py", "bot/commands/chat.py", "bot/cli.py")
DOMAIN_WORDS = re.compile(r"facilit|operation.?number|zip.?code|\bzip5\b|\bzips\b", re.IGNORECASE)


def test_no_module_outside_the_registry_capability_names_facilities_zips_or_operation_numbers():
    offenders = []
    for path in SOURCES:
        relative = path.relative_to(REPO).as_posix()
        if relative.startswith(REGISTRY_OWN):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if DOMAIN_WORDS.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == []


# --------------------------------------------------------------------------- a question's path

LAYERS = ("turn", "understanding", "capabilities", "knowledge", "registry", "tools", "store", "state", "providers")


def unit(module: str) -> str:
    """The architectural unit of a module: its package under agent/, or the shared modules."""
    parts = module.split(".")
    if parts[0] == "bot":
        return ".".join(parts[:2])
    return f"agent.{parts[1]}" if len(parts) > 2 and parts[1] in LAYERS else "agent (shared)"


async def trace(service, request) -> tuple[list[str], Counter]:
    """The units a turn enters, in order, and how often each is called into again while it is
    still on the stack below (a call back up). A resumed coroutine is not a new call."""
    entered: list[str] = []
    climbs: Counter = Counter()
    stack: list[str] = []
    started: dict[int, object] = {}

    def profile(frame, event, arg):
        if event not in ("call", "return"):
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(("agent", "bot")):
            return
        u = unit(module)
        if event == "return":
            if stack:
                stack.pop()
            return
        if id(frame) not in started:
            started[id(frame)] = frame
            if u not in entered:
                entered.append(u)
            if u != "agent (shared)" and stack and stack[-1] != u and u in stack:
                climbs[u] += 1
        stack.append(u)

    sys.setprofile(profile)
    try:
        await service.answer(request)
    finally:
        sys.setprofile(None)
    return entered, climbs


async def test_a_questions_path_enters_at_most_ten_units_and_never_climbs_back(kb_runtime, tmp_path):
    from agent.config import Settings
    from agent.providers.function import ScriptedModel
    from agent.providers.models import ServiceModels
    from agent.turn.service import Askdesk, AskRequest
    from tests.fakes.steps import final
    from tests.knowledge_fixtures import SMALL_KB_DOC, service_on

    questions = [
        AskRequest(text="what is the income limit for a family of 3?"),
        AskRequest(text="infant care near 78702"),
        AskRequest(text="and for a family of 6?", history=[ChatMessage(role="user", content="income limit, family of 3?")]),
    ]
    async with service_on(kb_runtime) as service:
        await service.answer(questions[0])  # warm: what is loaded once per process is not the path
        for request in questions:
            entered, climbs = await trace(service, request)
            assert len(entered) <= 10 and entered[0] == "agent.turn", entered
            assert all(n <= 2 for n in climbs.values()) and not climbs, climbs
    model = ScriptedModel(final("Families of 3 qualify below $5,000 a month [1].", SMALL_KB_DOC))
    agent = Askdesk(Settings(data_dir=tmp_path / "svc"), kb_runtime,
                    models=ServiceModels(router=None, agent=model, notice=None))
    try:
        entered, climbs = await trace(agent, AskRequest(text="what is the income limit for a family of 3?"))
    finally:
        await agent.close()
    assert "agent.providers" in entered and len(entered) <= 10 and not climbs, (entered, climbs)
