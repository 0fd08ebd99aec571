"""Answers stream into Teams personal chats as the model writes them (the real Teams SDK
stream against the recording fake Bot Connector, the real openai SDK reading paced
server-sent events); channels get one final message."""

from __future__ import annotations

from tests.test_teams_bot import (  # noqa: F401  (fixtures)
    AGENT,
    KB_DOC,
    connector,
    final,
    llm,
    make_bot,
)
from tests.fakes.teams_connector import channel_conversation, personal_conversation

ANSWER = " ".join(
    f"Sentence {i} explains the income limit for a family of {i + 2} and what counts as income [1]."
    for i in range(8))


def text_updates(connector, conversation: str) -> list:
    return [c for c in connector.calls_in(conversation) if c.stream_type == "streaming" and c.text]


async def test_personal_chat_shows_the_answer_before_the_model_finishes(make_bot, connector, llm):
    llm.set_stream_pace(AGENT, first_token=0.2, tokens_per_s=150)  # ~0.2 + 1.2 s for this answer
    llm.script(AGENT, final(ANSWER, KB_DOC))
    teams = await make_bot()
    conversation = personal_conversation("29:user-stream")
    await teams.say("what is the income limit?", conversation=conversation, user="29:user-stream")
    await teams.bot.drain()

    [answer] = connector.sent_messages(conversation["id"])
    assert answer["text"] == ANSWER  # the final message carries the whole answer
    [request] = llm.requests_for(AGENT)  # one model call
    updates = text_updates(connector, conversation["id"])
    assert updates and updates[0].at < request.chunks[-1][0] - 0.5  # text long before the model ended
    assert all(ANSWER.startswith(u.text) for u in updates)  # each update: the answer so far
    assert len(updates) <= 4  # batched to about one a second, not one per token


async def test_channel_gets_one_final_message(make_bot, connector, llm):
    llm.set_stream_pace(AGENT, first_token=0.05, tokens_per_s=400)
    llm.script(AGENT, final(ANSWER, KB_DOC))
    teams = await make_bot()
    thread = channel_conversation("1800000000900")
    await teams.say("what is the income limit?", conversation=thread, mention=True, user="29:user-ch")
    await teams.bot.drain()

    [answer] = connector.sent_messages(thread["id"])
    assert answer["text"] == ANSWER
    assert not any(c.stream_type for c in connector.calls_in(thread["id"]))  # no stream in channels


async def test_the_answer_flows_into_teams_about_once_a_second_without_freezing(make_bot, connector, llm):
    """Issue 20 on Teams: new text about once a second while the model writes (40 tokens/s; never
    a gap of 2 s, as on Slack), never more than one stream update a second after the first text
    (the Teams throttle)."""
    llm.set_stream_pace(AGENT, first_token=0.3, tokens_per_s=40)
    llm.script(AGENT, final(ANSWER, KB_DOC))
    teams = await make_bot()
    conversation = personal_conversation("29:user-flow")
    await teams.say("what is the income limit?", conversation=conversation, user="29:user-flow")
    await teams.bot.drain()

    [answer] = connector.sent_messages(conversation["id"])
    assert answer["text"] == ANSWER
    [request] = llm.requests_for(AGENT)
    model_done = request.chunks[-1][0]
    times = [u.at for u in text_updates(connector, conversation["id"])]
    writing = [t for t in times if t <= model_done]
    assert len(writing) >= 4, writing
    gaps = [b - a for a, b in zip(writing, writing[1:] + [model_done])]
    assert max(gaps) < 2.0, gaps
    # <= 1 a second after the first text (what follows the model's end is the SDK closing the
    # stream: its last chunk and the final message go together)
    assert all(b - a >= 1.0 for a, b in zip(writing[1:], writing[2:])), writing
    for update in text_updates(connector, conversation["id"])[1:len(writing) - 1]:
        assert update.text[-1] in " .\n", update.text  # whole words
