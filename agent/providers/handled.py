"""Failures askdesk handles itself are not logged as errors by the libraries under it.

instructor logs every failed attempt at ERROR ("API call failed on attempt n", then "Max
retries exceeded") although askdesk retries it on the same model, re-asks, or falls back to
the next one, and logs that itself: one WARNING line per retry (agent/providers/retry.py) and
one per fallback (chain.py). Inside `handled_by_askdesk()` instructor's records become DEBUG
records, kept only where its logger is enabled for DEBUG; outside (another user of instructor in
the same process) nothing changes. A module of its own, without imports of instructor, so the
chain can mark its calls without loading the providers' libraries.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

INSTRUCTOR_LOGGERS = ("instructor", "instructor.v2", "instructor.v2.retry")  # where its calls log

_HANDLED: ContextVar[bool] = ContextVar("askdesk_handled_call", default=False)


class DemoteHandled(logging.Filter):
    """A logger's records from inside `handled_by_askdesk()`, as DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _HANDLED.get() or record.levelno <= logging.DEBUG:
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def install() -> None:
    """On each logger instructor's calls log through (a logger's filters see only its own records)."""
    for name in INSTRUCTOR_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, DemoteHandled) for f in logger.filters):
            logger.addFilter(DemoteHandled())


@contextmanager
def handled_by_askdesk() -> Iterator[None]:
    """Model calls inside have their failures retried, re-asked or reported by askdesk."""
    token = _HANDLED.set(True)
    try:
        yield
    finally:
        _HANDLED.reset(token)


install()
