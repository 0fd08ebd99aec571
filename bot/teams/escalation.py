""""Ask a person" on Teams: the question goes to the escalation conversation, the first person's
reply there comes back to the asker, and "Save as answer" makes it a learned answer (as on
Slack, bot/slack/escalation.py).

Pressing "Ask a person" posts a card into the escalation conversation: a channel
(`19:…@thread.tacv2`) gets a new reply chain (Bot Connector `POST /v3/conversations` with
`isGroup` and the channel in `channelData`; the chain's id, `19:…;messageid=ROOT`, is the
escalation's thread), a group chat gets a message (its id is the thread: a reply there is one
that quotes it, `replyToId`). The escalation is saved before it is posted: when the conversation
is missing or askdesk is not in it (an HTTP 403/404), the asker gets a clear note and the question
is still kept. A person's first message in that thread is relayed to the asker, attributed, once
across replicas (`answer_escalation`); a relay that cannot reach the asker's conversation any
more is one log line. Channel messages reach a bot only when they @mention it, unless the app
has the resource-specific permission `ChannelMessage.Read.Group` (docs/teams.md). `TeamsDesk` is
Teams' side of an escalation that crosses surfaces (bot/escalation.py): a Slack question posted
here, a Teams asker reached proactively from Slack.

"Ask a person" is the asker's to press (as recorded with the answer: the button's data names the
answer, never who may press it), "Save as answer" the replying expert's; admins may press both
(bot/permissions.py). Anyone else gets a note only they see, and nothing changes.
An escalation speaks its answer's language (the button's `l`, bot/note_language.py), as on Slack.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import httpx
from microsoft_teams.api import MessageActivityInput
from microsoft_teams.api.clients.conversation import CreateConversationParams

from agent.learned import Owner
from agent.prompts import speaking
from agent.state.base import Escalation, utcnow
from bot.escalation import Target
from bot.note_language import pressed_language
from bot.permissions import asker_of, press_refused
from bot.teams.answer import note
from bot.teams.escalation_cards import SAVE_ANSWER, deep_link, escalate_button, escalation_card, save_button
from bot.teams.escape import teams_text
from bot.teams.incoming import TeamsMessage
from bot.teams.private import _tenant, private_note
from bot.teams.settings import SURFACE
from bot.turn import new_id

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

log = logging.getLogger("askdesk.teams")

ESCALATED_TTL_S = 90 * 24 * 3600  # one escalation per answer, for as long as anyone still clicks


def teams_target(bot: "TeamsBot") -> Target | None:
    """(surface, channel) a Teams question is passed to; None: off (or on a surface not running here)."""
    return bot.runner.escalation_target(SURFACE)


def describe(exc: BaseException) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__


def thanks_message(bot: "TeamsBot", *, message_id: str | None,
                   language: str | None = None) -> MessageActivityInput:
    """The reply to the asker's 👎, in `language`: thanks, and "Ask a person" when an escalation
    conversation is set."""
    with speaking(language):
        message = MessageActivityInput(text=teams_text(bot.runner.prompts.render("feedback_thanks")))
        if teams_target(bot):
            message.add_attachments(escalate_button(bot.prompts, answer_id=None, message_id=message_id,
                                                    language=language))
    return message


async def _from_memory(bot: "TeamsBot", conversation: str) -> tuple[str | None, str]:
    """(question, attempt): the last answered question in the conversation's memory."""
    try:
        messages = (await bot.askdesk.state.load("teams", conversation)).messages
    except Exception as exc:
        log.warning("teams: the conversation to escalate could not be read (%s)", type(exc).__name__)
        return None, ""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            asked = next((m.content for m in reversed(messages[:i]) if m.role == "user"), None)
            return asked, messages[i].content
    return None, ""


async def post_card(api: Any, target: str, activity: MessageActivityInput, tenant: str) -> str:
    """Post into `target`: a channel gets a new reply chain (returns its conversation id), a chat
    a message (returns its activity id)."""
    if target.endswith(("@thread.tacv2", "@thread.skype")) and ";messageid=" not in target:
        created = await api.conversations.create(CreateConversationParams(
            isGroup=True, activity=activity, tenant_id=tenant or None,
            channel_data={"channel": {"id": target}, **({"tenant": {"id": tenant}} if tenant else {})}))
        if ";messageid=" not in created.id and created.activity_id:
            return f"{target};messageid={created.activity_id}"
        return created.id
    return (await api.conversations.create_activity(target, activity)).id


class TeamsDesk:
    """Teams' side of escalations (bot/escalation.py): the escalation conversation, posted to through
    the Bot Connector last seen (Teams gives a bot no other), and Teams askers, reached proactively
    through the serviceUrl stored with their escalation."""

    def __init__(self, bot: "TeamsBot") -> None:
        self.bot = bot

    async def post(self, e: Escalation) -> str:
        app, (service_url, tenant) = self.bot.app, self.bot.connector
        card = escalation_message(e, self.bot.prompts)
        api = app.api.from_service_url(service_url) if service_url else app.api
        return await post_card(api, e.target_channel, card, tenant)

    async def relay(self, e: Escalation) -> bool:
        api = self.bot.app.api
        return await relay_to_asker(self.bot, api.from_service_url(e.asker_service_url) if e.asker_service_url
                                    else api, e)


def escalation_message(e: Escalation, prompts: Any) -> MessageActivityInput:
    """The question as posted for a person, in the escalation's language."""
    with speaking(e.language):
        heading = prompts.text("escalation_heading", asker=e.asker_name or e.asker)
        card = MessageActivityInput(text=f"**{teams_text(heading)}**")
        card.add_attachments(escalation_card(e, prompts))
    return card


async def relay_to_asker(bot: "TeamsBot", api: Any, e: Escalation) -> bool:
    """The expert's reply, attributed, in the Teams asker's conversation; never raises."""
    with speaking(e.language):
        heading = bot.prompts.text("escalation_relayed", expert=e.expert_name or e.expert_id or "?")
    try:
        await api.conversations.create_activity(e.conversation, MessageActivityInput(
            text=f"**{teams_text(heading)}**\n\n{teams_text(e.expert_answer or '')}"))
    except Exception as exc:
        log.warning("teams: the reply to escalation %s could not be relayed to the asker (%s)", e.id, describe(exc))
        return False
    return True


async def ask_a_person(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, data: dict[str, Any]) -> None:
    with speaking(pressed_language(bot.prompts, data)) as lang:
        await _ask_a_person(bot, ctx, incoming, data, lang)


async def _ask_a_person(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, data: dict[str, Any], lang: str) -> None:
    activity = ctx.activity
    conversation = activity.conversation.id
    found = teams_target(bot)
    if found is None:
        return
    surface, target = found
    prompts, state = bot.prompts, bot.runner.state
    # the asker, as recorded with the answer: the button's data names the answer, never who may press it
    records = bot.runner.records
    record = await (records.get(str(data["a"])) if data.get("a")
                    else records.by_message(conversation, data.get("m") or activity.reply_to_id))
    refused = press_refused(bot.settings, prompts, "ask_a_person", presser=incoming.user_id, owner=asker_of(record),
                            private=bool(record and record.private))
    if refused is not None:
        await private_note(bot, ctx, incoming, refused)
        return
    key = data.get("m") or activity.reply_to_id or data.get("a") or activity.id  # the answer's message: one per answer
    if not await bot.runner.deliveries.first_time(f"escalate:{conversation}:{key}", ttl_s=ESCALATED_TTL_S):
        await note(ctx, prompts.text("escalation_already"))
        return
    question, attempt = data.get("q"), str(data.get("t") or "")
    if not question:
        question, attempt = await _from_memory(bot, conversation)
    if not question:
        await note(ctx, prompts.text("escalation_no_question"))
        return
    asker = asker_of(record) or incoming.user_id  # an admin's press passes on the asker's question
    escalation = Escalation(
        id=new_id(), surface="teams", asker=asker, conversation=conversation,
        question=str(question), attempt=attempt, sources=list(record.sources) if record else [],
        asker_name=incoming.user_name if asker == incoming.user_id else None,
        asker_service_url=activity.service_url, link=deep_link(conversation),
        target_surface=surface, target_channel=target, language=lang)
    await state.save_escalation(escalation)  # kept whatever happens to the post
    card = escalation_message(escalation, prompts)
    desk = bot.runner.escalation_desks.get(surface)
    try:
        if surface == "teams":
            escalation.target_thread = await post_card(ctx.api, target, card, _tenant(ctx))
        else:  # across surfaces: the other surface posts it (teams_target: it runs here)
            assert desk is not None
            escalation.target_thread = await desk.post(escalation)
    except Exception as exc:
        log.warning("teams: escalation %s not posted to %s (%s); it is kept", escalation.id, target, describe(exc))
        await note(ctx, prompts.text("escalation_failed"))
        return
    await state.save_escalation(escalation)
    await note(ctx, prompts.text("escalation_passed_on"))


async def relay_reply(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage) -> bool:
    """A person's message in an escalation thread: relayed to the asker if it is the first one.
    False: not one (the message is handled as usual)."""
    if (incoming.personal or incoming.from_bot
            or incoming.place not in bot.runner.escalation_desks.channels(bot.settings)):
        return False
    chain = ";messageid=" in incoming.conversation_id
    thread = incoming.conversation_id if chain else ctx.activity.reply_to_id
    if not thread:
        return False
    state = bot.runner.state
    escalation = await state.escalation_in_thread(incoming.place, thread)
    if escalation is None:
        return False
    if escalation.status != "open" or not incoming.text:
        return True
    answered = await state.answer_escalation(escalation.id, expert_id=incoming.user_id,
                                             expert_name=incoming.user_name, text=incoming.text)
    if answered is not None:
        await deliver_reply(bot, ctx.api, answered)
    return True


async def deliver_reply(bot: "TeamsBot", api: Any, e: Escalation) -> None:
    """Post the expert's reply in the asker's conversation, attributed, then offer "Save as answer"
    in the escalation thread. Never raises: a gone conversation is one log line."""
    prompts = bot.prompts
    desk = None if e.surface == "teams" else bot.runner.escalation_desks.get(e.surface)
    if e.surface != "teams" and desk is None:  # the asker's surface no longer runs in this process
        log.warning("teams: escalation %s: no %s surface here to relay the reply to", e.id, e.surface)
        return
    if not await (desk.relay(e) if desk is not None else relay_to_asker(bot, api, e)):
        return
    where = e.target_thread if ";messageid=" in (e.target_thread or "") else e.target_channel
    with speaking(e.language):
        offer = MessageActivityInput(text=teams_text(prompts.text("escalation_relay_done")))
        offer.add_attachments(save_button(prompts, e.id))
    try:
        await api.conversations.create_activity(where, offer)
    except Exception as exc:
        log.warning("teams: escalation %s: no \"Save as answer\" offered (%s)", e.id, describe(exc))


async def save_answer(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, data: dict[str, Any]) -> None:
    """Keep the expert's reply as a learned answer (once), and say so in the thread."""
    escalation = await bot.runner.state.escalation(str(data.get("e") or ""))
    if escalation is None or not escalation.expert_answer:
        return
    with speaking(escalation.language):
        await _save(bot, ctx, incoming, escalation)


async def _save(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, escalation: Escalation) -> None:
    prompts, state = bot.prompts, bot.runner.state
    refused = press_refused(bot.settings, prompts, "save_answer", presser=incoming.user_id,
                            owner=escalation.expert_id)
    if refused is not None:
        await private_note(bot, ctx, incoming, refused)
        return
    if escalation.saved_as or not await bot.runner.deliveries.first_time(f"learned:{escalation.id}",
                                                                         ttl_s=ESCALATED_TTL_S):
        await note(ctx, prompts.text("learned_already", name=escalation.saved_as or "…"))
        return
    try:
        name = await bot.askdesk.save_learned(
            key=escalation.id, question=escalation.question, answer=escalation.expert_answer,
            expert=escalation.expert_name or escalation.expert_id or ctx.activity.from_.id,
            when=escalation.answered_at or utcnow(), asked_in=escalation.conversation,
            owner=Owner(surface=SURFACE, id=escalation.expert_id or incoming.user_id, name=escalation.expert_name or "",
                        service_url=ctx.activity.service_url, tenant=_tenant(ctx) or None))
    except Exception as exc:
        log.error("teams: saving escalation %s as an answer failed: %s", escalation.id, type(exc).__name__)
        await note(ctx, prompts.text("learned_failed"))
        return
    escalation.saved_as = name
    await state.save_escalation(escalation)
    await note(ctx, prompts.text("learned_saved", name=name))


async def pressed(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, action: str, data: dict[str, Any]) -> None:
    """An askdesk button's press (bot/teams/escalation_cards.py)."""
    if action == SAVE_ANSWER:
        await save_answer(bot, ctx, incoming, data)
    else:
        await ask_a_person(bot, ctx, incoming, data)
