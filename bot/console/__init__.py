"""The web admin console (`askdesk serve console`, docs/console.md): the knowledge-gap report,
the sources and their syncs, gaps turned into learned answers, escalations and a playground,
served by the same process as the chat surfaces so it acts on the same store and service.

Server-rendered pages (aiohttp + Jinja2, a few lines of our own JS); admins sign in with OpenID
Connect (or a one-time bootstrap token); every route but the sign-in pages needs a session and
every POST a CSRF token (bot/console/guard.py). Imported only by `askdesk serve console`."""
