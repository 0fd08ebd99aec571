"""What every turn on one knowledge collection shares, built once per collection.

The deployment's capabilities (plug-ins: agent/capabilities/loader.py) bound to the collection,
the classifier over them, the agent's tool registry and its JSON schemas
(pydantic's schema generation is the costliest step of a turn outside the model, so it runs
once here), with the service's settings, prompts, models and stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cachetools import TTLCache

from agent.capabilities.base import Capabilities, Capability
from agent.capabilities.knowledge import KnowledgeCapability
from agent.tools.actions import Actions
from agent.tools.base import ToolRegistry
from agent.tools.providers import ProvidedTools, tool_providers
from agent.understanding.classify import Classifier
from agent.understanding.gate import TopicCheck

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.knowledge.loaders import Document
    from agent.prompts import PromptSet
    from agent.providers.models import ServiceModels
    from agent.runtime import Runtime
    from agent.state.base import Memory
    from agent.understanding.domain import Domain
    from agent.understanding.identity import Identities


FILES_PER_THREAD = 5  # newest kept; an older file of the same name is replaced


class ThreadFiles:
    """Each thread's attached files (their text), for its follow-ups: at most `max_chars` of text
    in all (least recently used threads go first), each thread's gone after `ttl` seconds."""

    def __init__(self, max_chars: int = 20_000_000, ttl: float = 3600.0) -> None:
        # by (surface, thread id): `(surface, thread_id) in kept` asks whether a thread has files
        self.kept: TTLCache[tuple[str, str], list[Document]] = TTLCache(
            maxsize=max_chars, ttl=ttl, getsizeof=lambda docs: max(1, sum(len(d.text) for d in docs)))

    def get(self, surface: str, thread_id: str) -> list[Document]:
        return list(self.kept.get((surface, thread_id), []))

    def keep(self, surface: str, thread_id: str, documents: list[Document]) -> None:
        names = {d.source for d in documents}
        earlier = [d for d in self.get(surface, thread_id) if d.source not in names]
        try:
            self.kept[(surface, thread_id)] = [*earlier, *documents][-FILES_PER_THREAD:]
        except ValueError:  # more text than the whole cache holds: used for this turn only
            self.kept.pop((surface, thread_id), None)


@dataclass
class TurnContext:
    settings: "Settings"
    prompts: "PromptSet"
    models: "ServiceModels"
    memory: "Memory"  # the thread's history where the surface keeps none
    identities: "Identities"
    collection: str | None
    knowledge: KnowledgeCapability
    capabilities: Capabilities
    classifier: Classifier
    tools: ToolRegistry
    tool_specs: list[dict[str, Any]]
    files: "ThreadFiles | None" = field(default=None)  # each thread's attached files, shared by every collection
    provided: ProvidedTools | None = None  # tools of plug-in providers (MCP servers), joined at the first turn
    actions: Actions | None = None  # calls of changing tools, proposed to the asker (agent/tools/actions.py)

    @classmethod
    def build(cls, *, settings: "Settings", runtime: "Runtime", prompts: "PromptSet", models: "ServiceModels",
              memory: "Memory", identities: "Identities", domain: "Domain", collection: str | None,
              capabilities: list[Capability], files: "ThreadFiles | None" = None) -> "TurnContext":
        bound = Capabilities.ordered([c.bound(collection) for c in capabilities])
        # the knowledge base the turn's retrieval, the gate and attached files read
        knowledge = next(c for c in bound if isinstance(c, KnowledgeCapability))
        tools = ToolRegistry()
        for capability in bound:
            for tool in capability.tools():
                tools.register(tool)
        classifier = Classifier(prompts, bound, TopicCheck(runtime, collection, domain))
        specs = tools.describe()
        return cls(settings=settings, prompts=prompts, models=models, memory=memory, identities=identities,
                   collection=collection, knowledge=knowledge, capabilities=bound, classifier=classifier,
                   tools=tools, tool_specs=specs, files=files,
                   provided=ProvidedTools(tool_providers(runtime), tools, specs),
                   actions=Actions(memory, tools))  # type: ignore[arg-type]  # memory is the state store: its claims
