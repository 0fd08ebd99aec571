"""Learned answers: the list with each answer's owner, review date and the questions it has
answered since it was saved or last confirmed; Confirm, Edit and Remove; and a gap group turned
into a learned answer. Writing goes through the service (`save_learned`, the function Slack's and
Teams' "Save as answer" call, and `learned_answers`, which also serves the owners' review
buttons), so an answer's review date has one rule wherever it is confirmed or edited."""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timezone

from aiohttp import web

from agent.learned import Owner
from bot.console.sessions import Admin
from bot.console.shared import console_of, redirect, signed_in_session

log = logging.getLogger("askdesk.console")

MAX_QUESTION = 500
MAX_ANSWER = 20_000
SLACK_ISSUER = "https://slack.com"
RECENT = 3  # questions shown under an answer's count


def owner_of(admin: Admin) -> Owner:
    """An admin who writes an answer owns it: reminded by Slack DM when signed in with Slack (their
    subject is their user id), else on the console's list only."""
    if admin.via == SLACK_ISSUER and admin.subject.startswith(("U", "W")):
        return Owner(surface="slack", id=admin.subject, name=admin.name)
    return Owner(surface="console", id=admin.subject, name=admin.name)


async def learned_page(request: web.Request) -> web.Response:
    console = console_of(request)
    answers = console.askdesk.learned_answers
    listed = sorted(answers.listed(), key=lambda a: (a.date, a.name), reverse=True)
    try:
        cited = await console.citations.of(listed)
    except Exception as exc:  # the store is down: the list without the counts
        log.warning("console: citations of learned answers unavailable: %s", type(exc).__name__)
        cited = None
    rows = [{"a": a, "status": answers.status(a), "review_by": answers.review_by(a),
             "count": len(cited[a.name]) if cited is not None else None,
             "recent": [c.question for c in (cited or {}).get(a.name, [])[-RECENT:] if c.question][::-1]}
            for a in listed]
    return console.render(request, "learned.html", rows=rows, folder=str(answers.folder),
                          review_days=answers.review_days, remind_days=answers.remind_days)


async def save_from_gap(request: web.Request) -> web.Response:
    """A gap group's question and an admin's answer, kept as a learned answer the admin owns."""
    console = console_of(request)
    session = signed_in_session(request)
    form = await request.post()
    question = " ".join(str(form.get("question") or "").split())[:MAX_QUESTION]
    answer = str(form.get("answer") or "").strip()[:MAX_ANSWER]
    expert = " ".join(str(form.get("expert") or "").split())[:120] or session.admin.name
    if not question or not answer:
        console.flash(session, "error", "A learned answer needs both the question and the answer.")
        return redirect("/gaps")
    key = "console-" + hashlib.sha256(question.lower().encode()).hexdigest()[:8]  # the same question: replaced
    name = await console.askdesk.save_learned(key=key, question=question, answer=answer, expert=expert,
                                              when=datetime.now(timezone.utc), owner=owner_of(session.admin))
    console.flash(session, "ok", f"Saved and ingested {name}: the next person who asks finds it.")
    return redirect("/learned")


async def confirm(request: web.Request) -> web.Response:
    """Still right: cited (again) until a new review date."""
    console = console_of(request)
    session = signed_in_session(request)
    name = str((await request.post()).get("name") or "")
    answers = console.askdesk.learned_answers
    confirmed = await answers.confirm(name)
    if confirmed is None:
        console.flash(session, "error", f"There is no learned answer named {name}.")
    else:
        console.flash(session, "ok", f"Confirmed {name}: cited until {answers.review_by(confirmed):%Y-%m-%d}.")
    return redirect("/learned")


async def edit_page(request: web.Request) -> web.Response:
    console = console_of(request)
    answer = console.askdesk.learned_answers.get(request.query.get("name", ""))
    if answer is None:
        raise web.HTTPNotFound(text="There is no such learned answer.")
    return console.render(request, "learned_edit.html", answer=answer, max_answer=MAX_ANSWER)


async def edit(request: web.Request) -> web.Response:
    """A corrected answer: rewritten, ingested again and confirmed."""
    console = console_of(request)
    session = signed_in_session(request)
    form = await request.post()
    name = str(form.get("name") or "")
    text = str(form.get("answer") or "").strip()[:MAX_ANSWER]
    answers = console.askdesk.learned_answers
    edited = await answers.edit(name, text) if text else None
    if edited is None:
        console.flash(session, "error", f"{name} was not changed: it does not exist, or the answer was empty.")
    else:
        console.flash(session, "ok", f"Saved {name}: cited until {answers.review_by(edited):%Y-%m-%d}.")
    return redirect("/learned")


async def remove(request: web.Request) -> web.Response:
    console = console_of(request)
    session = signed_in_session(request)
    name = str((await request.post()).get("name") or "")
    if await console.askdesk.remove_learned(name):
        console.flash(session, "ok", f"Removed {name} from the folder and the knowledge base.")
    else:
        console.flash(session, "error", f"There is no learned answer named {name}.")
    return redirect("/learned")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/learned", learned_page)
    router.add_post("/learned/remove", remove)
    router.add_post("/learned/confirm", confirm)
    router.add_get("/learned/edit", edit_page)
    router.add_post("/learned/edit", edit)
    router.add_post("/gaps/learn", save_from_gap)
