"""Query translation for cross-language retrieval: one model call says the query in the
knowledge base's other languages.

BM25 only matches words of the query's own language and the dense model, though multilingual,
ranks passages of the query's language first; a Vietnamese question whose answer is only in an
English policy is best found by also searching its English wording. When a model is set, the
query is translated into each language the collection holds besides its own (prompts/
query_translation.yaml), each translation is searched among the passages of its language, and
the searches are fused (agent/knowledge/fused.py). Without a model,
or when the call fails, search goes on with the query alone (its cross-language retriever,
agent/knowledge/search.py, still runs).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent.knowledge import kb_languages
from agent.knowledge.fused import fuse
from agent.knowledge.language import writing
from agent.knowledge.search import Passage, SearchFilters, search
from agent.messages import ChatMessage
from agent.providers.base import ProviderError

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

# A translation's weight in the fusion, against the asker's own words at 1.0: the original still
# leads (it holds the asker's exact terms), a translation found by both rises.
TRANSLATION_WEIGHT = 0.8


class Translated(BaseModel):
    lang: str = Field(..., description="Language code, as listed.")
    query: str = Field(..., description="The query in that language.")


class QueryTranslation(BaseModel):
    """The search query said in each language asked for."""

    translations: list[Translated] = Field(default_factory=list)


async def target_languages(runtime: "Runtime", query: str, collection: str | None = None) -> list[str]:
    """The languages the collection holds besides the query's own (none for a one-language base),
    from its vocabulary (loaded once, kept current), not its statistics file read per question.
    Vietnamese typed without its marks has no language of the collection for its own: every one
    is asked for, Vietnamese too (the model writes it with its marks, which the embedder reads)."""
    from agent.knowledge.vocabulary import vocabulary

    own = writing(query)
    langs = (await vocabulary(runtime, collection)).langs
    return [lang for lang, _ in sorted(langs.items(), key=lambda kv: (-kv[1], kv[0]))
            if lang not in (own, kb_languages.UNDETERMINED)]


async def translate_query(model: "Model", prompts: "PromptSet", query: str, languages: list[str]) -> list[Translated]:
    """`query` in each of `languages` (one model call); [] when there are none or the model fails."""
    if not languages or not query.strip():
        return []
    prompt = prompts.text("query_translation", query=query, languages=languages)
    try:
        completion = await model.complete([ChatMessage(role="user", content=prompt)], QueryTranslation)
    except ProviderError as exc:
        log.warning("query translation failed (%s); searching the query alone", type(exc).__name__)
        return []
    seen = {query.strip().casefold()}
    out: list[Translated] = []
    for item in completion.output.translations:
        text = item.query.strip()
        if item.lang in languages and text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(Translated(lang=item.lang, query=text))
    return out


async def translations(runtime: "Runtime", model: "Model | None", prompts: "PromptSet", query: str,
                       collection: str | None = None) -> list[tuple[str, str]]:
    """(language, query in it) for each other language the collection holds; [] without a model."""
    if model is None:
        return []
    languages = await target_languages(runtime, query, collection)
    said = await translate_query(model, prompts, query, languages)
    return [(item.lang, item.query) for item in said]


async def search_translated(runtime: "Runtime", query: str, said: list[tuple[str, str]], *, top_k: int = 5,
                            also: list[tuple[str, float]] | tuple = (), collection: str | None = None
                            ) -> list[Passage]:
    """RRF of the searches for `query` (and `also`), each over the whole collection, and for each
    translation over the passages of its own language only (the translated words would only
    bring back the original's language through the cross-language retriever)."""
    depth = max(3 * top_k, 15)
    lists = [(await search(runtime, q, top_k=depth, collection=collection), w) for q, w in [(query, 1.0), *also]]
    for lang, text in said:
        found = await search(runtime, text, top_k=depth, collection=collection, filters=SearchFilters(lang=lang))
        lists.append((found, TRANSLATION_WEIGHT))
    return fuse(lists, top_k)
