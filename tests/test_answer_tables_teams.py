"""An answer that quotes a table reaches Teams as one Adaptive Card whose card `Table` has every
row whole, through the real Teams SDK app and the fake Bot Connector (issue 34)."""

from __future__ import annotations

import json

from tests.fakes.teams_connector import group_conversation, personal_conversation
from tests.test_answer_tables_slack import ANSWER
from tests.test_teams_bot import KB_DOC, connector, final, llm, make_bot  # noqa: F401  (fixtures)
from tests.test_teams_bot import AGENT


def card_tables(message: dict) -> list[dict]:
    cards = [a["content"] for a in message.get("attachments") or []
             if a.get("contentType") == "application/vnd.microsoft.card.adaptive"]
    return [item for card in cards for item in card["body"] if item["type"] == "Table"]


def cell_texts(table: dict) -> list[list[str]]:
    return [[cell["items"][0]["text"] for cell in row["cells"]] for row in table["rows"]]


async def test_a_group_chat_answer_with_a_table_is_one_card_with_every_row(make_bot, connector, llm):
    llm.script(AGENT, final(ANSWER, KB_DOC))
    teams = await make_bot()
    group = group_conversation()
    await teams.say("income limits by family size?", conversation=group, mention=True)
    await teams.bot.drain()
    [answer] = connector.sent_messages(group["id"])
    [table] = card_tables(answer)
    rows = cell_texts(table)
    assert rows[0] == ["Family size", "Bi-weekly limit"] and len(rows) == 13 and rows[-1] == ["12", "$6,200"]
    assert table["firstRowAsHeaders"] is True
    texts = json.dumps(answer["attachments"])
    assert "|---" not in texts and "$3,750" in texts and "AIGeneratedContent" in json.dumps(answer.get("entities"))


async def test_a_streamed_answer_with_a_table_ends_as_the_card(make_bot, connector, llm):
    llm.script(AGENT, final(ANSWER, KB_DOC))
    teams = await make_bot()
    conversation = personal_conversation()
    await teams.say("income limits by family size?", conversation=conversation)
    await teams.bot.drain()
    [answer] = connector.sent_messages(conversation["id"])  # the streamed text replaced by the final card
    assert answer["channelData"]["streamType"] == "final"
    [table] = card_tables(answer)
    assert len(cell_texts(table)) == 13
