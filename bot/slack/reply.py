"""Delivering one answer into a thread: streamed where the workspace allows, else posted
then updated.

Streaming uses Bolt's `say_stream` (slack_sdk's chat.startStream / appendStream /
stopStream): tool progress appears as task updates, then the answer text as the model
writes it (`text`, through a TextBuffer: the first words at once, then one append about
every second — never sooner, Slack rate-limits chat.appendStream — with what the model wrote
meanwhile, cut after a sentence or a whole word), and the stop call carries the rest of the text
with the sources and feedback buttons. In DMs (Slack's agent messaging
experience) progress goes to the thread status instead (Bolt's `set_status`).

Answer text is escaped on its way out (bot/slack/escape.py): streamed text piece by piece with
`MarkdownStream` (a piece knows what went before it; an unfinished link waits for the next
piece), posted answers by `answer_messages`. `appended` keeps the raw text already streamed.

Failures degrade one message, not the workspace: a Slack 5xx or a dropped connection on
chat.startStream makes *this* answer a placeholder that is updated, and the next answer
streams again. Only an explicit refusal (streaming or agent status not enabled for the
app) pauses the feature for that workspace, for a cool-down, then it is tried again.

A stream stays open in Slack until chat.stopStream, so a process killed mid-answer would
leave "Thinking…" spinning for good. Each open stream is therefore a claim in the state store
(`OpenStreams`, shared by replicas), settled when the stream stops: the next process to start
(`askdesk serve`) and the question's next delivery (Slack's retry) close any stream whose
holder died, with a short note. A claim names the stream and the language its answer spoke
(`slack:stream:<channel>:<question ts>:<stream ts>:<lang>`), so the note is said in it; nothing
of the question is in it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from agent.prompts import LANGUAGE

from slack_sdk.errors import SlackApiError
from slack_sdk.models.messages.chunk import TaskUpdateChunk
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from agent.references import Reference
from bot.slack.blocks import (PART_CHARS, answer_messages, answer_parts, anyway_value, fallback_text, feedback_value,
                              footer_blocks, stream_end)
from bot.slack.escape import MarkdownStream, escaped_size, safe_markdown, safe_mrkdwn
from bot.slack.confirm_buttons import offer, thread_poster
from bot.cache import CoolDown
from bot.text_buffer import TextBuffer

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.state import StateStore
    from bot.turn import Delivery

log = logging.getLogger("askdesk.slack")

# seconds between the starts of two chat.appendStream calls with answer text: about one a
# second, the appendStream rate tier (a little over, so network jitter never puts two in one
# second), and never a longer freeze than that while the model writes (issue 20)
STREAM_APPEND_EVERY = 1.05
FEATURE_COOL_DOWN_S = 600.0
TRANSIENT_ERRORS = {"internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited"}

STREAMS = "slack:stream:"  # the claims on open streams: slack:stream:<channel>:<question ts>:<stream ts>:<lang>
STREAM_TTL_S = 86400.0  # a process restarted within a day still closes what its predecessor left open

SayStream = Callable[..., Awaitable[AsyncChatStream]]
SetStatus = Callable[..., Awaitable[Any]]


def describe(exc: BaseException) -> str:
    """One log-safe line for a Slack failure: the API error code or the exception type."""
    if isinstance(exc, SlackApiError):
        return f"{exc.response.get('error')} (HTTP {exc.response.status_code})"
    return type(exc).__name__


def is_refusal(exc: BaseException) -> bool:
    """Slack answered and said no (feature off, scope missing): worth remembering for a while.
    A 5xx, a rate limit or a dropped connection is not: the next message tries again."""
    return (isinstance(exc, SlackApiError) and exc.response.status_code < 500
            and exc.response.get("error") not in TRANSIENT_ERRORS)


class Features:
    """Workspaces where streaming or the agent status was refused, each for a cool-down."""

    def __init__(self, cool_down_s: float = FEATURE_COOL_DOWN_S) -> None:
        self.no_streaming = CoolDown(cool_down_s)
        self.no_status = CoolDown(cool_down_s)


def stream_key(channel: str, question_ts: str, stream_ts: str, lang: str) -> str:
    return f"{STREAMS}{channel}:{question_ts}:{stream_ts}:{lang}"


def stream_of(key: str) -> tuple[str, str, str | None]:
    """(channel, stream ts, language) of a claim on an open stream; a claim written before claims
    carried the answer's language has none (None)."""
    parts = key[len(STREAMS):].split(":")
    return parts[0], parts[2], parts[3] if len(parts) > 3 else None


class OpenStreams:
    """The streams askdesk has open in Slack, as claims in the state store: claimed when a
    stream starts, settled when it stops. A claim left unsettled by a holder that is gone is a
    stream nobody will ever stop; `close_abandoned` takes it over and stops it."""

    def __init__(self, state: "StateStore", ttl_s: float = STREAM_TTL_S) -> None:
        self.state = state
        self.ttl_s = ttl_s

    async def opened(self, channel: str, question_ts: str, stream_ts: str, lang: str) -> None:
        await self.state.claim(stream_key(channel, question_ts, stream_ts, lang), self.ttl_s)

    async def closed(self, channel: str, question_ts: str, stream_ts: str, lang: str) -> None:
        await self.state.settle(stream_key(channel, question_ts, stream_ts, lang))

    async def close_abandoned(self, client: AsyncWebClient, note: Callable[[str | None], str], *,
                              channel: str | None = None, question_ts: str | None = None) -> int:
        """Stop, with `note(language the stream's answer spoke)`, every stream a process that is
        gone left open (only those answering one question, with `channel` and `question_ts`); how
        many were stopped. Never raises: replicas starting together each take over different
        streams (`claim` grants one)."""
        prefix = STREAMS + (f"{channel}:{question_ts}:" if channel and question_ts else "")
        try:
            keys = await self.state.abandoned(prefix)
        except Exception as exc:
            log.warning("slack: streams left open could not be read: %s", type(exc).__name__)
            return 0
        stopped = 0
        for key in keys:
            stopped += await self._close(client, key, note)
        if stopped:
            log.warning("slack: closed %d answer(s) left streaming by a process that stopped mid-answer", stopped)
        return stopped

    async def _close(self, client: AsyncWebClient, key: str, note: Callable[[str | None], str]) -> int:
        """1 when this process took the stream over and stopped it, else 0."""
        try:
            if not await self.state.claim(key, self.ttl_s):
                return 0  # another process took it over first
        except Exception as exc:
            log.info("slack: a stream left open was not taken over: %s", type(exc).__name__)
            return 0
        try:
            where, ts, lang = stream_of(key)
            await client.chat_stopStream(channel=where, ts=ts, markdown_text=safe_markdown(note(lang)))
            closed = 1
        except Exception as exc:  # stopped already (its holder died after the stop call), deleted, Slack down
            log.info("slack: a stream left open was not closed: %s", describe(exc))
            closed = 0
        try:
            await self.state.settle(key)  # one try, best effort: no process tries it again
        except Exception as exc:
            log.info("slack: a closed stream was not recorded: %s", type(exc).__name__)
        return closed


class SlackReply:
    """The turn runner's `Reply` for an answer in a Slack thread, which everyone in it sees."""

    def __init__(
        self, client: AsyncWebClient, *, channel: str, thread_ts: str, team_id: str | None,
        streaming: bool, features: Features, say_stream: SayStream | None = None,
        set_status: SetStatus | None = None, prompts: "PromptSet | None" = None,
        user: str | None = None, is_dm: bool = False,
    ) -> None:
        self.client = client
        self.user = user
        self.is_dm = is_dm
        self.prompts = prompts
        self.channel = channel
        self.thread_ts = thread_ts
        self.team_id = team_id or ""
        self.features = features
        self.say_stream = say_stream
        self.set_status = set_status if self.team_id not in features.no_status else None
        self.streaming = streaming and say_stream is not None and self.team_id not in features.no_streaming
        self.stream: AsyncChatStream | None = None
        self.placeholder_ts: str | None = None
        self.tasks: list[str] = []
        self.posted_ts: list[str] = []
        self.buffer = TextBuffer(self._append_text, seconds=STREAM_APPEND_EVERY)
        self.appended = ""  # answer text already in the streamed message (raw, as the model wrote it)
        self.markdown = MarkdownStream()  # escapes it piece by piece
        self._held = ""  # text given to _append_text that waits for the next piece (an unfinished link)
        self._stream_size = 0  # what the stream was given, counted as escaped (Slack's limits count that)
        self._tasks_done = False
        self._append_failed = False
        self._escalate = False  # this answer offers "Ask a person" (the turn runner decides: Delivery)
        # the question's message, which "Search the documents anyway" reads back (bot/slack/anyway.py)
        self.asked_ts: str | None = None
        self._anyway: str | None = None
        self.open_streams: OpenStreams | None = None  # where the open stream is recorded (track())
        self.question_ts: str | None = None
        self._tracked: str | None = None  # the stream's ts while it is recorded as open
        self._tracked_language = LANGUAGE.get()  # the language its answer speaks, recorded with it

    def track(self, streams: OpenStreams, question_ts: str) -> None:
        """Record this reply's stream as open (under its question) until it stops, so that a
        process killed meanwhile does not leave it open for good."""
        self.open_streams, self.question_ts = streams, question_ts

    async def _opened(self) -> None:
        if self.open_streams is None or self.question_ts is None or self._tracked is not None:
            return
        if self.stream is not None and self.stream.ts:
            self._tracked, self._tracked_language = self.stream.ts, LANGUAGE.get()  # the turn's, by now
            try:
                await self.open_streams.opened(self.channel, self.question_ts, self._tracked, self._tracked_language)
            except Exception as exc:  # the answer matters more than the record
                log.warning("slack: an open stream was not recorded: %s", type(exc).__name__)

    async def _closed(self) -> None:
        if self.open_streams is None or self.question_ts is None or self._tracked is None:
            return
        ts, self._tracked = self._tracked, None
        try:
            await self.open_streams.closed(self.channel, self.question_ts, ts, self._tracked_language)
        except Exception as exc:
            log.warning("slack: a stopped stream was not recorded: %s", type(exc).__name__)

    @property
    def streams(self) -> bool:
        """Whether this answer is streamed into its message (else it is posted whole)."""
        return self.streaming

    @property
    def uses_status(self) -> bool:
        return self.set_status is not None

    # --- progress -------------------------------------------------------------------------

    async def progress(self, text: str) -> None:
        """Show a status line such as "Searching the knowledge base…"; never raises."""
        try:
            if self.set_status is not None and await self._status(text):
                return
            if self.streaming:
                try:
                    await self._stream_task(text)
                    return
                except Exception as exc:
                    if self.stream is not None and self.stream.ts:
                        log.warning("slack: stream progress failed: %s", describe(exc))
                        return
                    self._stream_failed(exc)
            await self._placeholder(f"_{text}_")  # a progress line: escaped like any text
        except Exception as exc:
            log.warning("slack: progress update failed: %s", describe(exc))

    async def _status(self, text: str) -> bool:
        assert self.set_status is not None
        try:
            await self.set_status(status="is thinking…", loading_messages=[text])
            return True
        except Exception as exc:
            log.info("slack: thread status unavailable (%s); answering without it", describe(exc))
            if is_refusal(exc):
                self.features.no_status.pause(self.team_id)
            self.set_status = None
            return False

    async def text(self, delta: str) -> None:
        """The answer as the model writes it (Askdesk.answer's `on_text`): appended to the
        open stream; ignored where this answer is not streamed (it is posted whole)."""
        if self.streaming and not self._append_failed and self._stream_size + escaped_size(delta) <= PART_CHARS:
            self._stream_size += escaped_size(delta)
            await self.buffer.add(delta)
            if self._held and not self.appended:  # the first words wait for their link to end, not a second
                await self.buffer.flush()
        # beyond one message's worth the text waits for finish(), which posts it in parts

    async def _append_text(self, text: str) -> None:
        text = self._held + text
        safe, ready = self.markdown.render(text)
        self._held = text[ready:]
        if not ready:
            return
        text = text[:ready]
        try:
            stream = await self._open_stream()
            # the first text also completes the running task: one call, not two
            chunks = [] if self._tasks_done else self._complete_last_task()
            self._tasks_done = True
            await stream.append(markdown_text=safe, chunks=chunks or None)
            self.appended += text
            await self._opened()
        except Exception as exc:
            if self.stream is not None and self.stream.ts:
                # stop appending; chat_stream keeps the refused text in its buffer and sends it
                # with the stop call, which carries the rest of the answer after it
                log.warning("slack: appending answer text failed: %s", describe(exc))
                self.appended += text
                self._append_failed = True
                return
            self._stream_failed(exc)

    async def _stream_task(self, text: str) -> None:
        """Complete the previous task and show `text` as the running one."""
        chunks = self._complete_last_task()
        self.tasks.append(text)
        chunks.append(TaskUpdateChunk(id=f"task{len(self.tasks)}", title=text, status="in_progress"))
        stream = await self._open_stream()
        await stream.append(chunks=chunks)
        await self._opened()

    def _complete_last_task(self) -> list[TaskUpdateChunk]:
        if not self.tasks:
            return []
        return [TaskUpdateChunk(id=f"task{len(self.tasks)}", title=self.tasks[-1], status="complete")]

    async def _open_stream(self) -> AsyncChatStream:
        if self.stream is None:
            assert self.say_stream is not None
            self.stream = await self.say_stream(buffer_size=1)  # the TextBuffer batches
        return self.stream

    def _stream_failed(self, exc: BaseException) -> None:
        """This message is posted instead of streamed; a refusal also pauses the workspace."""
        if is_refusal(exc):
            log.info("slack: streaming refused (%s); posting instead for a while", describe(exc))
            self.features.no_streaming.pause(self.team_id)
        else:
            log.warning("slack: streaming failed (%s); posting this answer instead", describe(exc))
        self.streaming = False
        self.stream = None

    async def _placeholder(self, text: str) -> None:
        if self.placeholder_ts:
            await self.client.chat_update(channel=self.channel, ts=self.placeholder_ts, text=safe_mrkdwn(text))
        else:
            response = await self.client.chat_postMessage(channel=self.channel, thread_ts=self.thread_ts,
                                                          text=safe_mrkdwn(text))
            self.placeholder_ts = response.get("ts")

    # --- the answer ----------------------------------------------------------------------

    async def note(self, text: str) -> None:
        """A private note to the asker (in a DM, simply a reply); never raises."""
        await send_note(self.client, channel=self.channel, thread_ts=self.thread_ts, user=self.user,
                        is_dm=self.is_dm, text=text)

    async def finish(self, delivery: "Delivery") -> str | None:
        """Deliver a turn's answer (bot/turn.py); the first delivered message's ts."""
        result = delivery.result
        value = feedback_value(delivery.answer_id, result.route, result.references, result.language) \
            if delivery.feedback and result.action is None else None  # a proposal is rated once it ran
        self._escalate = delivery.ask_a_person and value is not None  # in the answer's message, no extra call
        self._anyway = (anyway_value(self.asked_ts, result.language)
                        if delivery.search_anyway and self.asked_ts else None)
        await self.deliver(result.answer, result.references, notice=delivery.notice, value=value)
        if result.action is not None:  # Confirm / Cancel under it (bot/slack/confirm_buttons.py)
            await offer(thread_poster(self.client, self.channel, self.thread_ts), result.action, self.prompts)
        return self.posted_ts[0] if self.posted_ts else None

    async def deliver(self, answer: str, references: list[Reference], *, notice: str | None, value: str | None) -> None:
        """Deliver the answer; raises when Slack fails after something was already shown."""
        if self.streaming and self.appended and answer.startswith(self.appended):
            # the answer streamed: the stop call carries the rest, the sources and the buttons
            await self.buffer.close()
            assert self.stream is not None
            rest, more = _cut(answer, len(self.appended))
            footer = self._footer(references, notice, value) if not more else []
            safe = self.markdown.render(rest, final=True)[0]
            await self.stream.stop(markdown_text=safe or None, blocks=footer or None)
            await self._closed()
            if self.stream.ts:
                self.posted_ts.append(self.stream.ts)
            if more:  # a very long answer: the rest in further messages, split as usual
                await self._post_parts(self._messages(more, references, notice, value), use_placeholder=False)
            return
        parts = answer_parts(answer or "…")
        if self.streaming:
            await self.buffer.close()  # no append may follow the stop call
            try:
                await self._finish_stream(parts[0], self._footer(references, notice, value) if len(parts) == 1 else None)
            except Exception as exc:
                if self.stream is not None and self.stream.ts:
                    raise  # the stream exists: never post the same answer twice
                self._stream_failed(exc)
            else:
                if len(parts) > 1:
                    tail = self._messages("\n\n".join(parts[1:]), references, notice, value)
                    await self._post_parts(tail, use_placeholder=False)
                return
        await self._post_parts(self._messages(answer, references, notice, value))

    def _footer(self, references: list[Reference], notice: str | None, value: str | None) -> list[dict]:
        return footer_blocks(references, notice, value, self.prompts, escalate=self._escalate, anyway=self._anyway)

    def _messages(self, answer: str, references: list[Reference], notice: str | None,
                  value: str | None) -> list[list[dict]]:
        return answer_messages(answer, references, notice=notice, value=value, prompts=self.prompts,
                               escalate=self._escalate, anyway=self._anyway)

    async def _finish_stream(self, text: str, footer: list[dict] | None) -> None:
        stream = await self._open_stream()
        chunks = [] if self._tasks_done else self._complete_last_task()
        text, tabled = stream_end(text)  # a table goes as a table block, in its place (bot/slack/blocks.py)
        safe = self.markdown.render(text, final=True)[0] if text.strip() else ""
        blocks = [*tabled, *(footer or [])]
        await stream.stop(markdown_text=safe or None, chunks=chunks or None, blocks=blocks or None)
        await self._closed()
        if stream.ts:
            self.posted_ts.append(stream.ts)

    async def _post_parts(self, messages: list[list[dict]], *, use_placeholder: bool = True) -> None:
        """Post (or put in the placeholder) messages built by answer_messages: escaped already."""
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

    async def apologise(self, text: str) -> None:
        """Replace whatever this reply showed with `text` (best effort: Slack may be down); an
        open stream keeps what it showed and is closed with `text` (one that showed only
        progress, "Thinking…", too: left open, it would spin for good)."""
        if self.streaming and self.stream is not None and (self.appended or self.stream.ts):
            try:
                rest, self._held = self._held + await self.buffer.close(), ""  # written but not yet shown
                shown = self.markdown.render(rest, final=True)[0] if rest else ""
                note = safe_markdown(text)
                await self.stream.stop(markdown_text=f"{shown}\n\n{note}" if self.appended or shown else note)
                await self._closed()
                return
            except Exception as exc:  # the stream is broken: say it in a message of its own
                log.warning("slack: closing the stream failed: %s", describe(exc))
        if self.placeholder_ts:
            await self.client.chat_update(channel=self.channel, ts=self.placeholder_ts, text=text, blocks=[])
        else:
            await self.client.chat_postMessage(channel=self.channel, thread_ts=self.thread_ts, text=text)


def _cut(answer: str, streamed: int) -> tuple[str, str]:
    """(rest of the streamed message, text for further messages): a long answer's streamed
    message ends at the first paragraph break after the streamed text, outside code blocks."""
    if escaped_size(answer) <= PART_CHARS:
        return answer[streamed:], ""
    position = streamed
    while (cut := answer.find("\n\n", position)) >= 0:
        if answer.count("```", 0, cut) % 2 == 0:
            return answer[streamed:cut], answer[cut:].strip()
        position = cut + 2
    return answer[streamed:], ""


async def send_note(client: AsyncWebClient, *, channel: str, thread_ts: str | None, user: str | None, is_dm: bool,
                    text: str) -> None:
    """A note only `user` sees (ephemeral; in a DM, simply a reply); never raises."""
    try:
        if is_dm or not user:
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        else:
            await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=text)
    except Exception as exc:
        log.warning("slack: could not send a note: %s", describe(exc))
