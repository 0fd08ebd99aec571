"""A registry's command (`/facility TEXT`, `askdesk registry search NAME TEXT`): parse without a
model, search, and say how the text was read — the same on every surface.

Empty text or "help" gives the usage; text too long, or with nothing to search by, gives the
usage with a note; a store outage gives an apology instead of an exception.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.capabilities.base import CommandResult
from agent.registry.extraction import fill_unplaced
from agent.registry.format import capitalised
from agent.registry.results import RegistryResults

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.registry.registry import Registry

MAX_COMMAND_CHARS = 500
HELP_WORDS = {"help", "-h", "--help", "?"}


def searchable(registry: "Registry", *, article: bool) -> str:
    """'a place, age group, feature or name' / 'place, ages and features' (the tags' nouns are
    the declaration's), in the language being spoken."""
    decl, prompts = registry.decl, registry.prompts
    place = bool(decl.places or decl.geo)
    if article:
        return prompts.text("registry_criteria_any", place=place,
                            tags=[t.noun or n.replace("_", " ") for n, t in decl.tags.items()],
                            feature=any(f.ask for f in decl.flags.values()))
    return prompts.text("registry_criteria_all", place=place, tags=[n.replace("_", " ") for n in decl.tags],
                        features=bool(decl.flags))


class CommandRunner:
    def __init__(self, registry: "Registry") -> None:
        self.registry = registry
        self.decl = registry.decl

    def _base_json(self, text: str, summary: str, notes: list[str]) -> dict[str, Any]:
        return {"query": text, "interpretation": summary, "notes": notes}

    def help(self, text: str, note: str | None = None) -> CommandResult:
        usage = self.decl.command.usage
        notes = [note] if note else []
        data = {**self._base_json(text, "", notes), "help": usage, self.decl.record.plural: []}
        return CommandResult(command=self.decl.command.name, text=text, is_help=True, notes=notes,
                             reply=f"{note}\n\n{usage}" if note else usage, json_data=data)

    def reply(self, summary: str, notes: list[str], results: RegistryResults) -> str:
        lines = [f"{capitalised(self.decl.record.plural)}: {summary}"]
        if notes:
            lines.append("(" + "; ".join(notes) + ")")
        if results.message:
            lines.append(results.message)
        if results.hits:
            lines.append(self.registry.prompts.text("registry_matches", total=results.total, shown=len(results.hits)))
            lines += [f"{i}. {self.registry.formatter.line(h)}" for i, h in enumerate(results.hits, 1)]
        return "\n".join(lines)

    async def run(self, text: str, *, model: "Model | None" = None, prompts: "PromptSet | None" = None
                  ) -> tuple[CommandResult, RegistryResults | None]:
        """The command's result for every surface, and the search's own results (None without a search)."""
        raw = (text or "").strip()
        one = self.decl.record.singular
        if not raw or raw.lower() in HELP_WORDS:
            return self.help(raw), None
        if len(raw) > MAX_COMMAND_CHARS:
            return self.help(raw[:80] + "…", self.registry.prompts.text(
                "registry_too_long", length=len(raw), record=one, limit=MAX_COMMAND_CHARS,
                criteria=searchable(self.registry, article=False))), None
        try:
            parsed = await self.registry.parse(raw)
            if model is not None:
                parsed = await fill_unplaced(self.registry, model, raw, parsed, prompts)
            args = parsed.args
            if not args.has_criteria() and args.limit != 0:  # "list all facilities" is a request
                return self.help(raw, self.registry.prompts.text(
                    "registry_nothing_to_search", criteria=searchable(self.registry, article=True), text=raw)), None
            results = await self.registry.search(args)
        except Exception as exc:  # the vector store is down or misconfigured: say so, don't crash the surface
            reply = self.registry.prompts.text("registry_unavailable", record=one, error=f"{type(exc).__name__}: {exc}")
            data = {**self._base_json(raw, "", [reply]), "message": None, "total": 0, self.decl.record.plural: []}
            return CommandResult(command=self.decl.command.name, text=raw, reply=reply, notes=[reply],
                                 json_data=data), None
        return self.result(raw, parsed.notes, results), results

    def result(self, text: str, notes: list[str], results: RegistryResults) -> CommandResult:
        views = self.registry.views
        summary = self.registry.formatter.describe(results.args, results.near, results.radius_miles)
        near = bool(getattr(results.args, "near", None) and results.near)
        data = {**self._base_json(text, summary, list(notes)), "message": results.message, "total": results.total,
                self.decl.record.plural: [views.json_record(h, near=near) for h in results.hits]}
        return CommandResult(
            command=self.decl.command.name, text=text, summary=summary,
            notes=[*notes, *([results.message] if results.message else [])],
            reply=self.reply(summary, notes, results), records=[views.record_view(h) for h in results.hits],
            total=results.total, json_data=data)
