"""Teams surface pieces without a server: citation numbering, the AI label rule, the
`facility` prefix, mention parsing and the pacing of stream updates."""

from __future__ import annotations

import asyncio

from microsoft_teams.api import MessageActivity, MessageActivityInput

from agent.references import Reference
from agent.turn.service import AnswerResult
from bot.teams.commands import command_of
from bot.teams.incoming import parse
from bot.teams.render import answer_activity, used_markers
from tests.fakes.teams_connector import channel_conversation, message_activity

def root(activity) -> dict:
    body = activity.model_dump(by_alias=True, exclude_none=True)
    return next(e for e in body["entities"] if e.get("type") == "https://schema.org/Message")


REFS = [Reference(source=f"doc{i}.md", title=f"Document {i}", section="Part 2 > Income") for i in range(1, 4)]


def test_only_markers_that_point_at_a_reference_become_citations():
    text = "Yes [2], and also [1][2]. Not [4] or [0] or [12]."
    assert used_markers(text, REFS) == [1, 2]
    rendered = answer_activity(AnswerResult(answer=text, route="knowledge", references=REFS, llm_calls=1,
                                            confidence=0.9), notice=None, feedback=True, sources_heading="Sources")
    entity = root(rendered.activity)
    claims = {c["position"]: c["appearance"]["name"] for c in entity["citation"]}
    assert claims == {1: "Document 1", 2: "Document 2"}  # same numbering as the Slack sources list
    assert "AIGeneratedContent" in entity["additionalType"]
    assert "Sources" not in rendered.activity.text


def test_long_titles_are_clipped_to_teams_limits():
    long = Reference(source="x.md", title="T" * 200, section="S" * 400, url="file:///local/path")
    rendered = answer_activity(AnswerResult(answer="See [1].", route="knowledge", references=[long], llm_calls=1,
                                            confidence=0.5), notice=None, feedback=True, sources_heading="Sources")
    [claim] = root(rendered.activity)["citation"]
    assert len(claim["appearance"]["name"]) == 80 and len(claim["appearance"]["abstract"]) == 160
    assert claim["appearance"].get("url") is None  # only web links are clickable


def test_sources_line_when_the_answer_cites_nothing_inline_and_no_label_for_fixed_texts():
    rendered = answer_activity(AnswerResult(answer="Families qualify.", route="knowledge", references=REFS[:1],
                                            llm_calls=1, confidence=0.8), notice="Set X", feedback=True, sources_heading="Sources")
    assert "**Sources:** [1] Document 1" in rendered.activity.text and rendered.activity.text.endswith("_ℹ️ Set X_")
    refusal = answer_activity(AnswerResult(answer="Sorry, I can only help with…", route="offtopic", llm_calls=1),
                              notice=None, feedback=False, sources_heading="Sources")
    assert not refusal.feedback and not refusal.activity.entities  # no label, no feedback loop


def test_a_registry_command_typed_to_the_bot():
    from types import SimpleNamespace

    from tests.knowledge_fixtures import demo_registry_capability

    commands = demo_registry_capability().commands()
    bot = SimpleNamespace(askdesk=SimpleNamespace(commands=lambda: commands))

    def query(text):
        found = command_of(bot, text)
        return found[1] if found else None

    assert query("facility infant care near 78702") == "infant care near 78702"
    assert query("Facilities: pre-k in Austin") == "pre-k in Austin"
    assert query("/facility") == ""
    assert query("what facility rules apply to infants?") is None
    assert query("facilityless") is None


def test_mention_of_the_bot_is_stripped_but_other_mentions_stay():
    raw = message_activity("http://127.0.0.1:1/", "ask <at>Bea</at> about income", mention=True,
                           conversation=channel_conversation("1"))
    raw["entities"].append({"type": "mention", "text": "<at>Bea</at>", "mentioned": {"id": "29:bea", "name": "Bea"}})
    incoming = parse(MessageActivity.model_validate(raw))
    assert incoming.mentioned and incoming.scope == "channel"
    assert incoming.text == "ask Bea about income"


class RecordingStream:
    """HttpStream's surface: every update and text chunk is accepted (fires the chunk handlers)."""

    canceled = False

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.emitted: list = []
        self.handlers: list = []

    def on_chunk(self, handler) -> None:
        self.handlers.append(handler)

    def update(self, text: str) -> None:
        self.updates.append(text)
        for handler in self.handlers:
            asyncio.ensure_future(handler(None))

    def emit(self, activity) -> None:
        self.emitted.append(activity)
        if isinstance(activity, str):
            for handler in self.handlers:
                asyncio.ensure_future(handler(None))

    def clear_text(self) -> None:
        self.emitted.clear()

    async def close(self):
        class Sent:
            id = "stream-1"

        return Sent()


async def test_stream_updates_are_paced_and_a_waiting_one_is_dropped_when_the_answer_is_ready():
    from bot.teams.reply import StreamReply

    async def send(_):
        raise AssertionError("a streamed answer is not posted")

    stream = RecordingStream()
    reply = StreamReply(stream, send, on_refused=lambda: None)  # type: ignore[arg-type]
    await reply.start("Thinking…")
    await reply.progress("Searching the knowledge base…")  # within UPDATE_EVERY: waits
    assert stream.updates == ["Thinking…"]
    message_id = await reply.finish(MessageActivityInput(text="The answer [1]."))
    await asyncio.sleep(0.7)
    assert stream.updates == ["Thinking…"]  # dropped: the answer came first
    assert message_id == "stream-1" and stream.emitted[-1].text == "The answer [1]."


async def test_streamed_text_is_not_sent_twice():
    from bot.teams.reply import StreamReply

    stream = RecordingStream()
    reply = StreamReply(stream, None, on_refused=lambda: None)  # type: ignore[arg-type]
    await reply.start("Thinking…")
    await reply.append_text("The answer ")
    await reply.finish(MessageActivityInput(text="The answer [1]."))
    assert [getattr(a, "text", a) for a in stream.emitted] == ["The answer ", "[1]."]
