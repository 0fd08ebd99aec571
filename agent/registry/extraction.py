"""One model call for the words a `/`-command parse could not place (only with a model).

The deterministic parser answers without any model. When it leaves words it could not place
("by the Domain", "near UT campus") and a router model is configured, one structured extraction
into the same search arguments reads the whole request; what the parser understood is kept
where the model leaves a field empty, and a failed call keeps the parse as it was.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agent.messages import ChatMessage
from agent.registry.parsing.parser import ParsedQuery

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.registry.registry import Registry

log = logging.getLogger(__name__)


def criteria_words(registry: "Registry") -> str:
    """What the unplaced words may name, for the prompt."""
    decl = registry.decl
    parts = []
    if decl.places or decl.geo:
        levels = [p.noun or n.replace("_", " ") for n, p in decl.places.items() if p.level != "zip"]
        parts.append("a place (a nickname, a neighbourhood" + "".join(f", a {lv}" for lv in levels) + ")")
    parts += [f"a {t.noun or n.replace('_', ' ')}" for n, t in decl.tags.items()]
    if any(f.ask for f in decl.flags.values()):
        parts.append("a feature or service")
    if decl.hours:
        parts.append("opening hours")
    if decl.days:
        parts.append("days")
    parts += [f"a {n.label or name.replace('_', ' ')}" for name, n in decl.numbers.items() if n.filter]
    return ", ".join(parts + [f"a {decl.record.singular}'s name"])


async def fill_unplaced(registry: "Registry", model: "Model | None", text: str, parsed: ParsedQuery,
                        prompts: "PromptSet | None" = None) -> ParsedQuery:
    """`parsed`, completed by the model when words were left unplaced (else unchanged)."""
    if model is None or not parsed.leftover.strip():
        return parsed
    from agent.prompts import default_prompts

    decl = registry.decl
    prompt = (prompts or default_prompts()).render(
        "registry_extract", registry=decl.title, record=decl.record.singular, criteria=criteria_words(registry),
        message=text, understood=registry.formatter.describe(parsed.args), leftover=parsed.leftover)
    try:
        completion = await model.complete([ChatMessage(role="user", content=prompt)], registry.args_model)
    except Exception as exc:  # a provider error, a malformed answer...: the parse still answers
        log.warning("%s extraction failed (%s); keeping the deterministic parse", decl.name, type(exc).__name__)
        return parsed
    extracted = completion.output
    merged = parsed.args.model_dump(exclude_defaults=True)
    for name, value in extracted.model_dump(exclude_defaults=True).items():
        if name == "query":
            continue  # leftover words are not a name unless the parser read them as one
        merged.setdefault(name, value)
    query = parsed.args.query  # type: ignore[attr-defined]
    if extracted.query and query and extracted.query.lower() in query.lower():
        merged["query"] = extracted.query  # the model kept only the name part of the leftovers
    elif "query" in merged and not extracted.query:
        merged.pop("query")  # the model found no name in the leftover words: they were filler
    notes = [*parsed.notes, registry.prompts.text("registry_read_by_model", text=parsed.leftover)]
    return ParsedQuery(args=registry.args_model(**merged), notes=notes, leftover="")
