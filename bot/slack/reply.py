"""Delivering one answer into a thread: streamed where the workspace allows, else posted
then updated.

Streaming uses slack_sdk's `chat_stream` helper (chat.startStream / appendStream /
stopStream): tool progress appears as task updates, then the answer text as the model
writes it (`text`, through a TextBuffer: the first words at once, then one append per
~600 characters, or for text waiting 4 s), and the stop call carries the rest of the text
with the sources and feedback buttons. A workspace that refuses streaming is
remembered and gets the classic path: a placeholder reply that progress updates edit and
the final answer replaces. In the assistant pane, progress goes to the thread status
instead (assistant.threads.setStatus with loading messages).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_sdk.errors import SlackApiError
from slack_sdk.models.messages.chunk import TaskUpdateChunk
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from agent.references import Reference
from bot.slack.blocks import PART_CHARS, answer_messages, fallback_text, footer_blocks, split_markdown
from bot.text_buffer import TextBuffer

if TYPE_CHECKING:
    from bot.slack.app import SlackBot

log = logging.getLogger("askdesk.slack")

STREAM_BUFFER_CHARS = 600  # answer characters per chat.appendStream at most (Slack rate limits)
STREAM_FLUSH_SECONDS = 4.0  # text this old is appended even when fewer characters wait


class Reply:
    def __init__(
        self, bot: "SlackBot", client: AsyncWebClient, *, channel: str, thread_ts: str,
        team_id: str | None, user_id: str | None, assistant: bool,
    ) -> None:
        self.bot = bot
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.team_id = team_id or ""
        self.user_id = user_id
        self.assistant = assistant
        self.streaming = bot.settings.slack_streaming and self.team_id not in bot.no_streaming
        self.stream: AsyncChatStream | None = None
        self.placeholder_ts: str | None = None
        self.tasks: list[str] = []
        self.posted_ts: list[str] = []
        self.buffer = TextBuffer(self._append_text, chars=STREAM_BUFFER_CHARS, seconds=STREAM_FLUSH_SECONDS)
        self._tasks_done = False
        self.appended = ""  # answer text already in the streamed message
        self._append_failed = False

    # --- progress -------------------------------------------------------------------------

    async def status(self, text: str) -> None:
        """Assistant-pane status ("is thinking…" with loading messages); no-op elsewhere."""
        if not self.assistant or self.team_id in self.bot.no_assistant_api:
            return
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=self.channel, thread_ts=self.thread_ts, status="is thinking…",
                loading_messages=[text],
            )
        except SlackApiError as exc:
            # Workspaces without the assistant feature (or plain DMs) refuse it: answer without.
            log.info("slack: assistant status unavailable (%s); plain DM mode", exc.response.get("error"))
            self.bot.no_assistant_api.add(self.team_id)
            self.assistant = False

    async def progress(self, text: str) -> None:
        """Show a tool status line such as "Searching the knowledge base…"."""
        if self.assistant:
            await self.status(text)
            if self.assistant:
                return
        if self.streaming:
            try:
                await self._stream_task(text)
                return
            except SlackApiError as exc:
                if self.stream is not None and self.stream.ts:
                    log.warning("slack: stream progress failed: %s", exc.response.get("error"))
                    return
                self._stream_refused(exc)
        try:
            await self._placeholder(f"_{text}_")
        except SlackApiError as exc:
            log.warning("slack: progress update failed: %s", exc.response.get("error"))

    async def text(self, delta: str) -> None:
        """The answer as the model writes it (Askdesk.answer's `on_text`): appended to the
        open stream; ignored where the workspace does not stream (the answer is posted whole)."""
        if self.streaming and not self._append_failed and \
                len(self.buffer.sent) + len(self.buffer.pending) + len(delta) <= PART_CHARS:
            await self.buffer.add(delta)
        # beyond one message's worth the text waits for finish(), which posts it in parts

    async def _append_text(self, text: str) -> None:
        try:
            stream = await self._open_stream()
            assert stream is not None
            # the first text also completes the running task: one call, not two
            chunks = [] if self._tasks_done else self._complete_last_task()
            self._tasks_done = True
            await stream.append(markdown_text=text, chunks=chunks or None)
            self.appended += text
        except Exception as exc:
            if self.stream is not None and self.stream.ts:
                # stop appending; chat_stream keeps the refused text in its buffer and sends it
                # with the stop call, which carries the rest of the answer after it
                error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
                log.warning("slack: appending answer text failed: %s", error)
                self.appended += text
                self._append_failed = True
                return
            if not isinstance(exc, SlackApiError):
                raise
            self._stream_refused(exc)

    async def _stream_task(self, text: str) -> None:
        """Complete the previous task and show `text` as the running one."""
        chunks = self._complete_last_task()
        self.tasks.append(text)
        chunks.append(TaskUpdateChunk(id=f"task{len(self.tasks)}", title=text, status="in_progress"))
        stream = await self._open_stream()
        assert stream is not None
        await stream.append(chunks=chunks)

    def _complete_last_task(self) -> list[TaskUpdateChunk]:
        if not self.tasks:
            return []
        return [TaskUpdateChunk(id=f"task{len(self.tasks)}", title=self.tasks[-1], status="complete")]

    async def _open_stream(self) -> AsyncChatStream | None:
        if self.stream is not None:
            return self.stream
        if not self.streaming:
            return None
        stream = await self.client.chat_stream(
            channel=self.channel, thread_ts=self.thread_ts, buffer_size=1,  # TextBuffer batches
            recipient_team_id=self.team_id or None, recipient_user_id=self.user_id,
        )
        self.stream = stream
        return stream

    def _stream_refused(self, exc: SlackApiError) -> None:
        log.info("slack: streaming unavailable (%s); posting instead", exc.response.get("error"))
        self.bot.no_streaming.add(self.team_id)
        self.streaming = False
        self.stream = None

    async def _placeholder(self, text: str) -> None:
        if self.placeholder_ts:
            await self.client.chat_update(channel=self.channel, ts=self.placeholder_ts, text=text)
        else:
            response = await self.client.chat_postMessage(channel=self.channel, thread_ts=self.thread_ts, text=text)
            self.placeholder_ts = response.get("ts")

    # --- the answer ----------------------------------------------------------------------

    async def finish(self, answer: str, references: list[Reference], *, notice: str | None, value: str | None) -> None:
        if self.streaming and self.appended and answer.startswith(self.appended):
            # the answer streamed: the stop call carries the rest, the sources and the buttons
            await self.buffer.close()
            assert self.stream is not None
            rest, more = _cut(answer, len(self.appended))
            footer = footer_blocks(references, notice, value) if not more else []
            await self.stream.stop(markdown_text=rest or None, blocks=footer or None)
            if self.stream.ts:
                self.posted_ts.append(self.stream.ts)
            if more:  # a very long answer: the rest in further messages, split as usual
                await self._post_parts(answer_messages(more, references, notice=notice, value=value),
                                       use_placeholder=False)
            return
        parts = split_markdown(answer or "…")
        if self.streaming:
            try:
                await self._finish_stream(parts[0], footer_blocks(references, notice, value) if len(parts) == 1 else None)
            except SlackApiError as exc:
                if self.stream is not None and self.stream.ts:
                    raise  # the stream exists: never post the same answer twice
                self._stream_refused(exc)
            else:
                if len(parts) > 1:
                    tail = answer_messages("\n\n".join(parts[1:]), references, notice=notice, value=value)
                    await self._post_parts(tail, use_placeholder=False)
                return
        await self._post_parts(answer_messages(answer, references, notice=notice, value=value))

    async def _finish_stream(self, text: str, footer: list[dict] | None) -> None:
        stream = await self._open_stream()
        assert stream is not None
        chunks = [] if self._tasks_done else self._complete_last_task()
        await stream.stop(markdown_text=text, chunks=chunks or None, blocks=footer or None)
        if stream.ts:
            self.posted_ts.append(stream.ts)

    async def _post_parts(self, messages: list[list[dict]], *, use_placeholder: bool = True) -> None:
        for blocks in messages:
            text = fallback_text("\n".join(b.get("text", "") for b in blocks if b.get("type") == "markdown"))
            if use_placeholder and self.placeholder_ts:
                await self.client.chat_update(channel=self.channel, ts=self.placeholder_ts, text=text, blocks=blocks)
                self.posted_ts.append(self.placeholder_ts)
                use_placeholder = False
                continue
            response = await self.client.chat_postMessage(
                channel=self.channel, thread_ts=self.thread_ts, text=text, blocks=blocks,
            )
            self.posted_ts.append(response.get("ts"))


def _cut(answer: str, streamed: int) -> tuple[str, str]:
    """(rest of the streamed message, text for further messages): a long answer's streamed
    message ends at the first paragraph break after the streamed text, outside code blocks."""
    if len(answer) <= PART_CHARS:
        return answer[streamed:], ""
    position = streamed
    while (cut := answer.find("\n\n", position)) >= 0:
        if answer.count("```", 0, cut) % 2 == 0:
            return answer[streamed:cut], answer[cut:].strip()
        position = cut + 2
    return answer[streamed:], ""
