"""No message text, answers, documents, tokens or keys in any log record, at any level, from any
library; no traceback text either.

Third-party code logs what it handles: aiosqlite each statement with its parameters (a stored
conversation turn) at DEBUG, openai/groq/google-genai each request (the conversation), httpcore
and urllib3 the bytes on the wire, instructor its validation errors (quoting the model's output,
itself quoting the user) at ERROR; tracebacks carry the same values in their exception messages.
Handlers and levels are the deploying application's choice, so the guard sits where every record
is born, a LogRecord factory, and holds for every logger, including ones added later:

- a record from any logger outside askdesk's own (`askdesk`, `agent`, `bot`, `bench`) keeps its
  logger name, level and time, and its text is withheld
  (`[openai._base_client record withheld: it may quote messages or keys]`); httpx's request lines
  (`HTTP Request: POST <url> "HTTP/1.1 200 OK"`) are kept, minus the query string;
- a traceback, in any record, is reduced to one line: the exception's type and where it was
  raised (`(ValidationError at main.py:412 in validate)`), never its message or the source lines;
- loggers known to log payloads below WARNING are held at WARNING (httpx at INFO), unless the
  application set their level itself, so a root logger at DEBUG is not flooded with withheld
  records either.

askdesk's own loggers log ids, kinds and counts only; tests/test_log_privacy.py configures
logging at DEBUG, runs turns, stores conversations and ingests documents, and scans the output.
"""

from __future__ import annotations

import logging
import os
from typing import Any

OWN = ("askdesk", "agent", "bot", "bench")  # askdesk's loggers: written to log no message text
REQUEST_LINES = ("httpx", "httpx2")  # "HTTP Request: POST <url> <status>": kept, minus the query
PLACEHOLDER = "[%s record withheld: it may quote messages or keys]"
# loggers that log requests, responses or stored rows below WARNING (and what they may log)
HELD = {
    "aiosqlite": logging.WARNING, "asyncpg": logging.WARNING, "httpcore": logging.WARNING,
    "httpcore2": logging.WARNING, "httpx": logging.INFO, "httpx2": logging.INFO, "urllib3": logging.WARNING,
    "requests": logging.WARNING, "openai": logging.WARNING, "groq": logging.WARNING, "anthropic": logging.WARNING,
    "google_genai": logging.WARNING, "google.genai": logging.WARNING, "google.auth": logging.WARNING,
    "instructor": logging.WARNING, "langsmith": logging.WARNING, "microsoft_teams": logging.WARNING,
    "msal": logging.WARNING, "slack_bolt": logging.WARNING, "slack_sdk": logging.WARNING,
    "aiohttp": logging.WARNING, "websockets": logging.WARNING, "hpack": logging.WARNING,
    "h2": logging.WARNING, "qdrant_client": logging.WARNING, "grpc": logging.WARNING,
    "markdown_it": logging.WARNING, "pypdf": logging.WARNING, "fastembed": logging.WARNING,
}

_installed = False


def _matches(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _where(exc_info: Any) -> str:
    """`(Type at file.py:line in function)`: the exception's type and the frame that raised it."""
    kind = exc_info[0].__name__ if exc_info and exc_info[0] else "exception"
    tb = exc_info[2] if exc_info else None
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return f"({kind})"
    code = tb.tb_frame.f_code
    return f"({kind} at {os.path.basename(code.co_filename)}:{tb.tb_lineno} in {code.co_name})"


def _one_line_traceback(record: logging.LogRecord) -> None:
    if record.exc_info and record.exc_info is not True:
        where = _where(record.exc_info)
        record.msg = f"{record.msg} {where.replace('%', '%%') if record.args else where}"
    record.exc_info = None
    record.exc_text = None
    record.stack_info = None


def _redact(record: logging.LogRecord) -> None:
    if _matches(record.name, OWN):
        _one_line_traceback(record)
        return
    if _matches(record.name, REQUEST_LINES) and not record.exc_info:
        if record.args and isinstance(record.args, tuple):
            record.args = tuple(str(a).split("?", 1)[0] if "://" in str(a) else a for a in record.args)
            return
    where = _where(record.exc_info) if record.exc_info and record.exc_info is not True else ""
    record.msg = PLACEHOLDER % record.name + (f" {where}" if where else "")
    record.args = ()
    record.exc_info = None
    record.exc_text = None
    record.stack_info = None


def hold_chatty_loggers() -> None:
    """Raise the level of the loggers in HELD that the application left unset."""
    for name, level in HELD.items():
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(level)


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
    hold_chatty_loggers()
    _installed = True
