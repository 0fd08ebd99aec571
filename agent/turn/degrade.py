"""What the user is told when the models fail or run out of the turn's time.

The reply is the search-only answer (passages or facility results, with sources) headed by a
note: a rejected key is a configuration problem for an administrator (naming the variable),
anything else — hang, timeout, 429/5xx, empty or unusable output — the model not answering
right now. The apology with a reference id is kept for when the search fails too.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
import uuid
from typing import Any

from agent import search_only
from agent.turn.answer_stream import AnswerText
from agent.answers import AnswerResult
from agent.deadline import reserve
from agent.knowledge.search import KnowledgeBaseUnavailable
from agent.turn.loop import Prefetched
from agent.prefetch import Prefetcher
from agent.prompts import PromptSet
from agent.providers.base import ProviderConfigError, ProviderError
from agent.understanding.router import Route
from agent.tracing import Span

log = logging.getLogger("askdesk.service")  # the turn's log, where the service writes it


def model_failure_note(exc: BaseException, prompts: PromptSet) -> str:
    if isinstance(exc, ProviderConfigError) or isinstance(exc.__cause__, ProviderConfigError):
        error = exc if isinstance(exc, ProviderConfigError) else exc.__cause__
        return prompts.render("model_misconfigured", env=error.key_env or "the model provider's API key")
    return prompts.render("model_unavailable")


def failure_apology(exc: BaseException, prompts: PromptSet, ref: str) -> str:
    """The apology when no search results could be shown either."""
    if isinstance(exc, ProviderConfigError):
        return prompts.render("provider_config_error", env=exc.key_env or "the model provider's API key", ref=ref)
    return prompts.render("provider_error", ref=ref)


def apology(exc: Exception, route, span: Span, prompts: PromptSet, *, shown: bool = False) -> AnswerResult:
    """The turn's apology with a reference id; the log gets the error type (and stack for bugs),
    never the message text (exception messages can quote it). `route`: the turn's, if routed;
    `shown`: part of a streamed answer is already on screen (the apology says it is incomplete)."""
    ref = uuid.uuid4().hex[:8]
    if isinstance(exc, (ProviderError, TimeoutError)):
        log.error("turn %s: model provider failed: %s (%s)", ref, type(exc).__name__, getattr(exc, "provider", ""))
        message = prompts.render("answer_incomplete", ref=ref) if shown else failure_apology(exc, prompts, ref)
    elif isinstance(exc, KnowledgeBaseUnavailable):
        log.error("turn %s: knowledge base unavailable: %s", ref, exc)
        message = prompts.render("store_error", ref=ref)
    else:
        log.error("turn %s failed: %s\n%s", ref, type(exc).__name__, "".join(traceback.format_tb(exc.__traceback__)))
        message = prompts.render("internal_error", ref=ref)
    span.end(error=f"{ref}: {type(exc).__name__}")
    attempts = exc.attempts if isinstance(exc, ProviderError) else []
    return AnswerResult(answer=message, route=route.route if route else "knowledge",
                        llm_calls=(route.llm_calls if route else 0) + len(attempts))


async def search_results_instead(exc: Exception, route: Route, prefetched: list[Prefetched], common: dict[str, Any],
                                 prefetcher: Prefetcher, span: Span, streamed: AnswerText, prompts: PromptSet,
                                 notice: str | None, turn_timeout: float) -> AnswerResult:
    """The models failed or ran out of time: the search results, headed by a note saying why
    (after the answer text already shown, if a model broke off mid-answer)."""
    if not prefetched:  # prefetch off (benchmarks): search now, in the time kept back for it
        async with asyncio.timeout(reserve(turn_timeout)):
            prefetched = await prefetcher.run(route.route, route.query, span=span)
    common["llm_calls"] += len(getattr(exc, "attempts", []))
    result = search_only.answer(prefetched, prompts, notice=notice, **common)
    note = prompts.render("answer_interrupted_search_only") if streamed.shown else model_failure_note(exc, prompts)
    result.answer = await streamed.end_with(f"{note}\n\n{result.answer}")  # per answer, not a notice
    return result
