"""Alternative turn stages for benchmarks and tests: the classic designs askdesk is measured
against, built from the production stages (agent/turn/stages.py) rather than switched on by
flags in production classes.

    ROUTER_FIRST       the router model reads every message the wording leaves open, before
                       any similarity check (the classic router -> agent)
    ROUTER_NO_PREFETCH the same, and nothing is searched before the agent: the agent decides to
                       call the search tool itself (router -> agent -> tool -> agent)
"""

from __future__ import annotations

from agent.deadline import ROUTER_SHARE, deadline
from agent.turn.stages import STAGES, classify, identity, retrieve, router
from agent.understanding.route import describe


async def classify_by_model(turn, ctx) -> None:
    """The router model first for everything the wording leaves open; the production
    classification when there is no model or it fails."""
    if turn.result is not None:
        return
    model = router(turn, ctx)
    if turn.reading is not None and turn.reading.route is None and model is not None:
        span = turn.span.child("router", "chain", {"text": turn.text})
        with deadline(ctx.settings.turn_timeout * ROUTER_SHARE):
            decided = await ctx.classifier.ask(turn.reading, model, await identity(turn, ctx), span)
        if decided is not None:
            turn.route = decided
            span.end(describe(decided))
            return
        span.end({"route": None})
    await classify(turn, ctx)


async def no_prefetch(turn, ctx) -> None:
    """Nothing is searched before the model: the agent calls the tools itself."""


def _replace(stages, old, new):
    return tuple(new if stage is old else stage for stage in stages)


ROUTER_FIRST = _replace(STAGES, classify, classify_by_model)
ROUTER_NO_PREFETCH = _replace(ROUTER_FIRST, retrieve, no_prefetch)
