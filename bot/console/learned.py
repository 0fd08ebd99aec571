"""Learned answers: the list (`askdesk learned list`), removal, and a gap group turned into a
learned answer. Writing goes through the service's `save_learned`, the function Slack's and
Teams' "Save as answer" call: the same file (question as title, the answer, "Answered by NAME
on DATE"), ingested at once, so the next question finds it."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

from aiohttp import web

from bot.console.shared import console_of, redirect, signed_in_session

MAX_QUESTION = 500
MAX_ANSWER = 20_000


async def learned_page(request: web.Request) -> web.Response:
    console = console_of(request)
    answers = sorted(console.askdesk.learned(), key=lambda a: (a.date, a.name), reverse=True)
    return console.render(request, "learned.html", answers=answers, folder=str(console.settings.learned_path))


async def save_from_gap(request: web.Request) -> web.Response:
    """A gap group's question and an admin's answer, kept as a learned answer."""
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
                                              when=datetime.now(timezone.utc))
    console.flash(session, "ok", f"Saved and ingested {name}: the next person who asks finds it.")
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
    router.add_post("/gaps/learn", save_from_gap)
