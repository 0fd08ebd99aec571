"""Follow-ups without a model, on the whole sample KB: the less a message says on its own, the
more its thread's context counts, and a full new question is not dragged to the old topic.
Threads from examples/texas-childcare/eval/fresh3.yaml (written before the change)."""

from __future__ import annotations

import pytest

from agent.evaluation import conversations
from agent.messages import ChatMessage
from agent.understanding.wording import heuristic_rewrite, own_terms
from agent.understanding.classify import context_weight
from agent.yamlio import safe_load
from tests.conftest import REPO
from tests.knowledge_fixtures import open_runtime, service_on

FRESH3 = safe_load((REPO / "examples" / "texas-childcare" / "eval" / "fresh3.yaml").read_text(encoding="utf-8"))
THREADS = {c["id"]: c for c in FRESH3["conversations"]}


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def test_a_message_that_says_little_alone_leans_on_its_thread():
    assert own_terms("and two-star ones?") == 3  # two, star, one: not the joined "twostar"/"staron"
    # a word with accents or tone marks is one word, not two (itself and its accent-free spelling):
    # a short Spanish or Vietnamese follow-up says as little as an English one
    assert own_terms("¿cuántos días de vacaciones?") == 3
    assert own_terms("bệnh mãn tính có tính không?") == 3
    weights = [context_weight(t) for t in ("who runs it?", "and two-star ones?", "what are those people supposed to focus on?",
                                           "what are the four age groups in the market rate survey?")]
    assert weights == sorted(weights, reverse=True) and weights[0] > 2 and weights[-1] == 1.0


def test_a_short_earlier_follow_up_is_not_the_question_later_ones_lean_on():
    history = [user("how often does Texas have to do the child care market rate survey?"), user("who runs it?")]
    query = heuristic_rewrite("which providers are left out of it?", history)
    assert query.startswith("how often does Texas have to do the child care market rate survey?")
    # a full question in between is the new anchor (a topic switch)
    history.append(user("how long does the resume builder wizard on WorkInTexas take?"))
    assert heuristic_rewrite("and the registration?", history).startswith("how long does the resume builder")


@pytest.mark.timeout(900)  # shares the session's full-KB ingest with test_knowledge_eval
async def test_elliptical_follow_ups_find_the_threads_topic_and_a_topic_switch_is_not_dragged(kb_settings):
    # f3c05: "who runs it?" then "which providers are left out of it?" (missed before: the second
    # leaned on "who runs it?"); f3c06: "and probation B?"; f3c03 and f3c11 end with a topic switch.
    threads = [THREADS[i] for i in ("f3c05", "f3c06", "f3c03", "f3c11")]
    async with open_runtime(kb_settings) as rt, service_on(rt) as service:
        result = await conversations.evaluate(threads, service, top_k=5)
    assert result["failures"] == [] and result["n"] == 11, result
    assert result["queries"]["f3c05#3"].split(" || ")[1].startswith("how often does Texas")
