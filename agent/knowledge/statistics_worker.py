"""The process that counts a full scan into statistics (agent/knowledge/statistics.py, `build`).

    python -m agent.knowledge.statistics_worker STATISTICS_FILE CONTENT_VERSION < chunks

Reads one chunk a line (a JSON array of the `PAYLOAD` fields), counts it, and at the end of its
input replaces the statistics file with what it counted and prints the number of chunks.
Tokenising is the Python work of a scan; in its own process it takes the GIL from no question,
and it runs only on CPU time the bot leaves idle (Linux's SCHED_IDLE; elsewhere, niceness 19).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from agent.knowledge.statistics import PAYLOAD, Statistics, write

def lowest_priority() -> None:
    """Questions (the bot's threads) get the CPU first."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):  # not Linux
        try:
            os.nice(19)
        except OSError:
            pass


def main(argv: list[str]) -> int:
    path, version = Path(argv[0]), argv[1] or None
    lowest_priority()
    stats = Statistics(content_version=version)
    for line in sys.stdin.buffer:
        stats.count(dict(zip(PAYLOAD, json.loads(line))))
    write(path, stats, True)
    print(stats.chunks)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
