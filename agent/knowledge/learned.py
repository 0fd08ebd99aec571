"""Learned answers: an expert's reply to an escalated question, kept as a Markdown file in the
managed folder (`settings.learned_path`) and ingested like any document, so the next person who
asks is answered from it, with who answered and when in the cited passage.

One file per answer (`<slug>-<id>.md`: the question as its title, the answer, an "Answered by"
line). The folder is the list: removing a file's answer deletes its chunks through the same
code path `askdesk ingest --prune` uses for files that are gone.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agent.knowledge.ingest import IngestReport, ingest

if TYPE_CHECKING:
    from agent.runtime import Runtime

ANSWERED_BY = re.compile(r"^_Answered by (?P<name>.+) on (?P<date>\d{4}-\d{2}-\d{2})\._$", re.M)


@dataclass(frozen=True)
class LearnedAnswer:
    name: str  # the file's name: its source in the knowledge base
    question: str
    expert: str
    date: str


def slug(text: str, limit: int = 60) -> str:
    """A file-name-safe rendering of a question ("Who can pick up my child?" -> who-can-pick-up-my-child)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return words[:limit].rstrip("-") or "answer"


def render(question: str, answer: str, expert: str, when: datetime, audience: list[str] | None = None) -> str:
    """The answer's file; `audience` (front matter) keeps an answer given in a restricted channel
    to that channel's audience (agent/audience.py)."""
    title = " ".join(question.split())
    head = f"---\naudience: {json.dumps(sorted(audience))}\n---\n" if audience else ""
    return f"{head}# {title}\n\n{answer.strip()}\n\n_Answered by {' '.join(expert.split())} on {when:%Y-%m-%d}._\n"


def parse(path: Path) -> LearnedAnswer:
    text = path.read_text(encoding="utf-8")
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.stem)
    found = ANSWERED_BY.search(text)
    return LearnedAnswer(name=path.name, question=title, expert=found["name"] if found else "",
                         date=found["date"] if found else "")


def listed(folder: Path) -> list[LearnedAnswer]:
    """The learned answers in `folder`, oldest name first."""
    if not folder.is_dir():
        return []
    return [parse(p) for p in sorted(folder.glob("*.md"))]


async def save(runtime: "Runtime", folder: Path, *, key: str, question: str, answer: str, expert: str,
               when: datetime, audience: list[str] | None = None) -> tuple[str, IngestReport]:
    """Write the answer's file and ingest it now; returns its name (its source) and the report.
    `audience`: who may see it (None: everyone)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{slug(question)}-{slug(key, 12)}.md"
    path.write_text(render(question, answer, expert, when, audience), encoding="utf-8")
    return path.name, await ingest(runtime, [path])


async def remove(runtime: "Runtime", folder: Path, name: str) -> IngestReport | None:
    """Delete a learned answer's file and its chunks; None when there is no such answer."""
    path = folder / Path(name).name
    if path.suffix != ".md" or not path.is_file():
        return None
    path.unlink()
    return await ingest(runtime, [], remove=[path.name])
