"""Learned answers: an expert's reply to an escalated question (or an admin's answer to a gap),
kept as a Markdown file in the managed folder (`settings.learned_path`) and ingested like any
document, so the next person who asks is answered from it, with who answered and when in the
cited passage.

One file per answer (`<slug>-<id>.md`: the question as its title, the answer, an "Answered by"
line). Its front matter says who owns it (the expert who saved it, the admin who wrote it), when
it was saved or last confirmed (`reviewed`) and whether it has expired. An answer is cited until
`reviewed + ASKDESK_LEARNED_REVIEW_DAYS`; past that date its passages leave the index (the file
stays, shown as expired) until its owner or an admin confirms it. Taking expired passages out of
the index, rather than filtering them at search time, leaves every search exactly as fast as
before and the expiry visible in one place: the reviews' round (agent/knowledge/learned_review.py).

The folder is the list: removing a file's answer deletes its chunks through the same code path
`askdesk ingest --prune` uses for files that are gone.
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from agent.clock import Clock, SystemClock
from agent.knowledge.ingest import IngestReport, ingest
from agent.learned import LearnedAnswer, Owner, Status
from agent.yamlio import safe_load

if TYPE_CHECKING:
    from agent.runtime import Runtime

ANSWERED_BY = re.compile(r"^_Answered by (?P<name>.+) on (?P<date>\d{4}-\d{2}-\d{2})\._$", re.M)
FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def slug(text: str, limit: int = 60) -> str:
    """A file-name-safe rendering of a question ("Who can pick up my child?" -> who-can-pick-up-my-child)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return words[:limit].rstrip("-") or "answer"


def render(question: str, answer: str, expert: str, when: datetime, audience: list[str] | None = None, *,
           owner: Owner | None = None, reviewed: datetime | None = None, expired: bool = False,
           reminded: str | None = None) -> str:
    """The answer's file; `audience` (front matter) keeps an answer given in a restricted channel
    to that channel's audience (agent/audience.py)."""
    title = " ".join(question.split())
    meta: list[str] = []
    if audience:
        meta.append(f"audience: {json.dumps(sorted(audience))}")
    if owner is not None:
        meta.append(f"owner: {json.dumps(owner.model_dump(exclude_none=True), ensure_ascii=False)}")
    if reviewed is not None:
        meta.append(f"reviewed: {json.dumps(reviewed.astimezone(timezone.utc).isoformat(timespec='seconds'))}")
    if expired:
        meta.append("expired: true")
    if reminded:
        meta.append(f"reminded: {json.dumps(reminded)}")
    head = "---\n" + "\n".join(meta) + "\n---\n" if meta else ""
    return f"{head}# {title}\n\n{answer.strip()}\n\n_Answered by {' '.join(expert.split())} on {when:%Y-%m-%d}._\n"


def parse(path: Path) -> LearnedAnswer:
    text = path.read_text(encoding="utf-8")
    meta: dict = {}
    found_meta = FRONT_MATTER.match(text)
    if found_meta:
        try:
            loaded = safe_load(found_meta.group(1))
        except yaml.YAMLError:
            loaded = None
        meta = loaded if isinstance(loaded, dict) else {}
        text = text[found_meta.end():]
    lines = text.splitlines()
    title_at = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    title = lines[title_at][2:].strip() if title_at is not None else path.stem
    found = ANSWERED_BY.search(text)
    body = text[:found.start()] if found else text
    if title_at is not None:
        body = "\n".join(body.splitlines()[title_at + 1:])
    owner = meta.get("owner")
    reviewed = meta.get("reviewed")
    audience = meta.get("audience")
    return LearnedAnswer(
        name=path.name, question=title, expert=found["name"] if found else "", date=found["date"] if found else "",
        answer=body.strip(), owner=Owner.model_validate(owner) if isinstance(owner, dict) else None,
        reviewed=datetime.fromisoformat(reviewed) if isinstance(reviewed, str) else None,
        expired=meta.get("expired") is True, reminded=str(meta["reminded"]) if meta.get("reminded") else None,
        audience=[str(a) for a in audience] if isinstance(audience, list) else None)


def listed(folder: Path) -> list[LearnedAnswer]:
    """The learned answers in `folder`, oldest name first."""
    if not folder.is_dir():
        return []
    return [parse(p) for p in sorted(folder.glob("*.md"))]


def _path(folder: Path, name: str) -> Path | None:
    path = folder / Path(name).name
    return path if path.suffix == ".md" and path.is_file() else None


def _write(path: Path, a: LearnedAnswer, *, answer: str | None = None, reviewed: datetime | None = None,
           expired: bool | None = None, answered: datetime | None = None,
           reminded: str | None = None) -> LearnedAnswer:
    """Rewrite `a`'s file with what changed; the answer as now written."""
    if answered is not None:
        when = answered
    elif a.date:
        when = datetime.combine(date.fromisoformat(a.date), datetime.min.time(), timezone.utc)
    else:
        when = a.since
    path.write_text(render(a.question, a.answer if answer is None else answer, a.expert, when, a.audience,
                           owner=a.owner, reviewed=reviewed or a.reviewed,
                           expired=a.expired if expired is None else expired,
                           reminded=reminded or a.reminded), encoding="utf-8")
    return parse(path)


def remember_reminder(folder: Path, name: str, review_by: datetime) -> None:
    """Its owner was messaged about the review date `review_by`: not again for that date."""
    path = _path(folder, name)
    if path is not None:
        _write(path, parse(path), reminded=review_by.date().isoformat())


async def save(runtime: "Runtime", folder: Path, *, key: str, question: str, answer: str, expert: str,
               when: datetime, audience: list[str] | None = None, owner: Owner | None = None,
               reviewed: datetime | None = None) -> tuple[str, IngestReport]:
    """Write the answer's file and ingest it now; returns its name (its source) and the report.
    `audience`: who may see it (None: everyone); `reviewed`: when its review period starts."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{slug(question)}-{slug(key, 12)}.md"
    path.write_text(render(question, answer, expert, when, audience, owner=owner, reviewed=reviewed or when),
                    encoding="utf-8")
    return path.name, await ingest(runtime, [path])


async def remove(runtime: "Runtime", folder: Path, name: str) -> IngestReport | None:
    """Delete a learned answer's file and its chunks; None when there is no such answer."""
    path = _path(folder, name)
    if path is None:
        return None
    path.unlink()
    return await ingest(runtime, [], remove=[path.name])


class LearnedAnswers:
    """The learned answers of one folder on one clock: saving, confirming, editing, retiring and
    expiring them (the console, the CLI, the chat surfaces' buttons and the reviews' round all
    come here, so an answer's review date has one rule)."""

    def __init__(self, runtime: "Runtime", folder: Path, *, review_days: int, remind_days: int,
                 clock: Clock | None = None) -> None:
        self.runtime = runtime
        self.folder = folder
        self.review_days = review_days
        self.remind_days = remind_days
        self.clock: Clock = clock or SystemClock()
        # each file as last parsed, by (mtime, size): the console lists hundreds on every view;
        # this object's own writes drop their entry (two writes may share an mtime tick)
        self._parsed: dict[str, tuple[tuple[int, int], LearnedAnswer]] = {}

    def listed(self) -> list[LearnedAnswer]:
        """The learned answers, oldest name first (a file parsed again only when it changed)."""
        if not self.folder.is_dir():
            return []
        found: list[LearnedAnswer] = []
        for path in sorted(self.folder.glob("*.md")):
            found.append(self._parse(path))
        for name in set(self._parsed) - {a.name for a in found}:
            del self._parsed[name]
        return found

    def _parse(self, path: Path) -> LearnedAnswer:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        kept = self._parsed.get(path.name)
        if kept is None or kept[0] != key:
            kept = (key, parse(path))
            self._parsed[path.name] = kept
        return kept[1]

    def _changed(self, name: str) -> None:
        self._parsed.pop(Path(name).name, None)

    def get(self, name: str) -> LearnedAnswer | None:
        path = _path(self.folder, name)
        return self._parse(path) if path is not None else None

    def remember_reminder(self, name: str, review_by: datetime) -> None:
        """Its owner was messaged about the review date `review_by`: not again for that date."""
        self._changed(name)
        remember_reminder(self.folder, name, review_by)
        self._changed(name)

    def status(self, answer: LearnedAnswer) -> Status:
        return answer.status(self.clock.now(), self.review_days, self.remind_days)

    def review_by(self, answer: LearnedAnswer) -> datetime:
        return answer.review_by(self.review_days)

    async def save(self, *, key: str, question: str, answer: str, expert: str, when: datetime,
                   audience: list[str] | None = None, owner: Owner | None = None) -> str:
        """Keep an answer and ingest it; its review period starts now (the clock's), not at `when`."""
        name, _ = await save(self.runtime, self.folder, key=key, question=question, answer=answer, expert=expert,
                             when=when, audience=audience, owner=owner, reviewed=self.clock.now())
        self._changed(name)
        return name

    async def confirm(self, name: str) -> LearnedAnswer | None:
        """Still right: a new review period from now, and cited again if it had expired."""
        path = _path(self.folder, name)
        if path is None:
            return None
        self._changed(name)
        before = parse(path)
        confirmed = _write(path, before, reviewed=self.clock.now(), expired=False)
        self._changed(name)
        if before.expired:
            await ingest(self.runtime, [path])
        return confirmed

    async def edit(self, name: str, answer: str) -> LearnedAnswer | None:
        """A corrected answer: rewritten, ingested again (replacing its passages) and confirmed."""
        path = _path(self.folder, name)
        text = answer.strip()
        if path is None or not text:
            return None
        now = self.clock.now()
        self._changed(name)
        edited = _write(path, parse(path), answer=text, reviewed=now, expired=False, answered=now)
        self._changed(name)
        await ingest(self.runtime, [path])
        return edited

    async def retire(self, name: str) -> bool:
        """No longer right: the file and its passages go."""
        self._changed(name)
        return await remove(self.runtime, self.folder, name) is not None

    async def expire_due(self) -> list[LearnedAnswer]:
        """Take the passages of every answer past its review date out of the index (once each).
        A file from before reviews (no `reviewed`) gets a full period from now instead: an
        upgrade never silences answers nobody was asked about."""
        now = self.clock.now()
        expired: list[LearnedAnswer] = []
        for a in self.listed():
            if a.reviewed is None:
                self._changed(a.name)
                _write(self.folder / a.name, a, reviewed=now)
                self._changed(a.name)
                continue
            if a.expired or now < a.review_by(self.review_days):
                continue
            path = self.folder / a.name
            expired.append(_write(path, parse(path), expired=True))
            self._changed(a.name)
            await ingest(self.runtime, [], remove=[a.name], revisit=False)  # withheld, not changed: no note
        return expired
