"""How one answer reaches Teams: a small renderer with start / progress / append_text /
finish, so the agent's progress and its token stream plug in the same way whatever the
conversation allows.

- `StreamReply` (personal chats): the SDK's stream (`HttpStream`, what `ctx.stream` is):
  informative updates ("Thinking…", "Searching the knowledge base…"), then the answer text
  as the model writes it (paced: the first words at once, then one update about every second
  with whole words — Teams throttles a stream to about one update a second), then
  close, which sends the final message with its entities (citations, AI label, feedback).
- `PostReply` (channels and group chats, where Teams does not allow streaming): a typing
  indicator, renewed on progress, then one message with the whole answer.

Informative updates are paced (at most one per UPDATE_EVERY seconds, the newest waiting
one wins, a waiting one is dropped when the answer is ready): the SDK throttles a stream
by queueing what arrives while it sends, and a queued final message would wait half a
second for nothing. A personal chat that refuses streaming (no first chunk accepted) falls
back to one posted message and is remembered, so the user always gets the answer and
never an error.

Everything shown is rendered by `teams_text` (bot/teams/escape.py): the final message by
bot/teams/render.py, the informative updates and the streamed text here. The stream shows the
rendering of the whole text so far (a link completed by a later chunk changes what came
before it, and the stream is then replaced, not appended to), so no chunk boundary can let a
half-written `<at>`, tag or disguised link through; a link still being written is held back
until it is complete.

An unreachable Bot Connector (bot/teams/connector.py) stops the sending at its first failure:
no more typing indicators or stream chunks for this answer, the final message is tried once,
and its failure is raised for `TeamsReply` to report as one line.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Awaitable, Callable, Protocol

from microsoft_teams.api import MessageActivityInput, SentActivity, TypingActivityInput
from microsoft_teams.apps import HttpStream

from bot.teams.connector import unreachable
from bot.teams.escape import teams_text
from bot.text_buffer import TextBuffer

log = logging.getLogger("askdesk.teams")

Send = Callable[[MessageActivityInput | TypingActivityInput], Awaitable[SentActivity]]

FIRST_CHUNK_WAIT = 5.0  # seconds for Teams to accept the first stream update before posting instead
CLOSE_WAIT = 35.0
UPDATE_EVERY = 0.6  # seconds between informative updates of one stream  # the SDK gives up closing after 30 s; never hang a turn longer
TYPING_EVERY = 2.5  # Teams shows a typing indicator for about 3 s
# Answer text reaches the stream through a TextBuffer: the first words at once, then one
# update about every STREAM_TEXT_SECONDS (each update resends the whole text so far, and Teams
# throttles a stream to one update a second: over it by enough that the SDK's own queue and a
# busy event loop never bring two within a second of each other; 1.05 s let two arrive 0.99 s
# apart on a loaded machine).
STREAM_TEXT_SECONDS = 1.2
# A Markdown link the model is still writing ("[label", "[label]", "[label](https://ev") is held
# back from the stream until it is complete (then shown with its address) or the answer ends.
_OPEN_LINK = re.compile(r"\[(?:[^\[\]\n]|\[[^\[\]\n]*\]){0,300}(?:\](?:\([^)\n]{0,500})?)?")


def settled(shown: str) -> str:
    """`shown` (rendered stream text) without a trailing link still being written."""
    end = len(shown)
    for _ in range(3):  # "[see [1" : the inner bracket first, then the outer
        start = shown.rfind("[", 0, end)
        if start < 0:
            break
        if _OPEN_LINK.fullmatch(shown, start):
            return shown[:start - 1] if start and shown[start - 1] == "!" else shown[:start]
        end = start
    return shown


class Renderer(Protocol):
    """How one answer is drawn in its conversation (`TeamsReply`, bot/teams/answer.py, drives it)."""

    async def start(self, text: str) -> None: ...

    async def progress(self, text: str) -> None: ...

    async def append_text(self, text: str) -> None: ...

    async def finish(self, activity: MessageActivityInput) -> str | None:
        """Send the final message; returns its activity id."""
        ...


class PostReply:
    """Typing indicator, then one message."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._typed_at = 0.0
        self.text = ""
        self.unreachable = False  # the connector could not be reached: no more typing indicators

    async def _typing(self) -> None:
        now = time.monotonic()
        if self.unreachable or now - self._typed_at < TYPING_EVERY:
            return
        self._typed_at = now
        try:
            await self._send(TypingActivityInput())
        except Exception as exc:  # a typing indicator is a courtesy, never a reason to fail
            if unreachable(exc):  # the answer's own delivery reports it (TeamsReply), once
                self.unreachable = True
                log.debug("teams: typing indicator not sent (%s)", type(exc).__name__)
            else:
                log.info("teams: typing indicator not sent (%s)", type(exc).__name__)

    async def start(self, text: str) -> None:
        await self._typing()

    async def progress(self, text: str) -> None:
        await self._typing()

    async def append_text(self, text: str) -> None:
        self.text += text  # channels cannot stream: the final message carries everything

    async def finish(self, activity: MessageActivityInput) -> str | None:
        sent = await self._send(activity)
        return sent.id


class StreamReply:
    """The SDK stream: informative updates, streamed text, a final message."""

    def __init__(self, stream: HttpStream, send: Send, on_refused: Callable[[], None]) -> None:
        self.stream = stream
        self._send = send
        self._on_refused = on_refused
        self._chunk_seen = asyncio.Event()
        self._updates = 0  # informative updates and text chunks handed to the stream
        self._chunks = 0  # stream activities Teams accepted
        self.raw = ""  # the answer text received so far, as the model wrote it
        self.streamed = ""  # what the stream shows: teams_text(raw) as of the last update
        self._updated_at = float("-inf")
        self._waiting: asyncio.TimerHandle | None = None
        self._waiting_text = ""
        self._done = False
        self.buffer = TextBuffer(self._emit_text, seconds=STREAM_TEXT_SECONDS)
        stream.on_chunk(self._chunk)
        if hasattr(stream, "on_failure"):  # QuietStream: the connector proved unreachable
            stream.on_failure(self._chunk_seen.set)

    @property
    def failure(self) -> Exception | None:
        return getattr(self.stream, "failure", None)

    async def _chunk(self, _: SentActivity) -> None:
        self._chunks += 1
        self._chunk_seen.set()

    def _inform(self, text: str) -> None:
        if self.streamed or self._done or self.failure is not None:  # informative updates only before the text
            return
        loop = asyncio.get_running_loop()
        wait = self._updated_at + UPDATE_EVERY - loop.time()
        if wait <= 0 and self._waiting is None:
            self._updated_at = loop.time()
            self._updates += 1
            self.stream.update(teams_text(text))
            return
        self._waiting_text = text
        if self._waiting is None:
            self._waiting = loop.call_later(max(wait, 0.0), self._release)

    def _release(self) -> None:
        self._waiting = None
        self._inform(self._waiting_text)

    def _drop_waiting(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
            self._waiting = None

    async def start(self, text: str) -> None:
        self._inform(text)

    async def progress(self, text: str) -> None:
        self._inform(text)

    async def append_text(self, text: str) -> None:
        """The answer as the model writes it (Askdesk.answer's `on_text`), batched."""
        self._drop_waiting()
        if not self._done:
            await self.buffer.add(text)

    async def _emit_text(self, text: str) -> None:
        if self.failure is not None:
            return
        raw = self.raw + text
        shown = settled(teams_text(raw))
        if shown == self.streamed:  # all of it held back (a link being written): nothing new to show
            self.raw = raw
            return
        try:
            if shown.startswith(self.streamed):
                self.stream.emit(shown[len(self.streamed):])
            else:  # the new text changed the rendering of the old (a link completed): replace it
                self.stream.clear_text()
                self.stream.emit(shown)
            self._updates += 1
        except Exception as exc:  # e.g. the user pressed Stop: the final message still follows
            log.info("teams: streaming text stopped (%s)", type(exc).__name__)
            self._done = True
            return
        self.raw, self.streamed = raw, shown

    async def finish(self, activity: MessageActivityInput) -> str | None:
        self._drop_waiting()
        await self.buffer.close()  # what it still holds goes with the final message
        self._done = True
        accepted = await self._stream_accepted()
        if self.failure is not None:  # the connector was unreachable while streaming: post, once
            return (await self._send(activity)).id
        if not accepted:
            self._on_refused()
            return (await self._send(activity)).id
        final = activity.text or ""
        if self.streamed and final.startswith(self.streamed):
            activity.text = final[len(self.streamed):]  # the stream already shows the beginning
        elif self.streamed:
            self.stream.clear_text()  # the answer differs from what was streamed: replace it
        self.stream.emit(activity)
        try:
            sent = await asyncio.wait_for(self.stream.close(), timeout=CLOSE_WAIT)
        except Exception as exc:
            if unreachable(exc):  # the post below is the last try; TeamsReply reports its failure
                log.debug("teams: closing the stream failed (%s); posting the answer", type(exc).__name__)
            else:
                log.warning("teams: closing the stream failed (%s); posting the answer", type(exc).__name__)
            sent = None
        if sent is None:
            activity.text = final
            return (await self._send(activity)).id
        return sent.id

    async def _stream_accepted(self) -> bool:
        """Wait until Teams accepted every update and text chunk sent so far: a final message
        emitted while the stream still sends is queued behind the SDK's half-second throttle
        (HttpStream schedules its next flush 0.5 s out when items remain), one emitted after
        goes at once. False when it accepted none: streaming refused."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FIRST_CHUNK_WAIT
        while (self._chunks < self._updates and loop.time() < deadline and not self.stream.canceled
               and self.failure is None):
            self._chunk_seen.clear()
            try:
                await asyncio.wait_for(self._chunk_seen.wait(), timeout=deadline - loop.time())
            except asyncio.TimeoutError:
                break
        await asyncio.sleep(0)  # let the stream's flush finish after its last send
        if self.failure is not None:
            return False
        if self._chunks == 0 and self._updates:
            log.info("teams: streaming refused in this chat; posting the answer instead")
            return False
        return True
