"""What the user is told when the models fail or run out of the turn's time.

The reply is the search-only answer (the route capability's results, with sources) headed by a
note: a rejected key is a configuration problem for an administrator (naming the variable),
anything else — hang, timeout, 429/5xx, empty or unusable output — the model not answering
right now. The apology with a reference id is kept for when the search fails too.
"""

from __future__ import annotations

import logging
import traceback
import uuid

from agent.answers import AnswerResult
from agent.knowledge.search import KnowledgeBaseUnavailable
from agent.prompts import PromptSet
from agent.providers.base import ProviderConfigError, ProviderError
from agent.tracing import Span
from agent.turn.answer_stream import AnswerText
from agent.understanding.route import Route, route_name

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


def apology(exc: Exception, route: Route | None, span: Span, prompts: PromptSet, *,
            shown: bool = False) -> AnswerResult:
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
    return AnswerResult(answer=message, route=route_name(route) if route is not None else "knowledge")


async def search_results_instead(exc: Exception, searched: AnswerResult, streamed: AnswerText,
                                 prompts: PromptSet) -> AnswerResult:
    """The models failed or ran out of time: the search-only answer, headed by a note saying
    why (after the answer text already shown, if a model broke off mid-answer)."""
    note = prompts.render("answer_interrupted_search_only") if streamed.shown else model_failure_note(exc, prompts)
    searched.answer = await streamed.end_with(f"{note}\n\n{searched.answer}")  # per answer, not a notice
    return searched
