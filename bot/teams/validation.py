"""Malformed activities are refused at the door, with one log line.

The SDK parses a request twice, with its own models (`CoreActivity`, then the activity union
`ActivityTypeAdapter`), and a pydantic error there becomes `logger.exception(...)`: an ERROR
with a traceback whose message quotes the offending input (`input_value='…the user's text…'`)
and an HTTP 500, for an invoke as for anything else. The listener (bot/teams/server.py) runs the
same two parses first, after authentication: a malformed activity gets HTTP 400 and one WARNING
naming the activity id (when it has a usable one) and the failing fields, as pydantic locates
them (`message.text: string_type`), never an input value or pydantic's message (which can quote
the input, e.g. an unknown `type`). The SDK then only ever sees activities it can parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

MAX_FIELDS = 3
_SAFE_PART = re.compile(r"^[A-Za-z0-9_/.\-]{1,48}$")  # field names, aliases and the SDK's union tags
_SAFE_ID = re.compile(r"[^A-Za-z0-9:;=_.@\-]")


@dataclass(frozen=True)
class Malformed:
    activity_id: str | None
    fields: str  # "message.text: string_type; message.locale: string_type"

    def describe(self) -> str:
        return f"activity {self.activity_id or '(no id)'} rejected: {self.fields}"


def activity_id(body: dict[str, Any]) -> str | None:
    """The activity's id as far as it is safe to log: Teams ids are digits, letters and a few marks."""
    value = body.get("id")
    if not isinstance(value, str) or not value:
        return None
    return _SAFE_ID.sub("?", value[:64])


def _where(loc: tuple[Any, ...]) -> str:
    parts = [str(p) if isinstance(p, int) or _SAFE_PART.match(str(p)) else "?" for p in loc]
    return ".".join(parts) or "(activity)"


def fields_of(error: ValidationError) -> str:
    """Where validation failed and how, without the input or pydantic's message."""
    found: list[str] = []
    for problem in error.errors(include_input=False, include_url=False, include_context=False):
        entry = f"{_where(tuple(problem.get('loc', ())))}: {problem.get('type', 'invalid')}"
        if entry not in found:
            found.append(entry)
    more = len(found) - MAX_FIELDS
    return "; ".join(found[:MAX_FIELDS]) + (f"; {more} more" if more > 0 else "")


def malformed(body: dict[str, Any]) -> Malformed | None:
    """None when the SDK can parse `body` as an activity, else why not (safe to log)."""
    from microsoft_teams.api import ActivityTypeAdapter
    from microsoft_teams.apps.events import CoreActivity

    try:
        core = CoreActivity.model_validate(body)  # what HttpServer.handle_request parses
        ActivityTypeAdapter.validate_python(core.model_dump(by_alias=True, exclude_none=True))  # and the app
    except ValidationError as exc:
        return Malformed(activity_id(body), fields_of(exc))
    return None
