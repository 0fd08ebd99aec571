"""One model call for the words a `/facility` parse could not place (only with a model configured).

The deterministic parser (query_parser.py) answers without any model. When it leaves words it
could not place ("by the Domain", "near UT campus") and a router model is configured, one
Instructor extraction into the same `FacilitySearchArgs` reads the whole request; what the
parser understood is kept where the model leaves a field empty, and a failed call keeps the
parse as it was. Without a key nothing changes: `/facility` stays model-free.
"""

from __future__ import annotations

import logging

from agent.facilities.format import describe_args
from agent.facilities.query_parser import ParsedQuery
from agent.facilities.schema import FacilitySearchArgs
from agent.messages import ChatMessage
from agent.prompts import PromptSet, default_prompts
from agent.providers.base import Model

log = logging.getLogger(__name__)

async def fill_unplaced(model: Model | None, text: str, parsed: ParsedQuery,
                        prompts: PromptSet | None = None) -> ParsedQuery:
    """`parsed`, completed by the model when words were left unplaced (else unchanged)."""
    if model is None or not parsed.leftover.strip():
        return parsed
    prompt = (prompts or default_prompts()).render(
        "facility_extract", message=text, understood=describe_args(parsed.args), leftover=parsed.leftover)
    try:
        completion = await model.complete([ChatMessage(role="user", content=prompt)], FacilitySearchArgs)
    except Exception as exc:  # a provider error, a malformed answer...: the parse still answers
        log.warning("facility extraction failed (%s); keeping the deterministic parse", type(exc).__name__)
        return parsed
    extracted: FacilitySearchArgs = completion.output
    merged = parsed.args.model_dump(exclude_defaults=True)
    for name, value in extracted.model_dump(exclude_defaults=True).items():
        if name == "query":
            continue  # leftover words are not a name unless the parser read them as one
        merged.setdefault(name, value)
    if extracted.query and parsed.args.query and extracted.query.lower() in parsed.args.query.lower():
        merged["query"] = extracted.query  # the model kept only the name part of the leftovers
    elif "query" in merged and not extracted.query:
        merged.pop("query")  # the model found no name in the leftover words: they were filler
    notes = [*parsed.notes, f"read '{parsed.leftover}' with the router model"]
    return ParsedQuery(args=FacilitySearchArgs(**merged), notes=notes, leftover="")
