"""What every turn on one knowledge collection shares, built once per collection.

The capabilities (the knowledge base bound to the collection, and the deployment's
registries), the classifier over them, the agent's tool registry and its JSON schemas
(pydantic's schema generation is the costliest step of a turn outside the model, so it runs
once here), with the service's settings, prompts, models and stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.capabilities.base import Capabilities, Capability
from agent.capabilities.knowledge import KnowledgeCapability
from agent.tools.base import ToolRegistry
from agent.understanding.classify import Classifier
from agent.understanding.gate import TopicCheck

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.prompts import PromptSet
    from agent.providers.models import ServiceModels
    from agent.runtime import Runtime
    from agent.turn.files import ThreadFiles
    from agent.state.conversation import ConversationStore
    from agent.understanding.domain import Domain
    from agent.understanding.identity import Identities


@dataclass
class TurnContext:
    settings: "Settings"
    prompts: "PromptSet"
    models: "ServiceModels"
    memory: "ConversationStore"
    identities: "Identities"
    collection: str | None
    knowledge: KnowledgeCapability
    capabilities: Capabilities
    classifier: Classifier
    tools: ToolRegistry
    tool_specs: list[dict[str, Any]]
    files: "ThreadFiles | None" = field(default=None)  # each thread's attached files, shared by every collection

    @classmethod
    def build(cls, *, settings: "Settings", runtime: "Runtime", prompts: "PromptSet", models: "ServiceModels",
              memory: "ConversationStore", identities: "Identities", domain: "Domain", collection: str | None,
              registries: list[Capability], files: "ThreadFiles | None" = None) -> "TurnContext":
        knowledge = KnowledgeCapability(runtime, collection)
        capabilities = Capabilities([knowledge, *registries])
        tools = ToolRegistry()
        for capability in capabilities:
            for tool in capability.tools():
                tools.register(tool)
        classifier = Classifier(prompts, capabilities, TopicCheck(runtime, collection, domain))
        return cls(settings=settings, prompts=prompts, models=models, memory=memory, identities=identities,
                   collection=collection, knowledge=knowledge, capabilities=capabilities, classifier=classifier,
                   tools=tools, tool_specs=tools.describe(), files=files)

    def input_problem(self, text: str, *, files: bool = False) -> str | None:
        """The note for an empty (without `files` attached) or too long message, else None."""
        text, limit = (text or "").strip(), self.settings.max_message_chars
        if not text:
            return None if files else self.prompts.render("empty_message")
        return self.prompts.render("too_long", limit=limit, length=len(text)) if len(text) > limit else None
