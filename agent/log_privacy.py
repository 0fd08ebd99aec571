"""No message text, answers, tokens or keys in any log record, at any level, from any library.

Third-party clients log what they send and receive: openai/groq dump every request (the
conversation) at DEBUG, instructor logs its validation errors — which quote the model's output,
itself quoting the user — at ERROR, tracebacks carry the same values. Handlers and levels are
the deploying application's choice, so the guard sits where every record is born: a
LogRecord factory that withholds the text of records from those libraries (their name, level
and time stay, so "something failed in openai at 12:03" is still visible) and strips query
strings from httpx's request lines. askdesk's own loggers are written to log ids, kinds and
counts only; tests/test_log_privacy.py runs a fault-filled turn and scans every record.
"""

from __future__ import annotations

import logging
from typing import Any

# loggers (and their children) whose records may quote requests, responses or keys
WITHHELD = ("instructor", "openai", "groq", "google_genai", "google.genai", "anthropic", "httpcore",
            "httpcore2", "langsmith", "slack_bolt", "slack_sdk", "aiohttp.client")
REQUEST_LINES = ("httpx", "httpx2")  # "HTTP Request: POST <url> <status>": kept, minus the query
PLACEHOLDER = "[%s record withheld: it may quote messages or keys]"

_installed = False


def _matches(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _redact(record: logging.LogRecord) -> None:
    if _matches(record.name, REQUEST_LINES):
        if record.args and isinstance(record.args, tuple):
            record.args = tuple(str(a).split("?", 1)[0] if "://" in str(a) else a for a in record.args)
        return
    if not _matches(record.name, WITHHELD):
        return
    kind = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else None
    record.msg = PLACEHOLDER % record.name + (f" ({kind})" if kind else "")
    record.args = ()
    record.exc_info = None
    record.exc_text = None
    record.stack_info = None


def install() -> None:
    """Wrap the process's LogRecord factory once (idempotent; keeps any factory already set)."""
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _redact(record)
        return record

    logging.setLogRecordFactory(factory)
    _installed = True
