"""Who is asking, as the knowledge sources' audiences name people and places.

Each synced chunk carries `audience`: the keys that may see it ("everyone", channel ids, user
ids, emails, "domain:<domain>"). A turn sets the asker's keys once (`viewing`), and every
knowledge search of that turn — the off-topic gate's, the prefetch, the agent's tool calls,
suggested prompts — is narrowed by `audience_filter()` without being handed anything: a code
path cannot forget the filter. `None` means unrestricted (the terminal, `askdesk search`, an
admin's playground run without a viewer); chunks without `audience` (folders ingested with
`askdesk ingest`, learned answers) are everyone's.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

import agent.store.models as models

EVERYONE = "everyone"
NOBODY = "nobody"  # an audience that names no one: visible to no asker
AUDIENCE_KEY = "audience"

# read directly by the knowledge search (a plain `.get()`, no call into this module when no
# audience applies)
VIEWING: ContextVar[frozenset[str] | None] = ContextVar("askdesk_audience", default=None)


def viewer_keys(*, channel: str | None = None, user: str | None = None, email: str | None = None,
                private: bool = False) -> frozenset[str]:
    """The keys of an asker. In a channel (and not privately), what the channel may see: an
    answer there is read by all its members. In a DM or a private answer, what the person may
    see: their user id, their email and their email's domain."""
    if channel and not private:
        return frozenset({channel})
    keys = {k for k in (user, (email or "").lower()) if k}
    if email and "@" in email:
        keys.add("domain:" + email.rsplit("@", 1)[1].lower())
    return frozenset(keys)


@contextmanager
def viewing(keys: frozenset[str] | None) -> Iterator[None]:
    """Narrow every knowledge search inside the block to what `keys` may see."""
    token = VIEWING.set(keys)
    try:
        yield
    finally:
        VIEWING.reset(token)


def current() -> frozenset[str] | None:
    return VIEWING.get()


def audience_filter(keys: frozenset[str] | None = None) -> models.Filter | None:
    """A chunk is visible when its audience names one of `keys` or everyone, or it has none."""
    keys = current() if keys is None else keys
    if keys is None:
        return None
    return models.Filter(should=[
        models.FieldCondition(key=AUDIENCE_KEY, match=models.MatchAny(any=sorted(keys | {EVERYONE}))),
        models.IsEmptyCondition(is_empty=models.PayloadField(key=AUDIENCE_KEY)),
    ])


def narrowed(flt: models.Filter | None) -> models.Filter | None:
    """`flt` (a search's own conditions) and the current audience, both."""
    audience = audience_filter()
    if audience is None:
        return flt
    if flt is None:
        return audience
    return models.Filter(must=[models.neutral(flt), audience])


def normal_audience(keys: list[str] | None) -> list[str]:
    """An audience as chunks carry it: emails and domains lower-cased (they compare so), channel
    and user ids as they are; never empty (an empty list would read as "no audience": everyone)."""
    if keys is None:
        return [EVERYONE]
    out = {k.lower() if "@" in k or k.lower().startswith("domain:") else k for k in (str(x).strip() for x in keys) if k}
    return sorted(out) or [NOBODY]


def may_see(audience: list[str] | None, keys: frozenset[str] | None) -> bool:
    """The same rule for one document outside the store (a learned answer, a suggested prompt)."""
    return keys is None or not audience or EVERYONE in audience or bool(keys & set(audience))
