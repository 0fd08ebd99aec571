"""What feedback on a delivered answer is stored with: its route, sources and (only with
`store_text`) the question, by answer id and by the delivered message in its conversation.

Slack's buttons carry the answer id; Teams' feedback invoke carries only the rated message's
id, which is unique within its conversation only, so messages are keyed by both. Bounded: a
long-running bot's memory stays flat (bot/cache.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from bot.cache import bounded

RECORDS_KEPT = 5000


@dataclass(frozen=True)
class AnswerRecord:
    answer_id: str
    route: str
    sources: list[str] = field(default_factory=list)
    question: str | None = None


class AnswerRecords:
    def __init__(self, *, store_text: bool, maxsize: int = RECORDS_KEPT) -> None:
        self.store_text = store_text
        self._by_answer = bounded(maxsize)
        self._by_message = bounded(maxsize)

    def remember(self, record: AnswerRecord, *, conversation: str | None = None, message_id: str | None = None) -> None:
        if not self.store_text:
            record = replace(record, question=None)
        self._by_answer[record.answer_id] = record
        if conversation and message_id:
            self._by_message[(conversation, message_id)] = record.answer_id

    def get(self, answer_id: str | None) -> AnswerRecord | None:
        return self._by_answer.get(answer_id or "")

    def by_message(self, conversation: str | None, message_id: str | None) -> AnswerRecord | None:
        answer_id = self._by_message.get((conversation or "", message_id or ""))
        return self.get(answer_id)
