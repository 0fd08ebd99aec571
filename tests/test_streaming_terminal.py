"""`askdesk chat` draws the answer while the model writes it (rich Live on a terminal);
`askdesk ask --json` still prints the whole result."""

from __future__ import annotations

import json

from rich.console import Console

from agent.config import Settings
from agent.turn.service import Askdesk
from bot.commands import chat
from tests.fakes.screen import Screen
from tests.test_cli_chat import DOC, FIRST_Q, data_dir, kb_data  # noqa: F401  (fixtures)

ANSWER = " ".join(f"Point {i}: a family of {i + 2} qualifies below the listed monthly income." for i in range(6))


def final_step(answer: str) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer, "references": [{"source": DOC}], "confidence": 0.9}}


async def test_chat_draws_the_answer_before_the_model_finishes(llm_server, data_dir, monkeypatch):
    llm_server.set_stream_pace("openai", first_token=0.2, tokens_per_s=120)
    llm_server.script("openai", final_step(ANSWER))
    screen = Screen()
    console = Console(file=screen, force_terminal=True, width=100, color_system=None)
    monkeypatch.setattr(chat, "_console", lambda stderr=False: console)
    settings = Settings(data_dir=data_dir, agent_model="openai/gpt-4.1-mini", router_model="openai/gpt-4.1-mini")
    service = Askdesk.create(settings)
    try:
        await chat._chat_loop(settings, "t-stream", [FIRST_Q], service=service)
    finally:
        await service.close()

    [request] = llm_server.requests  # routed by the pre-filter: one model call, streamed
    assert screen.first("Point 0") < request.chunks[-1][0] - 0.3
    output = screen.getvalue()
    assert "Point 5: a family of 7 qualifies below the listed monthly income." in output
    assert output.count("Sources") == 1 and "llm calls=1" in output


async def test_ask_json_returns_the_whole_result(llm_server, data_dir, capsys):
    llm_server.script("openai", final_step(ANSWER))
    settings = Settings(data_dir=data_dir, agent_model="openai/gpt-4.1-mini", router_model="openai/gpt-4.1-mini")
    assert await chat._ask_once(settings, FIRST_Q, "t-json", True) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["answer"] == ANSWER and result["llm_calls"] == 1
    assert llm_server.requests[0].body.get("stream") is not True  # nothing to stream to: one whole response
