"""A declared registry as a capability: its tool, its claim on a message's wording, the search
run before the first model call, its answer without a model, its command and eval section.

`registry_capabilities(runtime)` gives one per declaration of the deployment (ASKDESK_REGISTRIES
and `<data_dir>/registries/*.yaml`); adding a registry is a YAML file and a CSV, no Python.
Registered as a capability plug-in whose `build` is that factory; the registry engine (its
parser, gazetteers) is imported only when a registry is declared.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agent.capabilities.base import Capability, Command, CommandResult, EvalSection, Found, RecordView, SearchOnly
from agent.tools.registry_search import make_registry_tool

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.plugins import Registrar
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.registry.declaration import Declaration
    from agent.registry.registry import Registry
    from agent.runtime import Runtime
    from agent.tools.base import Tool

log = logging.getLogger(__name__)


class RegistryCapability(Capability):
    name = "registries"  # the plug-in's; each instance is named by its declaration
    kind = "registry"
    description = "the registries declared in YAML (one capability each)"

    @classmethod
    def build(cls, runtime: "Runtime | None", settings: "Settings") -> list[Capability]:
        """One per declared registry (DeclarationError at start-up for a broken one); none
        declared: the registry engine is not even imported."""
        if runtime is None:
            return []
        from agent.registry.loader import declaration_paths

        if not declaration_paths(runtime.settings):
            return []  # none declared: the registry engine (its parser, gazetteers) is not even imported
        from agent.prompts import load_prompts

        # the extraction prompt of an edited prompts folder; None: the packaged one
        prompts = load_prompts(settings.prompts_dir) if settings.prompts_dir else None
        return list(registry_capabilities(runtime, prompts))

    def __init__(self, registry: "Registry", prompts: "PromptSet | None" = None) -> None:
        super().__init__(registry.runtime)
        self.registry = registry
        self.name = registry.name
        self.description = registry.decl.description
        self.prompts = prompts  # for the extraction prompt (default: the packaged prompts)
        if prompts is not None:  # the registry's notes too, from an edited prompts folder
            registry.prompts = prompts
        self._tool = make_registry_tool(registry)
        # what a message must hold for `claims` to be asked (agent/registry/cue.py): the
        # understanding layer tests it first, so a message without it runs (and loads) no parser
        self.cue = registry.cue
        self.records_cue = registry.records_cue  # "which offices…": a request for its records (cue.py)

    def tools(self) -> list["Tool"]:
        return [self._tool]

    def claims(self, text: str) -> bool:
        return self.registry.claims(text)

    def anchored(self, text: str) -> bool:
        return self.registry.claims.anchored(text)

    async def warm(self) -> None:
        await self.registry.warm()

    async def unplaced(self, text: str) -> str:
        try:
            return (await self.registry.parse(text)).leftover
        except Exception as exc:  # the store is down: nothing is known to be unplaced
            log.warning("%s parse failed: %s", self.name, type(exc).__name__)
            return ""

    async def prefetch(self, query: str, *, model: "Model | None" = None) -> Found:
        """The command parser's reading of `query` (its unplaced words read by `model`, one call,
        when given), then the tool; the raw query as the name when it cannot parse."""
        try:
            parsed = await self.registry.parse(query)
        except Exception as exc:  # e.g. the store is down: the tool says so itself
            log.warning("%s query parse failed: %s", self.name, type(exc).__name__)
            arguments: dict[str, Any] = {"query": query}
        else:
            from agent.registry.extraction import fill_unplaced

            parsed = await fill_unplaced(self.registry, model, query, parsed, self.prompts)
            arguments = parsed.args.model_dump(exclude_none=True, exclude_defaults=True)
        result = await self._tool(arguments)
        return Found(capability=self.name, tool=self._tool.name, arguments=arguments, result=result, query=query)

    def search_only(self, found: Found | None, prompts: "PromptSet") -> SearchOnly:
        result = found.result if found else None
        if result is None or not result.text.strip():
            return SearchOnly(text=prompts.render("search_only_empty"))
        return SearchOnly(text=result.text.strip(), references=list(result.references))

    def records(self, found: Found | None) -> list[RecordView]:
        """What a turn's search found, as surfaces show records (empty for another capability's)."""
        from agent.registry.results import RegistryResults

        data = found.result.data if found is not None else None
        if not isinstance(data, RegistryResults) or data.registry != self.name:
            return []
        return [self.registry.views.record_view(hit) for hit in data.hits]

    def commands(self) -> list[Command]:
        return [declared_command(self.registry.decl)]

    async def run_command(self, name: str, text: str, *, model: "Model | None" = None) -> CommandResult:
        if name != self.registry.decl.command.name:
            raise ValueError(f"registry {self.name!r} has no command {name!r}")
        from agent.registry.command import CommandRunner

        result, _ = await CommandRunner(self.registry).run(text, model=model, prompts=self.prompts)
        return result

    def eval_sections(self) -> dict[str, EvalSection]:
        from agent.registry.evaluation import RegistryEvalSection

        return {self.name: RegistryEvalSection(self.registry)}


def declared_command(decl: "Declaration") -> Command:
    """The command a registry's declaration offers on every surface."""
    return Command(name=decl.command.name, capability=decl.name, title=decl.title, usage=decl.command.usage,
                   example=decl.command.example, extension=decl.command.extension, record=decl.record.singular,
                   records=decl.record.plural)


def registry_capabilities(runtime: "Runtime", prompts: "PromptSet | None" = None) -> list[RegistryCapability]:
    """The deployment's registries as capabilities (DeclarationError when one is broken)."""
    from agent.registry.loader import build_registries

    return [RegistryCapability(registry, prompts) for registry in build_registries(runtime)]


def register(r: "Registrar") -> None:
    """askdesk's registries, registered as any capability plug-in is (pyproject.toml)."""
    r.capability(RegistryCapability)
