""""Ask a person" on Slack: the question goes to the escalation channel, the first person's
reply there comes back to the asker, and "Save as answer" makes it a learned answer.

The button carries the answer's id (and, from the 👎 thanks, the rated message and its thread);
the question and askdesk's attempt are read back from the asker's thread, so nothing but the
escalation itself is stored. The escalation is saved before it is posted: when the channel is
missing or askdesk is not in it, the asker gets a clear note and the question is still kept.
A reply is relayed once across replicas (`answer_escalation`); a relay that cannot reach the
asker's thread any more is one log line. `SlackDesk` is Slack's side of an escalation that crosses
surfaces (bot/escalation.py): a Teams question posted here, a Slack asker reached from Teams.
"Ask a person" is the asker's to press, "Save as answer" the replying expert's (admins may press
both; bot/permissions.py): anyone else gets an ephemeral note and nothing changes.
An escalation speaks its answer's language (the button carries it: bot/note_language.py): the
notes to whoever pressed, the post in the escalation channel, the relayed reply's heading and
"Save as answer" with its notes (the expert replies to a question written in it).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.prompts import speaking
from agent.state.base import Escalation, utcnow
from bot.note_language import LANGUAGE_KEY, pressed_language
from bot.permissions import asker_of, press_refused
from agent.learned import Owner
from bot.slack.blocks import ESCALATE, SAVE_ANSWER, action_value, plain
from bot.slack.escape import safe_markdown, safe_mrkdwn, web_link
from bot.slack.history import is_bot_message, strip_mention
from bot.slack.reply import describe, send_note
from bot.slack.services import Answering
from bot.turn import TurnRunner, new_id

log = logging.getLogger("askdesk.slack")

ESCALATED_TTL_S = 90 * 24 * 3600  # one escalation per answer, for as long as anyone still clicks
USER_SUBTYPES = {None, "file_share", "thread_broadcast"}
_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)\|([^>]+)>")


def slack_to_plain(text: str) -> str:
    """Slack's message text as plain Markdown: `<url|label>` as a link, entities decoded."""
    text = _LINK.sub(lambda m: f"[{m[2]}]({m[1]})", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def escalate_value(answer_id: str | None, message_ts: str | None, thread_ts: str | None,
                   language: str | None = None) -> str:
    """The "Ask a person" payload of the 👎 thanks (the answer's own button reads its message),
    with the answer's language."""
    said = {LANGUAGE_KEY: language} if language else {}
    return json.dumps({"a": answer_id, "m": message_ts, "t": thread_ts, **said}, separators=(",", ":"))


def register(app: AsyncApp) -> None:
    @app.action(ESCALATE)
    async def escalate(ack: AsyncAck, body: dict, action: dict, client: AsyncWebClient, context: AsyncBoltContext,
                       answering: Answering) -> None:
        await ack()
        await ask_a_person(body, action, client, context, answering)

    @app.action(SAVE_ANSWER)
    async def save(ack: AsyncAck, body: dict, action: dict, client: AsyncWebClient, runner: Any) -> None:
        await ack()
        await save_answer(body, action, client, runner)


def _question(messages: list[dict[str, Any]], answer_ts: str, context: AsyncBoltContext) -> tuple[dict | None, str]:
    """(the question's message, askdesk's answer text) around the answer at `answer_ts`."""
    at = next((i for i, m in enumerate(messages) if m.get("ts") == answer_ts), len(messages))  # thread order
    attempt = messages[at].get("text") or "" if at < len(messages) else ""
    asked = [m for m in messages[:at] if not is_bot_message(m, context.bot_user_id, context.bot_id) and m.get("user")]
    return (asked[-1] if asked else None), attempt


async def ask_a_person(body: dict, action: dict, client: AsyncWebClient, context: AsyncBoltContext,
                       answering: Answering) -> None:
    value = action_value(action)
    with speaking(pressed_language(answering.askdesk.prompts, value)) as lang:
        await _ask_a_person(body, value, client, context, answering, lang)


async def _ask_a_person(body: dict, value: dict, client: AsyncWebClient, context: AsyncBoltContext,
                        answering: Answering, lang: str) -> None:
    runner, prompts = answering.runner, answering.askdesk.prompts
    user = (body.get("user") or {}).get("id") or "unknown"
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    answer_ts = value.get("m") or container.get("message_ts")
    thread = value.get("t") or container.get("thread_ts") or (body.get("message") or {}).get("thread_ts") or answer_ts
    target = runner.escalation_target("slack")
    if not channel or not answer_ts or target is None:
        return

    async def note(name: str) -> None:
        await send_note(client, channel=channel, thread_ts=thread, user=user, is_dm=False, text=prompts.text(name))

    try:
        messages = await answering.threads.messages(channel, thread)
    except SlackApiError as exc:
        log.warning("slack: the thread to escalate could not be read (%s)", describe(exc))
        messages = []
    asked, attempt = _question(messages, answer_ts, context)
    if asked is None:
        await note("escalation_no_question")
        return
    # the asker: as stored with the answer, else the question's author as Slack reports it
    record = await runner.records.get(value.get("a"))
    asker = asker_of(record) or str(asked["user"])
    refused = press_refused(answering.settings, prompts, "ask_a_person", presser=user, owner=asker,
                            private=bool(record and record.private))
    if refused is not None:
        await send_note(client, channel=channel, thread_ts=thread, user=user, is_dm=False, text=refused)
        return
    if not await runner.deliveries.first_time(f"escalate:{channel}:{answer_ts}", ttl_s=ESCALATED_TTL_S):
        await note("escalation_already")
        return
    escalation = Escalation(
        id=new_id(), surface="slack", asker=asker, conversation=channel, thread=thread,
        question=slack_to_plain(strip_mention(asked.get("text") or "", context.bot_user_id)),
        attempt=slack_to_plain(attempt), sources=list(record.sources) if record else [],
        target_surface=target[0], target_channel=target[1], language=lang)
    await runner.state.save_escalation(escalation)  # kept whatever happens to the post
    escalation.link = await _permalink(client, channel, thread)
    if target[0] != "slack":  # the other surface shows a name, not a Slack id
        escalation.asker_name = await _name(client, escalation.asker)
    desk = SlackDesk(client, prompts) if target[0] == "slack" else runner.escalation_desks.get(target[0])
    try:
        assert desk is not None  # runner.escalation_target said so
        escalation.target_thread = await desk.post(escalation)
    except Exception as exc:
        log.warning("slack: escalation %s not posted to %s (%s); it is kept", escalation.id, target[1], describe(exc))
        await note("escalation_failed")
        return
    await runner.state.save_escalation(escalation)
    try:
        await client.chat_postMessage(channel=channel, thread_ts=thread, text=prompts.text("escalation_passed_on"))
    except SlackApiError as exc:
        log.warning("slack: the asker was not told about escalation %s (%s)", escalation.id, describe(exc))


async def _permalink(client: AsyncWebClient, channel: str, ts: str) -> str | None:
    try:
        return (await client.chat_getPermalink(channel=channel, message_ts=ts)).get("permalink")
    except SlackApiError as exc:
        log.info("slack: no permalink for the escalated thread (%s)", describe(exc))
        return None


def _asker(e: Escalation) -> str:
    return f"<@{e.asker}>" if e.surface == "slack" else safe_mrkdwn(e.asker_name or e.asker)


def _expert(e: Escalation) -> str:
    return f"<@{e.expert_id}>" if e.target_surface == "slack" else safe_mrkdwn(e.expert_name or e.expert_id or "?")


class SlackDesk:
    """Slack's side of escalations (bot/escalation.py): the escalation channel and Slack askers."""

    def __init__(self, client: AsyncWebClient, prompts: Any) -> None:
        self.client, self.prompts = client, prompts

    async def post(self, e: Escalation) -> str:
        with speaking(e.language):
            text, blocks = self.prompts.text("escalation_heading", asker=_asker(e)), escalation_blocks(e, e.link,
                                                                                                      self.prompts)
        posted = await self.client.chat_postMessage(channel=e.target_channel, text=text, blocks=blocks)
        return str(posted.get("ts"))

    async def relay(self, e: Escalation) -> bool:
        with speaking(e.language):
            heading = self.prompts.text("escalation_relayed", expert=_expert(e))
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": plain(heading)}},
                  {"type": "markdown", "text": safe_markdown(e.expert_answer or "")}]
        try:
            await self.client.chat_postMessage(channel=e.conversation, thread_ts=e.thread, text=plain(heading),
                                               blocks=blocks)
        except SlackApiError as exc:
            log.warning("slack: the reply to escalation %s could not be relayed to the asker (%s)", e.id,
                        describe(exc))
            return False
        return True


def escalation_blocks(e: Escalation, link: str | None, prompts: Any) -> list[dict[str, Any]]:
    """The question, askdesk's attempt, its sources and a link back, in the escalation channel."""
    heading = prompts.text("escalation_heading", asker=_asker(e))
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": plain(heading)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": plain(
            f"*{prompts.text('escalation_question')}*\n{safe_mrkdwn(e.question)}")}},
    ]
    if e.attempt:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": plain(
            f"*{prompts.text('escalation_attempt')}*\n{safe_mrkdwn(e.attempt)}")}})
    footer = [safe_mrkdwn(s) for s in e.sources[:8]]
    if link:
        footer.append(web_link(link, prompts.text("escalation_link")))
    if footer:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": plain(" · ".join(footer), 2000)}]})
    return blocks


def save_button(escalation_id: str, prompts: Any) -> dict[str, Any]:
    return {"type": "actions", "block_id": "askdesk_learned", "elements": [{
        "type": "button", "action_id": SAVE_ANSWER, "value": json.dumps({"e": escalation_id}),
        "text": {"type": "plain_text", "text": "💾 " + prompts.text("save_answer_button"), "emoji": True}}]}


async def relay_reply(event: dict[str, Any], context: AsyncBoltContext, client: AsyncWebClient,
                      answering: Answering) -> bool:
    """A person's reply in an escalation thread: relayed to the asker if it is the first one.
    False: not a reply in an escalation thread (the message is handled as usual)."""
    channel, thread, ts = event.get("channel"), event.get("thread_ts"), event.get("ts")
    if channel not in answering.runner.escalation_desks.channels(answering.settings) or not thread or thread == ts:
        return False
    user = event.get("user")
    if event.get("subtype") not in USER_SUBTYPES or event.get("bot_id") or not user or user == context.bot_user_id:
        return False
    runner = answering.runner
    escalation = await runner.state.escalation_in_thread(channel, thread)
    if escalation is None:
        return False
    if escalation.status != "open":
        return True
    text = slack_to_plain(strip_mention(event.get("text") or "", context.bot_user_id))
    answered = await runner.state.answer_escalation(escalation.id, expert_id=user,
                                                    expert_name=await _name(client, user), text=text)
    if answered is not None:
        desk = (SlackDesk(client, answering.askdesk.prompts) if answered.surface == "slack"
                else runner.escalation_desks.get(answered.surface))
        await deliver_reply(answered, desk, client, answering.askdesk.prompts)
    return True


async def _name(client: AsyncWebClient, user: str) -> str | None:
    try:
        found = (await client.users_info(user=user)).get("user") or {}
    except SlackApiError as exc:
        log.info("slack: no name for the expert (%s)", describe(exc))
        return None
    profile = found.get("profile") or {}
    return profile.get("real_name") or found.get("real_name") or found.get("name")


async def deliver_reply(e: Escalation, desk: Any, client: AsyncWebClient, prompts: Any) -> None:
    """Relay the expert's reply to the asker through their surface's desk, then offer "Save as
    answer" in the escalation thread. Never raises: a gone thread is one log line."""
    if desk is None:  # the asker's surface no longer runs in this process
        log.warning("slack: escalation %s: no %s surface here to relay the reply to", e.id, e.surface)
        return
    if not await desk.relay(e):
        return
    with speaking(e.language):
        done, button = prompts.text("escalation_relay_done"), save_button(e.id, prompts)
    try:
        await client.chat_postMessage(channel=e.target_channel, thread_ts=e.target_thread, text=done,
                                      blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": plain(done)}},
                                              button])
    except SlackApiError as exc:
        log.warning("slack: escalation %s: no \"Save as answer\" offered (%s)", e.id, describe(exc))


async def save_answer(body: dict, action: dict, client: AsyncWebClient, runner: TurnRunner) -> None:
    """Keep the expert's reply as a learned answer (once), and say so in the thread."""
    user = (body.get("user") or {}).get("id") or "unknown"
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    thread = container.get("thread_ts") or container.get("message_ts")
    escalation = await runner.state.escalation(str(action_value(action).get("e") or ""))
    if escalation is None or not escalation.expert_answer or not channel:
        return
    with speaking(escalation.language):
        await _save(escalation, client, runner, channel=channel, thread=thread, user=user)


async def _save(escalation: Escalation, client: AsyncWebClient, runner: TurnRunner, *, channel: str,
                thread: str | None, user: str) -> None:
    prompts = runner.prompts

    async def note(text: str) -> None:
        await send_note(client, channel=channel, thread_ts=thread, user=user, is_dm=False, text=text)

    refused = press_refused(runner.askdesk.settings, prompts, "save_answer", presser=user, owner=escalation.expert_id)
    if refused is not None:
        await note(refused)
        return
    if escalation.saved_as or not await runner.deliveries.first_time(f"learned:{escalation.id}",
                                                                     ttl_s=ESCALATED_TTL_S):
        await note(prompts.text("learned_already", name=escalation.saved_as or "…"))
        return
    try:
        name = await runner.askdesk.save_learned(
            key=escalation.id, question=escalation.question, answer=escalation.expert_answer,
            expert=escalation.expert_name or escalation.expert_id or user, when=escalation.answered_at or utcnow(), asked_in=escalation.conversation,
            owner=Owner(surface="slack", id=escalation.expert_id or user, name=escalation.expert_name or ""))
    except Exception as exc:
        log.error("slack: saving escalation %s as an answer failed: %s", escalation.id, type(exc).__name__)
        await note(prompts.text("learned_failed"))
        return
    escalation.saved_as = name
    await runner.state.save_escalation(escalation)
    await note(prompts.text("learned_saved", name=name))
