"""The stages of one turn, in order. Each reads and writes the `Turn` (agent/turn/state.py):

    check -> attach -> recall -> read -> classify -> retrieve -> respond

check: an empty or too long message gets a note. attach: the files that came with the question
(agent/turn/files.py). recall: the thread's history. read: what the
wording alone says. classify: the route (the gate and the router model read what the turn's
retrieval found for the message). retrieve: what the route's capability finds before the first
model call. respond: the agent loop over every capability's tools, or the capability's
search-only answer without a model, or the turn's own reply (refusal, greeting, clarifying
question). A stage that finds `turn.result` set has nothing to do. The service wraps the stages
in the turn's deadline, the apology and remembering; a benchmark passes its own stage tuple.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from agent.answers import AnswerResult, ProposedCall
from agent.capabilities.base import Capability, Found, answer_without_model
from agent.deadline import ROUTER_SHARE, deadline, remaining
from agent.providers.base import ProviderError
from agent.state.conversation import trim_history
from agent.turn.context import TurnContext
from agent.turn import files
from agent.turn.degrade import search_results_instead
from agent.turn.loop import MaxTurnsExceeded, ModelBehaviorError, run_agent
from agent.turn.state import CountedModel, Turn
from agent.tools.actions import owner
from agent.capabilities.knowledge import best_centered
from agent.understanding.answerable import unanswerable
from agent.understanding.identity import Identity
from agent.understanding.route import ACTED, Act, Clarify, Greet, Refuse, Use, describe, route_name

log = logging.getLogger("askdesk.service")

Stage = Callable[[Turn, TurnContext], Awaitable[None]]


def input_problem(ctx: TurnContext, text: str, *, files: bool = False) -> str | None:
    """The note for an empty (without `files` attached) or too long message, else None."""
    text, limit = (text or "").strip(), ctx.settings.max_message_chars
    if not text:
        return None if files else ctx.prompts.render("empty_message")
    return ctx.prompts.render("too_long", limit=limit, length=len(text)) if len(text) > limit else None


async def check(turn: Turn, ctx: TurnContext) -> None:
    if problem := input_problem(ctx, turn.text, files=bool(turn.request.attachments)):
        turn.route = Clarify(problem, decided_by="check", reason="empty or too long")
        turn.result = result(turn, answer=problem)
        turn.remember = False


async def recall(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is not None:
        return
    req = turn.request
    history = req.history if req.history is not None else (await ctx.memory.load(req.surface, req.thread_id)).messages
    turn.history = trim_history([m for m in history if m.role in ("user", "assistant")], ctx.settings.history_chars)
    await ctx.classifier.prepare()  # the collection's calibration, before its first search


async def read(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is None:
        turn.reading = ctx.classifier.read(turn.text, turn.history)


async def classify(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is not None or turn.reading is None:
        return
    span = turn.span.child("router", "chain", {"text": turn.text})
    with deadline(ctx.settings.turn_timeout * ROUTER_SHARE):  # past it, the LLM-free pre-filter routes
        # the asker already overrode a refusal of this message: the router model is not asked again
        model = None if turn.request.search_anyway else router(turn, ctx)
        route = await ctx.classifier.decide(turn.reading, turn.retrieval.find, model=model, span=span,
                                            identity=await identity(turn, ctx) if model is not None else None)
    if turn.attached:
        route = files.about_files(route, turn, ctx)
    match route:
        case Refuse() if turn.request.search_anyway:
            route = searched_anyway(route, turn, ctx)
    turn.route = route
    span.end(describe(route))


def searched_anyway(refused: Refuse, turn: Turn, ctx: TurnContext) -> Use:
    """A refusal the asker overrode ("Search the documents anyway", `/search`): a wrong refusal
    costs a person their answer, so theirs is the last word. The refused message itself is
    searched, not its thread's earlier questions (the asker asked about this one), and
    answered with the note that it may be outside the documents."""
    return Use(ctx.knowledge, turn.text, borderline=True, decided_by="asker",
               reason="refused, searched at the asker's request", best_score=refused.best_score)


async def retrieve(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is not None:
        return
    match turn.route:
        case Use(capability=capability):
            pass
        case _:  # refusal, greeting, clarifying question: nothing to search
            return
    tools = capability.tools()
    if turn.progress is not None and tools:
        await turn.progress(tools[0].progress)
    turn.found = await search(turn, ctx)


async def search(turn: Turn, ctx: TurnContext) -> list[Found]:
    """What the route's capability finds for the routed query (knowledge: the search the
    classification already ran, when it did)."""
    match turn.route:
        case Use(capability=capability, query=query, also=also) if capability is ctx.knowledge:
            return [await turn.retrieval.get(query, tuple(also))]
        case Use(capability=capability, query=query):
            found = await capability.prefetch(query, model=router(turn, ctx))
            return [found] if found is not None else []
    return []


async def respond(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is not None:
        return
    match turn.route:
        case Refuse() | Greet() as route:  # the refusal or the greeting, in what askdesk says it is about
            about = await identity(turn, ctx)
            turn.result = result(turn, answer=ctx.prompts.render(
                "refusal" if isinstance(route, Refuse) else "greeting",
                capabilities=about.capabilities_in(), examples=about.examples_in()))  # in the turn's language
            return
        case Clarify(question=question):
            turn.result = result(turn, answer=question or ctx.prompts.render("clarification"))
            return
        case None:
            raise AssertionError("respond: the turn has no route")
    if ctx.models.agent is None:
        turn.result = await search_only(turn, ctx, search_only_notice(ctx), unanswerable=await unsupported(turn, ctx))
        return
    try:
        async with asyncio.timeout(remaining()):  # the deadline, even for a call that ignores it
            run = await run_agent(
                model=CountedModel(ctx.models.agent, turn.ledger), registry=ctx.tools, prompts=ctx.prompts,
                question=turn.text, history=turn.history, found=[*turn.attached, *turn.found],
                max_iterations=ctx.settings.max_iterations,
                domain=(await identity(turn, ctx)).domain, progress=turn.progress, span=turn.span,
                tool_specs=ctx.tool_specs,
                answer=turn.answer_text)
    except (ProviderError, TimeoutError) as exc:  # the model failed, erred twice, hit the cap or the deadline
        why = str(exc) if isinstance(exc, (ModelBehaviorError, MaxTurnsExceeded)) else type(exc).__name__
        log.warning("turn: no model answer (%s); answering with search results", why)
        if not turn.found:  # nothing was searched before the model (a benchmark's stages): search now
            turn.found = await search_in_reserve(turn, ctx)
        turn.result = await search_results_instead(exc, await search_only(turn, ctx, search_only_notice(ctx)), turn.answer_text,
                                                   ctx.prompts)
        return
    if run.pending:  # the model called a tool that changes something: the asker confirms first
        calls = [ProposedCall(tool=c.name, arguments=c.arguments) for c in run.pending]
        text, action = await ctx.actions.propose(calls, turn.request, turn.text, ctx.prompts)
        turn.result = result(turn, answer=await turn.answer_text.end_with(text), tool_calls=run.tool_calls,
                             data=run.data, action=action)
        return
    turn.result = result(turn, answer=run.answer, references=run.references, confidence=run.confidence,
                         tool_calls=run.tool_calls, data=run.data)
    await judge(turn, ctx, cited=bool(run.references))


async def unsupported(turn: Turn, ctx: TurnContext, *, model: bool = False, confidence: float | None = None,
                      cited: bool = True) -> bool:
    """Whether the documents do not support a knowledge answer to this turn
    (agent/understanding/answerable.py; False on another route or before calibration). No model call."""
    match turn.route:
        case Use(capability=capability) if capability is ctx.knowledge:
            pass
        case _:
            return False
    if ctx.classifier.gate is None:
        return False
    state = await ctx.classifier.gate.calibrated()
    found = turn.found[0] if turn.found else None
    return unanswerable(state.calibration if state else None, turn.text, best_centered(found),
                        model=model, confidence=confidence, cited=cited)


async def judge(turn: Turn, ctx: TurnContext, *, cited: bool = True) -> None:
    """Mark a model's knowledge answer the documents do not support: it keeps its words (the
    prompt has it say so) and shows the closest sources when it cited none. (A search-only
    answer is judged before it is written: its lead-in says so, `search_only`.)"""
    result = turn.result
    if result is None or not await unsupported(turn, ctx, model=True, confidence=result.confidence, cited=cited):
        return
    result.unanswerable = True
    if not result.references:
        found = turn.found[0] if turn.found else None
        result.references = ctx.knowledge.search_only(found, ctx.prompts).references[:3]


async def act(turn: Turn, ctx: TurnContext) -> None:
    """The asker's Confirm or Cancel of calls a model proposed (agent/tools/actions.py): checked
    (theirs, proposed by askdesk, undecided), then, confirmed, each runs with exactly the
    arguments they were shown and `respond` answers from what they returned, as from a search."""
    confirmation = turn.request.confirmation
    if turn.result is not None or confirmation is None:
        return
    action = confirmation.action
    turn.route = route = Act(action.question, decided_by="asker", reason="decided by the asker")
    refused = await ctx.actions.decide(confirmation, turn.request.user_id)
    if refused is not None or not confirmation.confirmed:
        turn.result = result(turn, answer=ctx.prompts.text(refused or "action_cancelled"))
        turn.remember = refused is None  # a cancel is part of the conversation; a refused press is not
        return
    # the answer's route: the capability whose tool ran (its search-only answer), else a provider's tool
    route.capability = ctx.capabilities.get(owner(action, ctx.capabilities, ACTION_ROUTE))
    if turn.progress is not None:
        lines = [t.progress for c in action.calls if (t := ctx.tools.tools.get(c.tool)) is not None]
        for line in dict.fromkeys(lines):
            await turn.progress(line)
    turn.found = await ctx.actions.run(action, route.name)


async def attach(turn: Turn, ctx: TurnContext) -> None:
    """The question's files, and those its thread keeps (agent/turn/files.py); a turn with none
    never enters that module."""
    req = turn.request
    if req.attachments or (ctx.files is not None and (req.surface, req.thread_id) in ctx.files.kept):
        await files.attach(turn, ctx)


STAGES: tuple[Stage, ...] = (check, attach, recall, read, classify, retrieve, respond)
CONFIRMED: tuple[Stage, ...] = (check, recall, act, respond)  # a request that carries the asker's decision
ACTION_ROUTE = ACTED  # a decision's answer when no capability owns the tool: no feedback buttons


# --------------------------------------------------------------------------- helpers


def router(turn: Turn, ctx: TurnContext) -> CountedModel | None:
    """The router model, its calls counted in the turn's ledger."""
    return CountedModel(ctx.models.router, turn.ledger) if ctx.models.router is not None else None


async def identity(turn: Turn, ctx: TurnContext) -> Identity:
    """What askdesk says it is about, loaded once the turn needs it (a refusal, a greeting, a
    model's prompt): a search-only answer never does."""
    if turn.identity is None:
        turn.identity = await ctx.identities.load(ctx.collection)
    return turn.identity


def result(turn: Turn, **fields) -> AnswerResult:
    """The turn's answer with what every answer says about its route (its public name)."""
    route = turn.route
    assert route is not None, "an answer needs the turn's route"
    match route:
        case Use(rewritten=True):
            rewritten: str | None = route.searched
        case _:
            rewritten = None
    return AnswerResult(route=route_name(route), rewritten_query=rewritten, **fields)


def search_only_notice(ctx: TurnContext) -> str | None:
    """Why answers are search-only, in the turn's language."""
    return ctx.models.said() if ctx.models.said is not None else ctx.models.notice


async def search_only(turn: Turn, ctx: TurnContext, notice: str | None, *, unanswerable: bool = False) -> AnswerResult:
    """The route's capability answers from what it found, without a model, having read it
    closely (`Capability.read_closely`). A knowledge answer has one lead-in line, chosen from
    the evidence (`unanswerable`: the documents do not support an answer; the route's
    `borderline`: the message may be outside them)."""
    found = turn.found[0] if turn.found else None
    capability: Capability | None = None
    borderline = False
    match turn.route:
        case Use(capability=capability, borderline=borderline) if capability is ctx.knowledge:
            found = files.with_files(turn, found) if turn.attached else found
        case Use(capability=capability, borderline=borderline):
            pass
        case Act(capability=capability):
            pass
    if capability is not None and found is not None:
        try:  # within the turn's deadline; past it, the answer is written from the search as it is
            async with asyncio.timeout(remaining()):
                found = await capability.read_closely(found)
        except TimeoutError:
            log.info("search-only answer: no time left to read what was found closely")
    if capability is ctx.knowledge and capability is not None:
        shown = ctx.knowledge.answer(found, ctx.prompts, borderline=borderline, unanswerable=unanswerable)
    else:
        shown = answer_without_model(capability, found, ctx.prompts)
        if borderline:  # another capability's text has no lead-in of its own: the note heads it
            shown.text = f"{ctx.prompts.render('borderline_note')}\n\n{shown.text}"
    data = {f.tool: [f.result.data] for f in turn.found if f.result.data is not None}
    answer = result(turn, answer=shown.text, references=shown.references, search_only=True, notice=notice,
                    tool_calls=[f.tool for f in turn.found], data=data)
    # nothing found at all says so already; else the calibrated judgement
    answer.unanswerable = capability is ctx.knowledge and (unanswerable or not shown.references)
    return answer


async def search_in_reserve(turn: Turn, ctx: TurnContext) -> list[Found]:
    from agent.deadline import reserve

    async with asyncio.timeout(reserve(ctx.settings.turn_timeout)):
        return await search(turn, ctx)
