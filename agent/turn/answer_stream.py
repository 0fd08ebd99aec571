"""The answer's text as the model writes it: partial agent steps in, text deltas out.

Only a final answer's `answer` field is shown; tool-call steps produce no text. The
deltas pass through the citation filter (agent.turn.citations), so what a surface shows while
streaming is, character for character, the answer the turn ends with. `shown` is that
text so far — after a failure it is what the user already saw, kept and followed by a note.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import cached_property
from typing import Any

from agent.turn.citations import Citations, MarkerFilter
from agent.turn.steps import FinalAnswer

log = logging.getLogger("askdesk.stream")

# Surfaces pass this to receive the answer text as it grows (one call per new piece).
TextFn = Callable[[str], Awaitable[None]]


def answer_so_far(partial: Any) -> str | None:
    """The `answer` text of a partial agent step, or None for a tool-call step."""
    step = getattr(partial, "step", None)
    if isinstance(step, FinalAnswer):
        return step.answer
    if isinstance(step, dict):
        answer = step.get("answer")
        return answer if isinstance(answer, str) and step.get("kind") in (None, "final_answer") else None
    answer = getattr(step, "answer", None)
    return answer if isinstance(answer, str) else None


class AnswerText:
    """Feeds one turn's answer text to `sink` (None: nothing streams, the text is still built)."""

    def __init__(self, sink: TextFn | None, citations: Citations | None = None) -> None:
        self.sink = sink
        self._citations = citations
        self.shown = ""
        self._raw = ""  # the current model attempt's answer text consumed so far
        self._gap = ""  # paragraph break owed after a note, sent with the next text

    # made when a model first writes: a search-only answer numbers no citations
    @cached_property
    def citations(self) -> Citations:
        return self._citations if self._citations is not None else Citations()

    @cached_property
    def _filter(self) -> MarkerFilter:
        return MarkerFilter(self.citations)

    async def on_partial(self, partial: Any) -> bool:
        """Provider callback: True once any answer text reached the user."""
        text = answer_so_far(partial)
        if text is not None and text.startswith(self._raw) and len(text) > len(self._raw):
            delta, self._raw = text[len(self._raw):], text
            await self._send(self._filter.feed(delta))
        return bool(self.shown)

    async def finish(self, answer: str) -> str:
        """The final answer arrived: send what the partials did not carry; return the whole text."""
        if answer.startswith(self._raw):
            await self._send(self._filter.feed(answer[len(self._raw):]))
        self._raw = answer
        await self._send(self._filter.flush())
        return self.shown

    async def end_with(self, answer: str) -> str:
        """The turn's answer as the user saw it: once text was shown, a different answer (an
        apology, a search-only continuation) follows it as a note."""
        if self.shown and answer != self.shown:
            await self.note(answer)
            return self.shown
        return answer

    async def note(self, text: str) -> None:
        """An interruption: a note after what was shown; a following answer starts afresh."""
        if "_filter" in self.__dict__:  # a model wrote already
            self._filter.reset()
        self._raw = ""
        await self._send(("\n\n" if self.shown and not self._gap else "") + text.strip())
        self._gap = "\n\n"

    async def _send(self, text: str) -> None:
        if not text:
            return
        text, self._gap = self._gap + text, ""
        self.shown += text
        if self.sink is not None:
            try:
                await self.sink(text)
            except Exception:  # a surface's failure must not fail the model call: the answer still ends the turn
                log.exception("answer stream: the surface failed to take text; it gets the whole answer at the end")
                self.sink = None
