"""Unanswered and down-voted questions grouped by meaning: average-linkage (UPGMA) agglomerative
clustering on cosine similarity (numpy). Start with one cluster per distinct question, merge
the two clusters whose questions are on average most alike while that average is at least
`threshold`. Average linkage, not centroid linkage: e5 vectors share a large common direction,
so a big cluster's centroid drifts close to every question and swallows them all. Deterministic,
no number of clusters to guess, and a few hundred questions cluster in milliseconds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

THRESHOLD = 0.87  # multilingual-e5 "query:" cosine: paraphrases sit at 0.9 and up, other questions at 0.7-0.85
MAX_EXAMPLES = 3


@dataclass
class Cluster:
    size: int  # questions in it, repeats counted
    examples: list[str] = field(default_factory=list)  # the most asked first, at most MAX_EXAMPLES
    unanswered: int = 0
    down_voted: int = 0

    def as_dict(self) -> dict:
        return {"size": self.size, "examples": self.examples, "unanswered": self.unanswered,
                "down_voted": self.down_voted}


@dataclass(frozen=True)
class GapQuestion:
    text: str
    kind: str  # "unanswered" | "down_voted"


def normalise(text: str) -> str:
    """Repeats of a question count once for embedding (case and spacing aside)."""
    return " ".join(text.lower().split())


def groups(vectors: np.ndarray, threshold: float = THRESHOLD) -> list[list[int]]:
    """Indices of `vectors` grouped by centroid linkage at `threshold` (cosine)."""
    n = len(vectors)
    if n == 0:
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sums = unit.astype(np.float64).copy()  # average link(A, B) = sum(A) . sum(B) / (|A| |B|)
    sizes = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]
    alive = np.ones(n, dtype=bool)
    sim = sums @ sums.T
    np.fill_diagonal(sim, -np.inf)
    while True:
        i, j = divmod(int(np.argmax(sim)), n)
        if sim[i, j] < threshold:
            break
        i, j = min(i, j), max(i, j)
        members[i].extend(members[j])
        members[j] = []
        sums[i] += sums[j]
        sizes[i] += sizes[j]
        alive[j] = False
        sim[j, :] = -np.inf
        sim[:, j] = -np.inf
        row = (sums @ sums[i]) / (sizes * sizes[i])
        row[~alive] = -np.inf
        row[i] = -np.inf
        sim[i, :] = row
        sim[:, i] = row
    return [m for m in members if m]


def cluster(questions: Sequence[GapQuestion], vectors: np.ndarray, keys: list[str],
            threshold: float = THRESHOLD) -> list[Cluster]:
    """Clusters of `questions`; `vectors[k]` embeds the distinct question `keys[k]` (normalised).
    Biggest first; ties by first example."""
    counts: dict[str, dict[str, int]] = {}
    shown: dict[str, str] = {}
    for q in questions:
        key = normalise(q.text)
        counts.setdefault(key, {"unanswered": 0, "down_voted": 0})[q.kind] += 1
        shown.setdefault(key, q.text.strip())
    out = []
    for group in groups(vectors, threshold):
        group_keys = sorted((keys[k] for k in group), key=lambda k: (-sum(counts[k].values()), k))
        c = Cluster(size=0, examples=[shown[k] for k in group_keys[:MAX_EXAMPLES]])
        for k in group_keys:
            c.unanswered += counts[k]["unanswered"]
            c.down_voted += counts[k]["down_voted"]
        c.size = c.unanswered + c.down_voted
        out.append(c)
    return sorted(out, key=lambda c: (-c.size, c.examples[0] if c.examples else ""))
