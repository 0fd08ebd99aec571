"""Tools that change something are safe by construction (agent/tools/actions.py): such a call
is proposed, never run, until its asker confirms exactly what they were shown; then it runs
once, with those arguments, and its result is answered. At the service, on Slack (buttons
through the fake Web API), and in the terminal chat (y/N)."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from agent.answers import Confirmation
from agent.capabilities.base import Capability
from agent.capabilities.knowledge import KnowledgeCapability
from agent.capabilities.loader import capabilities_from
from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.plugins import Registrar
from agent.providers.function import ScriptedModel
from agent.providers.models import ServiceModels
from agent.runtime import Runtime
from agent.state.memory import MemoryState
from agent.tools.actions import Actions
from agent.tools.base import ConfirmationRequired, Confirmed, Tool, ToolRegistry, ToolResult
from agent.tools.provided import ProvidedTool
from agent.turn.service import Askdesk, AskRequest
from tests.crash_child import EMBEDDER, HashEmbedder
from tests.fakes.steps import final, tool_calls

ASKED = "please file a ticket: the printer on floor 3 is jammed"
FILE = ("file_ticket", {"title": "Printer jam", "floor": 3})


class TicketArgs(BaseModel):
    title: str
    floor: int | None = None


class Tickets(Capability):
    """A helpdesk: one tool that reads (status) and one that changes something (file)."""

    name = "tickets"
    description = "filing or checking a helpdesk ticket"

    def __init__(self, runtime=None) -> None:
        super().__init__(runtime)
        self.filed: list[dict] = []

    def tools(self) -> list[Tool]:
        return [Tool("file_ticket", TicketArgs, self.file, progress="Filing a ticket…", reads_only=False),
                Tool("ticket_status", TicketArgs, self.status)]

    async def file(self, args: TicketArgs) -> ToolResult:
        """File a helpdesk ticket."""
        self.filed.append(args.model_dump())
        return ToolResult(text=f"Ticket T-{len(self.filed)} filed: {args.title}")

    async def status(self, args: TicketArgs) -> ToolResult:
        """How a ticket stands."""
        return ToolResult(text="open")


class Eager(Tickets):
    """Claims ticket messages and tries to file one before the model: it must not run."""

    name = "eager"

    def claims(self, text: str) -> bool:
        return "ticket" in text

    async def prefetch(self, query: str, *, model=None):
        await self.tools()[0]({"title": query})  # ConfirmationRequired: nothing is filed


def registrar(*kinds: type[Capability]) -> Registrar:
    r = Registrar()
    r.capability(KnowledgeCapability)
    for kind in kinds:
        r.capability(kind)
    return r


@pytest.fixture
async def runtime(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "it.md").write_text("# IT help\n\nPrinters are serviced on Mondays. Tickets go to the helpdesk.\n",
                                encoding="utf-8")
    rt = Runtime.open(Settings(data_dir=tmp_path / "data", embedder=EMBEDDER, embedding_cache=False))
    rt._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    await ingest(rt, [docs])
    yield rt
    await rt.close()


def service(runtime, model, *kinds: type[Capability]) -> Askdesk:
    with capabilities_from(registrar(*(kinds or (Tickets,)))):
        return Askdesk(runtime.settings, runtime, state=MemoryState(),
                       models=ServiceModels(router=None, agent=model, notice=None))


def tickets(askdesk: Askdesk, name: str = "tickets") -> Tickets:
    found = askdesk.capabilities().get(name)
    assert isinstance(found, Tickets)
    return found


def decide(result, user: str = "u1", confirmed: bool = True) -> AskRequest:
    return AskRequest(text=result.action.question, user_id=user,
                      confirmation=Confirmation(action=result.action, confirmed=confirmed))


# ----------------------------------------------------------------------------- the service


async def test_a_changing_call_is_proposed_with_its_arguments_and_nothing_runs(runtime):
    model = ScriptedModel(tool_calls(FILE, ("ticket_status", {"title": "x"})))
    askdesk = service(runtime, model)
    result = await askdesk.answer(AskRequest(text=ASKED, user_id="u1"))
    model.assert_done()  # the turn ended with the proposal: no second model call
    assert tickets(askdesk).filed == []  # neither call of the step ran, not even the one that reads
    assert result.action is not None and result.action.asker == "u1" and result.action.question == ASKED
    assert [(c.tool, c.arguments) for c in result.action.calls] == [FILE]
    assert '`file_ticket` with `{"title": "Printer jam", "floor": 3}`' in result.answer
    assert "Nothing has been changed yet." in result.answer and result.llm_calls == 1
    assert result.to_json()["action"]["calls"] == [{"tool": "file_ticket", "arguments": FILE[1]}]
    # the model is told the tool waits for the asker
    assert "file_ticket" in model.calls[0].messages[0].content and "runs only after the asker confirms" in \
        model.calls[0].messages[0].content
    await askdesk.close()


async def test_confirmed_it_runs_once_with_exactly_the_arguments_shown_and_is_answered(runtime):
    model = ScriptedModel(tool_calls(FILE), final("Filed ticket T-1 for the printer jam."))
    askdesk = service(runtime, model)
    proposed = await askdesk.answer(AskRequest(text=ASKED, user_id="u1"))
    done = await askdesk.answer(decide(proposed))
    model.assert_done()
    assert tickets(askdesk).filed == [{"title": "Printer jam", "floor": 3}]
    assert done.answer == "Filed ticket T-1 for the printer jam." and done.route == "tickets"
    assert done.tool_calls == ["file_ticket"] and done.action is None
    answered_from = model.calls[1].messages
    assert any(m.role == "tool" and m.name == "file_ticket" and "Ticket T-1 filed: Printer jam" in m.content
               for m in answered_from)
    again = await askdesk.answer(decide(proposed))  # pressed twice: decided once
    assert again.answer.startswith("This was decided already") and tickets(askdesk).filed == [FILE[1]]
    await askdesk.close()


async def test_only_the_asker_decides_and_only_what_askdesk_proposed(runtime):
    model = ScriptedModel(tool_calls(FILE), final("Filed."))
    askdesk = service(runtime, model)
    proposed = await askdesk.answer(AskRequest(text=ASKED, user_id="u1"))
    other = await askdesk.answer(decide(proposed, user="u2"))
    assert other.answer.startswith("Only the person who asked") and tickets(askdesk).filed == []
    edited = proposed.action.model_copy(deep=True)
    edited.calls[0].arguments["title"] = "Delete every ticket"
    forged = await askdesk.answer(AskRequest(text=ASKED, user_id="u1",
                                             confirmation=Confirmation(action=edited, confirmed=True)))
    assert forged.answer.startswith("This request has expired or is unknown") and tickets(askdesk).filed == []
    assert (await askdesk.answer(decide(proposed))).answer == "Filed."  # the real one is still open
    assert tickets(askdesk).filed == [FILE[1]]
    await askdesk.close()


async def test_cancelled_nothing_runs_and_a_later_confirm_is_refused(runtime):
    model = ScriptedModel(tool_calls(FILE))
    askdesk = service(runtime, model)
    proposed = await askdesk.answer(AskRequest(text=ASKED, user_id="u1"))
    cancelled = await askdesk.answer(decide(proposed, confirmed=False))
    assert cancelled.answer == "Cancelled: nothing was changed." and cancelled.route == "action"
    assert (await askdesk.answer(decide(proposed))).answer.startswith("This was decided already")
    assert tickets(askdesk).filed == [] and len(model.calls) == 1
    await askdesk.close()


async def test_a_proposal_expires():
    state, registry = MemoryState(), ToolRegistry()
    capability = Tickets()
    for tool in capability.tools():
        registry.register(tool)
    actions = Actions(state, registry, ttl_s=0.05)
    from agent.answers import ProposedCall
    from agent.prompts import default_prompts

    _, action = await actions.propose([ProposedCall(tool=FILE[0], arguments=FILE[1])], AskRequest(text=ASKED, user_id="u1"),
                                      ASKED, default_prompts())
    await asyncio.sleep(0.1)
    assert await actions.decide(Confirmation(action=action, confirmed=True), "u1") == "action_unknown"
    assert capability.filed == []


async def test_a_changing_tool_never_runs_without_a_confirmation_of_that_very_call():
    capability = Tickets()
    tool = capability.tools()[0]
    with pytest.raises(ConfirmationRequired):
        await tool(FILE[1])
    with pytest.raises(ConfirmationRequired):  # confirmed, but with other arguments
        await tool(FILE[1], confirmed=Confirmed("file_ticket", {"title": "Something else"}))
    registry = ToolRegistry()
    registry.register(tool)
    refused = await registry.run(*FILE)
    assert refused.text.startswith("NOT RUN: file_ticket changes something") and capability.filed == []
    assert (await tool(FILE[1], confirmed=Confirmed(*FILE))).text == "Ticket T-1 filed: Printer jam"
    # a provider's tool (an MCP server's) that changes something is the same kind of tool
    provided = ProvidedTool("srv__drop", TicketArgs, capability.file, provider="mcp:srv", reads_only=False)
    registry.register(provided)
    registry.register(capability.tools()[1])
    assert registry.changes("srv__drop") and not registry.changes("ticket_status") and not registry.changes("absent")


async def test_a_prefetch_cannot_run_a_changing_tool(runtime):
    model = ScriptedModel(final("unused"))
    askdesk = service(runtime, model, Eager)
    result = await askdesk.answer(AskRequest(text=ASKED, user_id="u1"))
    assert tickets(askdesk, "eager").filed == [] and result.action is None
    assert "reference" in result.answer  # the capability's bug is the turn's apology, nothing filed
    await askdesk.close()


# ----------------------------------------------------------------------------- Slack


from tests.test_slack_bot import AGENT, bot_messages, fake_slack, llm, make_bot  # noqa: E402,F401


def confirm_buttons(fake, channel: str, thread: str) -> dict[str, dict]:
    return {b["action_id"]: b for m in bot_messages(fake, channel, thread) for block in m.get("blocks") or []
            if block.get("block_id") == "askdesk_confirm" for b in block["elements"]}


async def test_slack_confirm_button_runs_it_for_the_asker_only(make_bot, fake_slack, llm):
    with capabilities_from(registrar(Tickets)):
        slack = await make_bot()
    askdesk = slack.bot.services.askdesk
    ts = "1700006000.000100"
    llm.script(AGENT, tool_calls(FILE))
    await slack.mention(ASKED, ts=ts)
    await slack.bot.drain()
    proposal, buttons_message = bot_messages(fake_slack, "C0001", ts)
    assert "`file_ticket`" in proposal["text"] and "feedback_up" not in json.dumps(proposal["blocks"])
    buttons = confirm_buttons(fake_slack, "C0001", ts)
    assert set(buttons) == {"action_confirm", "action_cancel"} and tickets(askdesk).filed == []
    assert json.loads(buttons["action_confirm"]["value"])["calls"] == [{"tool": "file_ticket", "arguments": FILE[1]}]

    # someone else presses Confirm: a note only they see, nothing runs
    await slack.click("action_confirm", buttons["action_confirm"]["value"], user="U0002", message_ts=buttons_message["ts"],
                      thread_ts=ts, message=buttons_message)
    await slack.bot.drain()
    note = fake_slack.calls_to("chat.postEphemeral")[-1].args
    assert note["user"] == "U0002" and "Only the person who asked" in note["text"] and tickets(askdesk).filed == []

    llm.script(AGENT, final("Done: ticket T-1 is filed for the printer jam."))
    await slack.click("action_confirm", buttons["action_confirm"]["value"], message_ts=buttons_message["ts"],
                      thread_ts=ts, message=buttons_message)
    await slack.bot.drain()
    assert tickets(askdesk).filed == [FILE[1]]
    answer = bot_messages(fake_slack, "C0001", ts)[-1]
    assert "ticket T-1 is filed" in answer["text"] and answer["thread_ts"] == ts
    assert "file_ticket" in llm.requests_for(AGENT)[-1].text  # answered from the tool's result
    replaced = [c.args for c in fake_slack.calls if c.method.startswith("response_url")]
    assert replaced and replaced[-1]["replace_original"] and "Confirm" in replaced[-1]["text"]  # buttons gone


# ----------------------------------------------------------------------------- the terminal


async def test_terminal_asks_y_n_and_runs_it_on_y(runtime, monkeypatch, capsys):
    from bot.commands import chat

    model = ScriptedModel(tool_calls(FILE), final("Filed T-1."), tool_calls(FILE))
    askdesk = service(runtime, model)
    lines = iter([ASKED, "y", ASKED, "n"])

    async def read_line(console, prompt: str) -> str:
        print(prompt)
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr(chat, "_read_line", read_line)
    await chat._chat_loop(askdesk.settings, "t1", service=askdesk)
    out = capsys.readouterr().out
    model.assert_done()
    assert out.count("Run it?") == 2 and "Filed T-1." in out and "Cancelled: nothing was changed." in out
    assert tickets(askdesk).filed == [FILE[1]]  # y ran it once; n ran nothing
    await askdesk.close()


# ----------------------------------------------------------------------------- Teams


from tests.fakes.teams_connector import channel_conversation  # noqa: E402
from tests.test_escalation_teams import actions, press  # noqa: E402
from tests.test_teams_bot import connector, make_bot as make_teams_bot  # noqa: E402,F401


async def test_teams_confirm_card_runs_it_for_the_asker_only(make_teams_bot, connector, llm):
    with capabilities_from(registrar(Tickets)):
        teams = await make_teams_bot()
    askdesk = teams.bot.askdesk
    chain = channel_conversation("1700030000001")
    llm.script(AGENT, tool_calls(FILE))
    await teams.say(ASKED, conversation=chain, mention=True)
    await teams.bot.drain()
    [proposal] = connector.sent_messages(chain["id"])
    buttons = {b["data"]["askdesk"]: b for b in actions(proposal)}
    assert "`file_ticket`" in proposal["text"] or "file_ticket" in proposal["text"]
    assert set(buttons) == {"action_confirm", "action_cancel"} and tickets(askdesk).filed == []
    assert buttons["action_confirm"]["title"] == "Confirm" and not any(
        b["data"].get("askdesk") in ("feedback", "search_anyway") for b in actions(proposal))

    await press(teams, buttons["action_confirm"]["data"], chain, user="29:user-bob", user_name="Bob")
    assert tickets(askdesk).filed == [] and len(llm.requests_for(AGENT)) == 1  # not the asker: nothing ran

    llm.script(AGENT, final("Done: ticket T-1 is filed."))
    await press(teams, buttons["action_confirm"]["data"], chain)
    assert tickets(askdesk).filed == [FILE[1]]
    assert "ticket T-1 is filed" in connector.sent_messages(chain["id"])[-1]["text"]
    await press(teams, buttons["action_confirm"]["data"], chain)  # pressed again: decided once
    assert tickets(askdesk).filed == [FILE[1]] and "decided already" in connector.sent_messages(chain["id"])[-1]["text"]
