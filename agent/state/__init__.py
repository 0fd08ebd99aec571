"""Shared state (agent/state/base.py): SQLite by default, PostgreSQL with ASKDESK_DATABASE_URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.state.base import (
    AnswerRecord,
    AnswerRecords,
    Citation,
    Askers,
    Claims,
    Escalations,
    FeedbackLog,
    Memory,
    RateLimits,
    ReportSources,
    Retention,
    StateStore,
    StateUnavailable,
    TurnLog,
)
from agent.state.guarded import Guarded

if TYPE_CHECKING:
    from agent.config import Settings

__all__ = ["AnswerRecord", "AnswerRecords", "Askers", "Citation", "Claims", "Escalations", "FeedbackLog", "Guarded", "Memory",
           "RateLimits", "ReportSources", "Retention", "StateStore", "StateUnavailable", "TurnLog", "open_state"]


def open_state(settings: "Settings") -> Guarded:
    """The deployment's state store, guarded (agent/state/guarded.py); nothing is connected
    until first use or `open()` (a server opens it at start-up, so a wrong URL fails there)."""
    if settings.database_url:
        from agent.state.postgres import PostgresState  # asyncpg only where it is used

        return Guarded(PostgresState(settings.database_url, retention_days=settings.retention_days))
    from agent.state.sqlite import SQLiteState

    return Guarded(SQLiteState(settings.sqlite_path, retention_days=settings.retention_days))
