"""A model's answer that quotes a table reaches Slack as a table block, every row whole,
through the real Bolt app and the fake Web API (issue 34: the same rendering as search-only)."""

from __future__ import annotations

import json

from tests.test_slack_bot import (  # noqa: F401  (fixtures)
    AGENT,
    KB_DOC,
    bot_messages,
    fake_slack,
    final,
    llm,
    make_bot,
)

TABLE = "\n".join(["| Family size | Bi-weekly limit |", "|---|--:|",
                   *(f"| {n} | ${2000 + 350 * n:,} |" for n in range(1, 13))])
ANSWER = f"The limits by family size [1]:\n\n{TABLE}\n\nA family of 5 earns at most $3,750 bi-weekly [1]."


async def test_a_posted_model_answer_with_a_table_has_a_table_block_in_its_place(make_bot, fake_slack, llm):
    llm.script(AGENT, final(ANSWER, KB_DOC))
    slack = await make_bot(slack_streaming=False)
    ts = "1700034000.000100"
    await slack.mention("income limits by family size?", ts=ts)
    await slack.bot.drain()
    [reply] = bot_messages(fake_slack, "C0001", ts)
    kinds = [b["type"] for b in reply["blocks"]]
    assert kinds[:3] == ["markdown", "table", "markdown"] and kinds.count("table") == 1
    rows = [[c["text"] for c in row] for row in reply["blocks"][1]["rows"]]
    assert rows[0] == ["Family size", "Bi-weekly limit"] and len(rows) == 13 and rows[-1] == ["12", "$6,200"]
    assert reply["blocks"][1]["column_settings"][1]["align"] == "right"
    assert "|---" not in json.dumps(reply["blocks"]) and "$3,750" in reply["blocks"][2]["text"]
