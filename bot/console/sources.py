"""The Sources page: each source in sources.yaml with its state (`askdesk sources`' rows:
kind, audience, documents, last and next sync, last error) and a "Sync now" button that syncs
it in the background (bot/console/syncs.py); /api/sync-jobs is what the page polls meanwhile."""

from __future__ import annotations

import asyncio

from aiohttp import web

from bot.console.shared import console_of, redirect, signed_in_session


async def sources_page(request: web.Request) -> web.Response:
    from agent.sources.config import SourcesFileError
    from bot.commands.sources import source_rows

    console = console_of(request)
    error = None
    try:
        rows = await asyncio.to_thread(source_rows, console.settings)
    except SourcesFileError as exc:
        rows, error = [], str(exc)
    for row in rows:
        audience = row["audience"]
        row["audience_text"] = audience if isinstance(audience, str) else ", ".join(audience)
    return console.render(request, "sources.html", rows=rows, error=error, jobs=console.syncs.jobs,
                          running=any(console.syncs.running(r["name"]) for r in rows))


async def sync_now(request: web.Request) -> web.Response:
    console = console_of(request)
    name = (await request.post()).get("source")
    if not isinstance(name, str) or not name:
        raise web.HTTPBadRequest(text="which source?")
    if not console.syncs.start(name):
        console.flash(signed_in_session(request), "note", f"{name} is already syncing.")
    return redirect("/sources")


async def sync_jobs(request: web.Request) -> web.Response:
    jobs = console_of(request).syncs.jobs
    return web.json_response({name: job.model_dump() for name, job in jobs.items()})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/sources", sources_page)
    router.add_post("/sources/sync", sync_now)
    router.add_get("/api/sync-jobs", sync_jobs)
