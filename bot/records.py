"""What feedback on a delivered answer is stored with: its route, sources, who asked it and
(only with `store_text`, never for a private answer) the question, by answer id and by the
delivered message in its conversation. Who asked is what the buttons under it are checked
against (bot/permissions.py).

Slack's buttons carry the answer id; Teams' feedback invoke carries only the rated message's
id, which is unique within its conversation only, so messages are keyed by both. Kept in the
state store, so a 👍 that reaches another replica finds its answer; old records expire
(agent/state/sweep.py).
"""

from __future__ import annotations

from dataclasses import replace

from agent.state import AnswerRecord
from agent.state import AnswerRecords as AnswerRecordStore  # the state store's role (agent/state/base.py)

__all__ = ["AnswerRecord", "AnswerRecords"]


class AnswerRecords:
    def __init__(self, state: AnswerRecordStore, *, store_text: bool) -> None:
        self.state = state
        self.store_text = store_text

    async def remember(self, record: AnswerRecord, *, conversation: str | None = None,
                       message_id: str | None = None) -> None:
        if not self.store_text or record.private:  # a private question is kept nowhere
            record = replace(record, question=None)
        await self.state.remember_answer(record, conversation=conversation, message_id=message_id)

    async def get(self, answer_id: str | None) -> AnswerRecord | None:
        return await self.state.answer_record(answer_id) if answer_id else None

    async def by_message(self, conversation: str | None, message_id: str | None) -> AnswerRecord | None:
        if not conversation or not message_id:
            return None
        return await self.state.answer_by_message(conversation, message_id)
