"""Regression cases: feedback that became a test.

When an expert's reply is saved as an answer (after "Ask a person", often from a 👎) or an admin
writes a learned answer in the console, the question and the document that answers it (the
learned answer's file) become a case: the knowledge base must keep finding that document in its
top 5 for that question. `askdesk eval --regressions` runs every case, and every sync that
changed something reports the cases that no longer find their source (agent/sources/sync.py).

The cases are a YAML file in the data dir (`<data_dir>/regressions.yaml`, the same shape as an
eval file's section) rather than a table: an admin can read, edit, delete or copy it into an eval
set under version control, and it is written only when a learned answer is saved (one process).
The search is the operator's (no audience): a case checks what the knowledge base holds, not
who may see it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, Field

from agent.yamlio import safe_load

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.runtime import Runtime

FILE = "regressions.yaml"
TOP_K = 5


class RegressionCase(BaseModel):
    id: str
    question: str
    expected: str  # the document key the question must find (a learned answer's file name, `@source/ref`)
    origin: str = ""  # where it came from: "escalation", "console"
    created: str = Field(default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%d"))


class CaseResult(BaseModel):
    id: str
    question: str
    expected: str
    found: bool
    rank: int | None = None  # 1-based, within TOP_K
    got: list[str] = []  # the sources found instead (in order)


def path_of(settings: "Settings") -> Path:
    return settings.data_dir / FILE


def case_id(question: str, expected: str) -> str:
    return hashlib.sha256(f"{' '.join(question.lower().split())}\x00{expected}".encode()).hexdigest()[:10]


def load_cases(settings: "Settings") -> list[RegressionCase]:
    path = path_of(settings)
    if not path.is_file():
        return []
    data = safe_load(path.read_text(encoding="utf-8")) or {}
    return [RegressionCase.model_validate(item) for item in (data.get("regressions") or [])]


def save_cases(settings: "Settings", cases: list[RegressionCase]) -> None:
    """Write the file whole and swap it in (a reader never sees half of it)."""
    path = path_of(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump({"regressions": [c.model_dump() for c in cases]}, allow_unicode=True, sort_keys=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".regressions-", suffix=".yaml")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("# Regression cases: askdesk eval --regressions (agent/evaluation/regressions.py)\n" + body)
    os.replace(tmp, path)


def add_case(settings: "Settings", question: str, expected: str, origin: str) -> RegressionCase:
    """Keep (question, expected source) as a case; the same pair again replaces it."""
    case = RegressionCase(id=case_id(question, expected), question=" ".join(question.split()), expected=expected,
                          origin=origin)
    cases = [c for c in load_cases(settings) if c.id != case.id]
    save_cases(settings, [*cases, case])
    return case


def forget_expected(settings: "Settings", expected: str) -> int:
    """Drop the cases of a document taken out on purpose (a learned answer removed); how many."""
    cases = load_cases(settings)
    kept = [c for c in cases if c.expected != expected]
    if len(kept) != len(cases):
        save_cases(settings, kept)
    return len(cases) - len(kept)


async def check(runtime: "Runtime", cases: list[RegressionCase] | None = None, *,
                top_k: int = TOP_K) -> list[CaseResult]:
    """Each case's question searched as the bot's tool searches (hybrid): found in the top k?"""
    from agent.knowledge.search import search

    cases = load_cases(runtime.settings) if cases is None else cases
    results = []
    for case in cases:
        passages = await search(runtime, case.question, top_k=top_k)
        got = list(dict.fromkeys(p.source for p in passages))
        rank = next((i for i, p in enumerate(passages, start=1) if p.source == case.expected), None)
        results.append(CaseResult(id=case.id, question=case.question, expected=case.expected, found=rank is not None,
                                  rank=rank, got=got))
    return results


def summary(results: list[CaseResult]) -> dict[str, Any]:
    lost = [r for r in results if not r.found]
    return {"cases": len(results), "found": len(results) - len(lost), "top_k": TOP_K,
            "lost": [{"id": r.id, "question": r.question, "expected": r.expected} for r in lost]}


def render(results: list[CaseResult]) -> str:
    if not results:
        return "no regression cases yet (they are written when a learned answer is saved)"
    lines = [f"{'found' if r.found else 'NOT FOUND':>9}  {('#' + str(r.rank)) if r.rank else '  '}  "
             f"{r.expected}  <- {r.question}" for r in results]
    found = sum(r.found for r in results)
    return "\n".join([*lines, f"{found}/{len(results)} cases find their source in the top {TOP_K}"])
