"""`get_formatted_context`: knowledge-base passages formatted for the model, with citations.

Each passage becomes a `<document index=.. source=.. title=.. section=.. score=..>` block so the
model can tell passages apart and cite them. A block holds the passage's section (`context`, from
section expansion) when it fits in what is left of the character budget (settings.context_chars),
else the matched passage alone; the blocks stop at the budget. A passage written in another
language than the question carries `lang="es"` (its language) and a note asks the model to say so,
so a Spanish answer built on an English policy tells the asker where it comes from. When even the
best passage is a poor semantic match the text says so, letting the agent refuse instead of
guessing.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent.fencing import quote
from agent.knowledge.language import query_language
from agent.knowledge.search import Passage, search
from agent.references import Reference
from agent.tools.base import Tool, ToolResult

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.runtime import Runtime

WEAK_EVIDENCE_NOTE = (
    "NOTE: weak evidence — none of these passages closely matches the question "
    "(best similarity {best:.2f} < {threshold:.2f}). If they do not answer it, say that the "
    "knowledge base does not cover it instead of guessing."
)
OTHER_LANGUAGE_NOTE = (
    "NOTE: documents with a lang attribute are written in another language than the question "
    "({lang}); when you use one, answer in the question's language and say that the source is in "
    "that other language."
)
NO_RESULTS = "No passages found in the knowledge base for this query."
MAX_TOP_K = 20  # most passages one call returns


class ContextArgs(BaseModel):
    query: str = Field(..., min_length=1, description="What to look up, in the user's words plus key terms.")
    top_k: int = Field(5, ge=1, le=MAX_TOP_K, description="How many passages to return.")


def _attr(value: str) -> str:
    return escape(value, quote=True)


def format_passage(index: int, p: Passage, text: str | None = None, *, question_lang: str | None = None) -> str:
    body = quote(p.text if text is None else text)  # a passage cannot close its wrapper
    lang = f' lang="{_attr(p.lang)}"' if question_lang and p.lang and p.lang != question_lang else ""
    return (
        f'<document index="{index}" source="{_attr(p.source)}" title="{_attr(p.title)}" '
        f'section="{_attr(p.section)}" score="{p.score:.3f}"{lang}>\n{body}\n</document>'
    )


def _trimmed(text: str, room: int) -> str:
    """`text` cut to `room` characters at the last line break that fits (a table row is never
    cut), or at the last space when the first line alone is too long."""
    if len(text) <= room:
        return text
    cut = text.rfind("\n", 0, room)
    if cut <= 0:
        cut = text.rfind(" ", 0, room)
    return text[: cut if cut > 0 else room].rstrip() + "…"


def format_passages(passages: list[Passage], budget: int, *, question_lang: str | None = None
                    ) -> tuple[str, list[Passage]]:
    """Blocks in rank order until `budget` characters: each with its section when that fits in
    what is left, else with the matched passage alone; the first is trimmed rather than dropped."""
    blocks: list[str] = []
    used: list[Passage] = []
    total = 0
    for i, p in enumerate(passages, start=1):
        sep = 2 if blocks else 0
        fitting = [b for b in (format_passage(i, p, p.context or p.text, question_lang=question_lang),
                               format_passage(i, p, question_lang=question_lang))
                   if total + sep + len(b) <= budget]
        if fitting:
            block = fitting[0]
        elif blocks:
            break
        else:
            whole = format_passage(i, p, question_lang=question_lang)
            room = max(0, budget - (len(whole) - len(p.text)) - 1)
            block = format_passage(i, p, _trimmed(p.text, room), question_lang=question_lang)
        blocks.append(block)
        used.append(p)
        total += sep + len(block)
    return "\n\n".join(blocks), used


def reference_of(p: Passage) -> Reference:
    return Reference(source=p.source, title=p.title, section=p.section, url=p.url, score=p.score)


async def get_formatted_context(
    runtime: "Runtime", query: str, top_k: int = 5, *, collection: str | None = None,
    also: list[tuple[str, float]] | tuple = (), model: "Model | None" = None, prompts: "PromptSet | None" = None,
) -> ToolResult:
    """Search the knowledge base and return the best passages as <document> blocks with sources.
    `also`: further (query, weight) searches fused with this one (a follow-up in its thread);
    `model`: the query is also searched in the knowledge base's other languages, translated
    with `prompts`' query_translation (default: the packaged one; agent/knowledge/translation.py)."""
    settings = runtime.settings
    said: list[tuple[str, str]] = []
    if model is not None:
        from agent.knowledge.translation import translations
        from agent.prompts import default_prompts

        said = await translations(runtime, model, prompts or default_prompts(), query, collection)
    if said:
        from agent.knowledge.translation import search_translated

        passages = await search_translated(runtime, query, said, top_k=top_k, also=also, collection=collection)
    elif also:
        from agent.knowledge.fused import search_fused

        passages = await search_fused(runtime, [(query, 1.0), *also], top_k=top_k, collection=collection)
    else:
        passages = await search(runtime, query, top_k=top_k, collection=collection)
    if not passages:
        return ToolResult(text=NO_RESULTS, weak_evidence=True)
    question_lang = query_language(query)
    text, used = format_passages(passages, settings.context_chars, question_lang=question_lang)
    best = max((p.dense_score for p in used if p.dense_score is not None), default=None)
    weak = best is not None and best < settings.min_score
    if weak:
        text += "\n\n" + WEAK_EVIDENCE_NOTE.format(best=best, threshold=settings.min_score)
    if any(p.lang and p.lang != question_lang for p in used):
        text += "\n\n" + OTHER_LANGUAGE_NOTE.format(lang=question_lang)
    refs: list[Reference] = []
    for p in used:
        ref = reference_of(p)
        if all((r.source, r.section) != (ref.source, ref.section) for r in refs):
            refs.append(ref)
    return ToolResult(text=text, references=refs, documents=[reference_of(p) for p in used], weak_evidence=weak,
                      data=used)


def make_tool(runtime: "Runtime", *, collection: str | None = None) -> Tool:
    async def run(args: ContextArgs) -> ToolResult:
        """Search the organisation's knowledge base (policies, guides, rate charts, reports) and
        return the most relevant passages with their source, title and section for citation.
        Use it for any question about the organisation's programs, rules, amounts or procedures.
        Query with the key terms of the question (names, codes, numbers, years)."""
        return await get_formatted_context(runtime, args.query, args.top_k, collection=collection)

    return Tool(
        name="get_formatted_context",
        args_model=ContextArgs,
        fn=run,
        progress="Searching the knowledge base…",  # = prompts' `searching_knowledge`, said in the asker's language
    )
