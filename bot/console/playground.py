"""The Playground: ask a question as someone (a channel, or a person by email or user id) and
see what askdesk does with it: the route, the passages its searches found with their scores
and sources, and the answer. The asker's audience is applied exactly as a surface applies it
(agent/audience.py: `viewer_keys`), so an admin sees what that channel or person would. The
turn is the service's own (`Askdesk.answer`), with an empty history it neither reads nor
keeps, and it is not counted in the report."""

from __future__ import annotations

import secrets
from typing import Any, Literal

from aiohttp import web
from markdown_it import MarkdownIt
from pydantic import BaseModel, Field, ValidationError

from agent.answers import AnswerResult, AskRequest
from agent.audience import viewer_keys
from bot.console.shared import console_of, signed_in_session

SURFACE = "console"
EXCERPT = 700
MARKDOWN = MarkdownIt("commonmark", {"html": False})  # raw HTML in an answer is shown as text


class Ask(BaseModel):
    question: str = Field(min_length=1, max_length=4000)
    viewer_kind: Literal["everyone", "channel", "person"] = "everyone"
    viewer: str = Field("", max_length=200)

    def audience(self) -> list[str] | None:
        """Who the answer is for, as the sources' audiences name people; None: unrestricted."""
        viewer = self.viewer.strip()
        if self.viewer_kind == "channel" and viewer:
            return sorted(viewer_keys(channel=viewer))
        if self.viewer_kind == "person" and viewer:
            email = viewer if "@" in viewer else None
            return sorted(viewer_keys(user=None if email else viewer, email=email, private=True))
        return None


def web_link(url: str | None) -> str | None:
    return url if url and url.startswith(("https://", "http://")) else None


def passages(result: AnswerResult) -> tuple[list[dict[str, Any]], list[str]]:
    """The knowledge passages in what the turn's tools found (score, source, text), and one line
    for each other tool's result."""
    found: list[dict[str, Any]] = []
    other: list[str] = []
    for tool, results in result.data.items():
        for item in results:
            items = item if isinstance(item, list) else [item]
            shown = [p for p in items if hasattr(p, "text") and hasattr(p, "score") and hasattr(p, "source")]
            for p in shown:
                text = " ".join(str(p.text).split())
                found.append({"tool": tool, "source": p.source, "title": getattr(p, "title", ""),
                              "section": getattr(p, "section", ""), "score": p.score,
                              "dense": getattr(p, "dense_score", None), "url": web_link(getattr(p, "url", None)),
                              "text": text if len(text) <= EXCERPT else text[:EXCERPT] + "…"})
            if len(shown) < len(items):
                other.append(f"{tool}: {len(items) - len(shown)} result(s)")
    return found, other


async def playground(request: web.Request) -> web.Response:
    console = console_of(request)
    if request.method == "GET":
        return console.render(request, "playground.html", ask=Ask.model_construct(question="", viewer_kind="everyone",
                                                                                  viewer=""), result=None, error=None)
    form = await request.post()
    try:
        ask = Ask.model_validate({k: form.get(k) for k in ("question", "viewer_kind", "viewer") if form.get(k) is not None})
    except ValidationError as exc:
        return console.render(request, "playground.html", status=400, result=None,
                              ask=Ask.model_construct(question=str(form.get("question") or ""), viewer_kind="everyone",
                                                      viewer=""), error=exc.errors()[0]["msg"])
    audience = ask.audience()
    result = await console.askdesk.answer(AskRequest(
        text=ask.question, surface=SURFACE, thread_id=f"{SURFACE}:{secrets.token_hex(8)}",
        user_id=signed_in_session(request).admin.subject, history=[], audience=audience))
    found, other = passages(result)
    references = [{"label": r.label(), "source": r.source, "score": r.score, "url": web_link(r.url)}
                  for r in result.references]
    return console.render(request, "playground.html", ask=ask, error=None, result=result, audience=audience,
                          answer_html=MARKDOWN.render(result.answer), passages=found, other=other,
                          references=references)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/playground", playground)
    router.add_post("/playground", playground)
