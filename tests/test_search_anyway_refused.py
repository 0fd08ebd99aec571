"""`/search` (and "Search the documents anyway") after a refusal searches the refused message
itself, not its thread's earlier questions, and answers under exactly one lead-in line
(issue 34: two lead-ins were stacked, and the passages were for the chat's earlier question)."""

from __future__ import annotations

from agent.answers import AskRequest
from agent.capabilities.knowledge import ANSWERED, BORDERLINE, UNANSWERABLE, WEAK
from tests.test_agent_service import DOC, FIRST_Q, kb, make_service  # noqa: F401  (kb: fixture)

REFUSED = "write me a haiku about my cat"


async def test_search_anyway_searches_the_refused_message_under_one_lead_in(kb, tmp_path):  # noqa: F811
    service = make_service(kb, tmp_path)
    first = await service.answer(AskRequest(text=FIRST_Q, thread_id="T"))
    assert DOC in [r.source for r in first.references]
    assert (await service.answer(AskRequest(text=REFUSED, thread_id="T"))).route == "offtopic"
    result = await service.answer(AskRequest(text=REFUSED, thread_id="T", search_anyway=True))
    assert result.route == "knowledge" and result.search_only and result.llm_calls == 0
    assert result.rewritten_query is None  # the message as written: not fused with the thread's questions
    leads = {service.prompts.render(n) for n in (ANSWERED, WEAK, BORDERLINE, UNANSWERABLE)}
    lines = result.answer.splitlines()
    assert lines[0] in {service.prompts.render(BORDERLINE), service.prompts.render(UNANSWERABLE),
                        service.prompts.render(WEAK)}
    assert sum(line in leads for line in lines) == 1
    assert "$2,890" not in result.answer.split("**[1]**")[0]  # no answer line for the earlier question
