"""The `retrieval` section of an eval file: recall@1/3/5, MRR and per-language recall, and
whether what a person reads first in a search-only answer holds the answer.

An item `{id, question, must_contain, lang?}` is a hit at k when every `must_contain` string
occurs (case-insensitively) in at least one of the top-k passages — in what each hands over, its
section `context` when search expanded it — ; its rank is the smallest such k. The search runs exactly as the bot's tool does (hybrid unless `mode` says otherwise).

`lines_hold`: the share of items whose answer lines (agent/knowledge/answer_lines.py, weighed by
words and meaning as a search-only answer's are), or the first passage when none is quoted, hold
every `must_contain` string; `first_line`: the same for the first line alone; `lines_quoted`:
the share whose quoted lines themselves hold them (no passage in their place).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, NamedTuple

from agent.knowledge.answer_lines import answer_lines
from agent.knowledge.line_meaning import line_closeness
from agent.knowledge.search import Passage, SearchMode, as_searched, search

if TYPE_CHECKING:
    from agent.runtime import Runtime

KS = (1, 3, 5)


def hit_rank(passages: list[Passage], must_contain: list[str]) -> int | None:
    """1-based number of passages needed before every string has been seen, or None."""
    needed = [s.lower() for s in must_contain]
    seen: set[int] = set()
    for rank, p in enumerate(passages, start=1):
        text = f"{p.title}\n{p.section}\n{p.context or p.text}".lower()  # what the reader is shown
        seen.update(i for i, s in enumerate(needed) if s in text)
        if len(seen) == len(needed):
            return rank
    return None


def _holds(text: str, must_contain: list[str]) -> bool:
    return all(s.lower() in text.lower() for s in must_contain)


class Read(NamedTuple):
    """What a search-only answer shows first, against an item's `must_contain`."""

    shown: bool  # its quoted lines, else its first passage, hold them
    first: bool  # its first line (else its first passage) does
    quoted: bool  # its quoted lines themselves do


async def read_first(runtime: "Runtime", question: str, passages: list[Passage], must_contain: list[str]) -> Read:
    """What the answer lines a search-only answer quotes (else its first passage) hold."""
    question = await as_searched(runtime, question)  # as the turn reads its lines
    lines = answer_lines(question, passages, closeness=await line_closeness(runtime, question, passages))
    first = (passages[0].context or passages[0].text) if passages else ""
    quoted = " ".join(line.unit.markdown() for line in lines)
    return Read(_holds(quoted or first, must_contain), _holds(lines[0].unit.markdown() if lines else first, must_contain),
                bool(lines) and _holds(quoted, must_contain))


def score(ranks: dict[str, int | None], langs: dict[str, str], top_k: int,
          read: dict[str, Read] | None = None) -> dict[str, Any]:
    n = len(ranks)
    ks = sorted(set(KS) | {top_k})
    result: dict[str, Any] = {}
    for k in ks:
        result[f"recall@{k}"] = round(sum(1 for r in ranks.values() if r and r <= k) / n, 4) if n else 0.0
    result["mrr"] = round(sum(1 / r for r in ranks.values() if r) / n, 4) if n else 0.0
    by_lang: dict[str, list[int | None]] = defaultdict(list)
    for item_id, r in ranks.items():
        by_lang[langs.get(item_id, "und")].append(r)
    result["by_lang"] = {
        lang: round(sum(1 for r in rs if r and r <= top_k) / len(rs), 4) for lang, rs in sorted(by_lang.items())
    }
    if read:
        result["lines_hold"] = round(sum(1 for r in read.values() if r.shown) / len(read), 4)
        result["first_line"] = round(sum(1 for r in read.values() if r.first) / len(read), 4)
        result["lines_quoted"] = round(sum(1 for r in read.values() if r.quoted) / len(read), 4)
    result["n"] = n
    result["top_k"] = top_k
    result["failures"] = [item_id for item_id, r in ranks.items() if not r or r > top_k]
    if read:
        result["lines_failures"] = [item_id for item_id, r in read.items() if not r.shown]
    return result


async def rank_items(
    items: list[dict],
    runtime: "Runtime",
    *,
    depth: int = max(KS),
    collection: str | None = None,
    mode: SearchMode = "hybrid",
    read: dict[str, Read] | None = None,
    top_k: int = max(KS),
) -> tuple[dict[str, int | None], dict[str, str]]:
    """Per item id: the hit rank within `depth` passages (or None), and the item's language;
    with `read`, also what a search-only answer over the top `top_k` shows first (`read_first`)."""
    ranks: dict[str, int | None] = {}
    langs: dict[str, str] = {}
    for i, item in enumerate(items):
        item_id = str(item.get("id", f"#{i + 1}"))
        passages = await search(runtime, str(item["question"]), top_k=depth, collection=collection, mode=mode)
        must_contain = [str(s) for s in item.get("must_contain", [])]
        ranks[item_id] = hit_rank(passages, must_contain)
        langs[item_id] = str(item.get("lang", "und"))
        if read is not None:
            read[item_id] = await read_first(runtime, str(item["question"]), passages[:top_k], must_contain)
    return ranks, langs


async def evaluate(
    items: list[dict],
    runtime: "Runtime",
    *,
    top_k: int = 5,
    eval_data: dict | None = None,
    collection: str | None = None,
    mode: SearchMode = "hybrid",
) -> dict[str, Any]:
    read: dict[str, Read] = {}
    ranks, langs = await rank_items(items, runtime, depth=max(top_k, max(KS)), collection=collection, mode=mode,
                                    read=read, top_k=top_k)
    return score(ranks, langs, top_k, read)


class Section:
    """The `retrieval` section of the knowledge capability."""

    async def evaluate(self, items: list[dict], run: Any) -> dict[str, Any]:
        return await evaluate(items, run.service.runtime, top_k=run.top_k)

    def render(self, result: dict[str, Any]) -> str:
        return render(result)


def render(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"skipped ({result['skipped']})"
    ks = [k for k in result if k.startswith("recall@")]
    head = "  ".join(f"{k} {result[k]:.3f}" for k in ks) + f"  MRR {result['mrr']:.3f}  (n={result['n']})"
    langs = "  ".join(f"{lang} {value:.3f}" for lang, value in result["by_lang"].items())
    failures = ", ".join(result["failures"]) or "none"
    text = f"{head}\nrecall@{result['top_k']} by language: {langs}\nfailing: {failures}"
    if "lines_hold" in result:
        missed = ", ".join(result["lines_failures"]) or "none"
        text += (f"\nanswer lines hold the answer {result['lines_hold']:.3f} (first line {result['first_line']:.3f}, "
                 f"quoted lines alone {result.get('lines_quoted', 0.0):.3f}); not held: {missed}")
    return text
