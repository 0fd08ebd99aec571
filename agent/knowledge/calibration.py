"""What "on topic" looks like for one knowledge collection, learned from the collection itself.

The off-topic gate (agent/understanding/gate.py) compares a message with the knowledge base and
with shipped examples of requests to decline. Raw cosine similarities of the embedder are
compressed into a narrow band (0.75–0.95 for almost anything) and shifted differently for every
knowledge base, so no fixed threshold transfers from one deployment to another. Calibration fixes
both, per collection:

- **centers**: the mean passage vector of the collection and the mean query vector of the
  examples. Similarities are measured after removing them (centered cosine), which spreads the
  band out: the part every text shares no longer counts as evidence;
- **the examples against this knowledge base**: how close each example to decline comes to the
  collection (`kb`), and to its nearest other example (`off`). Their distribution is the
  collection's own yardstick: the gate refuses a message only when it sits where the examples
  sit, by a margin; examples that come as close to this collection as its own questions do are
  set aside (a request to decline elsewhere may be a question here: `close`);
- **across languages**: the same measures with each example language's own mean query vector
  removed instead of the mean of all examples (`query_centers`, `kb_across`, `margin_across`).
  A multilingual vector carries its language besides its meaning, so a Vietnamese message comes
  closer to the Vietnamese examples to decline than its meaning warrants, while its similarity to
  documents written in English carries no such bonus. The gate measures a message in a language
  the documents are not written in this way (agent/understanding/gate.py).

Computed at ingest when the collection changed (and by `ensure` when a collection has none, or
an older one), stored in the collection's metadata (some tens of kilobytes, whatever its size), read
by the gate once per content version.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from agent.knowledge.embed_cache import open_cache, text_hash
from agent.knowledge.language import detect_language
from agent.knowledge.store import DENSE
from agent.yamlio import safe_load

if TYPE_CHECKING:
    from agent.knowledge.answerable_calibration import AnswerableCalibration
    from agent.runtime import Runtime
    from agent.understanding.domain import Domain

log = logging.getLogger(__name__)

EXAMPLE_FILES = ("offtopic_exemplars.yaml", "offtopic_corpus.yaml")  # in agent/data
# An example as close to this collection as its closest 10 % (and closer to it than to any
# other example) is set aside: for this knowledge base it may be a real question.
CLOSE_PCT = 90
KEY = "calibration"  # metadata key
CONTENT_KEY = "content_version"  # metadata key: changes whenever an ingest changed the collection
SAMPLE = 20_000  # passages sampled for the center and the examples' closeness (enough for a mean)
PERCENTILES = (5, 10, 25, 50, 75, 90, 95, 100)
DOMAIN_KIND = "domain file"  # the kind of the domain file's own examples


def unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


FORMAT = 4  # bumped when what a calibration holds changes: older ones are recomputed


def examples_version(texts: list[str]) -> str:
    return hashlib.sha256("\n".join([f"format {FORMAT}", *texts]).encode()).hexdigest()[:16]


@dataclass
class Calibration:
    content_version: str  # the collection's content it describes
    examples_version: str  # the example set it was computed with
    embedder: str
    chunks: int  # passages measured (a sample of a large collection)
    passage_center: list[float]
    query_center: list[float]
    # percentiles of the examples' centered similarity to the collection (`kb`), and of how much
    # closer they come to their nearest other example than to the collection (`margin`), per
    # language of the examples ("all" for every example): a message is compared with the examples
    # written in its own language, like with like
    kb: dict[str, dict[str, float]]
    margin: dict[str, dict[str, float]]
    close: list[int] = field(default_factory=list)  # examples set aside: as close as its own questions
    computed_at: float = 0.0
    # each example language's mean query vector, and the percentiles of `kb` and `margin` measured
    # with it removed (each example from its own language's mean): how a message in a language the
    # documents are not written in is judged, its language component gone from both sides
    query_centers: dict[str, list[float]] = field(default_factory=dict)
    kb_across: dict[str, dict[str, float]] = field(default_factory=dict)
    margin_across: dict[str, dict[str, float]] = field(default_factory=dict)
    # where a question the documents do not answer sits for this collection, learned from its own
    # passages (agent/knowledge/answerable_calibration.py); None until measured
    answerable: dict[str, Any] | None = None

    def answerable_cuts(self) -> "AnswerableCalibration | None":
        from agent.knowledge.answerable_calibration import AnswerableCalibration

        return AnswerableCalibration.model_validate(self.answerable) if self.answerable else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Calibration":
        return cls(**data)

    def summary(self) -> dict[str, Any]:
        """What `askdesk ingest --json` and `askdesk eval` report (no vectors)."""
        return {"chunks": self.chunks, "examples_version": self.examples_version,
                "examples_set_aside": len(self.close), "examples_similarity_to_kb": self.kb.get("all", {}),
                "examples_margin": self.margin.get("all", {}), "content_version": self.content_version,
                "answerable": cuts.summary() if (cuts := self.answerable_cuts()) else None}

    def query_center_of(self, lang: str) -> np.ndarray:
        """The mean query vector of the examples in `lang` (of all examples when too few are in it)."""
        return np.asarray(self.query_centers.get(lang) or self.query_center, dtype=np.float32)

    def percentile(self, table: str, lang: str, p: int) -> float | None:
        """A percentile of the examples in `lang` (all examples when too few are in it)."""
        values = getattr(self, table)
        row = values.get(lang) or values.get("all") or {}
        return row.get(f"p{p}")


def centered(query: list[float], points: list[Any], data: dict[str, Any]) -> list[float | None]:
    """Each point's centered cosine to `query` (None for a point returned without its vector)."""
    q = unit(np.asarray(query, dtype=np.float32)) - np.asarray(data["query_center"], dtype=np.float32)
    q = unit(q)
    p_center = np.asarray(data["passage_center"], dtype=np.float32)
    out: list[float | None] = []
    for point in points:
        vector = point.vector.get(DENSE) if isinstance(point.vector, dict) else None
        if vector is None:
            out.append(None)
            continue
        v = unit(unit(np.asarray(vector, dtype=np.float32)) - p_center)
        out.append(round(float(v @ q), 4))
    return out


async def sample_vectors(runtime: "Runtime", collection: str, limit: int = SAMPLE) -> np.ndarray:
    """Up to `limit` passage vectors of the collection (its first points: the mean needs no more)."""
    vectors: list[list[float]] = []
    offset = None
    while len(vectors) < limit:
        points, offset = await runtime.store.scroll(collection, limit=min(1024, limit - len(vectors)), offset=offset,
                                                    with_payload=False, with_vectors=[DENSE])
        vectors += [p.vector[DENSE] for p in points if isinstance(p.vector, dict) and DENSE in p.vector]
        if offset is None:
            break
    return np.asarray(vectors, dtype=np.float32)


MIN_PER_LANGUAGE = 20  # examples a language needs for percentiles of its own


def compute(passages: np.ndarray, examples: np.ndarray, langs: list[str], *, content_version: str,
            examples_version: str, embedder: str, close_pct: int, categories: list[str] | None = None) -> Calibration:
    """The calibration of a collection from its passage vectors and the examples' query vectors
    (`langs`: each example's language, `categories`: its kind, e.g. "weather"). An example's
    margin is measured against the examples of *other* kinds: the shipped list holds near
    paraphrases of each example, and a message askdesk has never seen is not one of them. An
    example that comes as close to the collection as the closest `100 - close_pct` % of the
    examples in its language do, and closer to the collection than to any other example, is set
    aside: for this knowledge base it may be a real question."""
    passages, examples = unit(passages), unit(examples)
    p_center, q_center = passages.mean(axis=0), examples.mean(axis=0)
    pc, ec = unit(passages - p_center), unit(examples - q_center)
    kb = (ec @ pc.T).max(axis=1) if len(pc) else np.zeros(len(ec))
    nearest = ec @ ec.T
    kinds = np.asarray(categories if categories is not None else [str(i) for i in range(len(ec))])
    nearest[kinds[:, None] == kinds[None, :]] = -1.0  # itself and its own kind
    margin = kb - nearest.max(axis=1)
    languages = np.asarray(langs)

    def pct(values: np.ndarray) -> dict[str, float]:
        return {f"p{p}": round(float(np.percentile(values, p)), 4) for p in PERCENTILES} if len(values) else {}

    declared = kinds == DOMAIN_KIND  # the deployment says these are to be declined: never set aside
    groups = {"all": np.ones(len(langs), dtype=bool)}
    groups.update({lang: languages == lang for lang in sorted(set(langs))
                   if (languages == lang).sum() >= MIN_PER_LANGUAGE})
    # across languages: each example measured from its own language's mean
    centers = {lang: examples[mask].mean(axis=0) for lang, mask in groups.items() if lang != "all"}
    ex_across = unit(examples - np.stack([centers.get(lang, q_center) for lang in langs])) if len(examples) else ec
    kb_across = (ex_across @ pc.T).max(axis=1) if len(pc) else np.zeros(len(ec))
    nearest_across = ex_across @ ex_across.T
    nearest_across[kinds[:, None] == kinds[None, :]] = -1.0
    margin_across = kb_across - nearest_across.max(axis=1)
    close: set[int] = set()
    for mask in groups.values():
        cut = np.percentile(kb[mask], close_pct)
        close.update(int(i) for i in np.flatnonzero(mask & (kb >= cut) & (margin > 0) & ~declared))
    return Calibration(content_version=content_version, examples_version=examples_version, embedder=embedder,
                       chunks=len(passages), passage_center=[round(float(x), 6) for x in p_center],
                       query_center=[round(float(x), 6) for x in q_center],
                       kb={g: pct(kb[m]) for g, m in groups.items()}, margin={g: pct(margin[m]) for g, m in groups.items()},
                       close=sorted(close), computed_at=time.time(),
                       query_centers={g: [round(float(x), 6) for x in c] for g, c in centers.items()},
                       kb_across={g: pct(kb_across[m]) for g, m in groups.items()},
                       margin_across={g: pct(margin_across[m]) for g, m in groups.items()})


class NotIngested(LookupError):
    """The collection does not exist yet: nothing to calibrate."""


async def stored(runtime: "Runtime", collection: str) -> tuple[Calibration | None, str | None]:
    """(the stored calibration, the collection's current content version)."""
    metadata = await runtime.store.collection_metadata(collection) or {}
    data = metadata.get(KEY)
    calibration = Calibration.from_json(data) if isinstance(data, dict) else None
    return calibration, metadata.get(CONTENT_KEY)


async def mark_changed(runtime: "Runtime", collection: str, version: str | None = None) -> str:
    """A new content version (`version`, or a fresh one): the collection changed (calibration
    and statistics are stale)."""
    version = version or uuid.uuid4().hex[:16]
    await runtime.store.update_metadata(collection, {CONTENT_KEY: version})
    return version


async def compute_and_store(runtime: "Runtime", collection: str, example_texts: list[str],
                            example_vectors: np.ndarray, langs: list[str], *, close_pct: int,
                            categories: list[str] | None = None) -> Calibration:
    """Compute and store the collection's calibration for its current content (NotIngested:
    there is no such collection yet, and nothing is written for it)."""
    if await runtime.store.collection_metadata(collection) is None:
        raise NotIngested(collection)
    _, version = await stored(runtime, collection)
    version = version or await mark_changed(runtime, collection)
    passages = await sample_vectors(runtime, collection)
    calibration = compute(passages, example_vectors, langs, content_version=version,
                          examples_version=examples_version(example_texts), embedder=runtime.settings.embedder,
                          close_pct=close_pct, categories=categories)
    await runtime.store.update_metadata(collection, {KEY: calibration.to_json()})
    log.info("calibrated %s: %d passages, %d of %d examples set aside", collection, calibration.chunks,
             len(calibration.close), len(example_texts))
    return calibration


# --------------------------------------------------------------------------- the examples


def example_kinds(domain: "Domain | None" = None) -> dict[str, str]:
    """The shipped examples of requests to decline and the domain file's, in a stable order,
    each with its kind (the YAML key without its language suffix: "weather_es" -> "weather")."""
    kinds: dict[str, str] = {}
    for name in EXAMPLE_FILES:
        source = resources.files("agent.data").joinpath(name)
        if not source.is_file():
            continue
        data = safe_load(source.read_text(encoding="utf-8")) or {}
        for key, group in data.items():
            kind = str(key).rsplit("_", 1)[0] if str(key).endswith(("_en", "_es", "_vi")) else str(key)
            for text in group or []:
                kinds.setdefault(str(text).strip(), kind)
    for text in domain.offtopic if domain is not None else []:
        kinds.setdefault(str(text).strip(), DOMAIN_KIND)
    return {t: k for t, k in kinds.items() if t}


def example_texts(domain: "Domain | None" = None) -> list[str]:
    return list(example_kinds(domain))


def shipped_exemplars() -> list[str]:
    return example_texts()


SEED = "offtopic_vectors.npz"  # in agent/data: the shipped examples' vectors for the default embedder


def seeded(embedder: str) -> dict[str, np.ndarray]:
    """The shipped examples' query vectors (text hash -> vector) when `embedder` made them."""
    source = resources.files("agent.data").joinpath(SEED)
    if not source.is_file():
        return {}
    with source.open("rb") as handle:
        data = np.load(handle)
        if str(data["embedder"]) != embedder:
            return {}
        return dict(zip((str(h) for h in data["hashes"]), data["vectors"].astype(np.float32)))


def write_seed(path: "Any", embedder: str, texts: list[str], vectors: np.ndarray) -> None:
    """`python -m agent.knowledge.calibration`: ship the examples' vectors with the package."""
    np.savez_compressed(path, embedder=np.asarray(embedder), hashes=np.asarray([text_hash(t) for t in texts]),
                        vectors=vectors.astype(np.float16))


async def embed_queries(runtime, texts: list[str]) -> np.ndarray:
    """Query-mode vectors (e5 embeds questions and passages differently), unit length, cached
    on disk (the shipped examples' come with the package: nothing to compute)."""
    embedder = runtime.embedder()
    cache = open_cache(runtime.settings)
    name = f"{embedder.name}|query"
    try:
        hashes = [text_hash(t) for t in texts]
        known = cache.get_many(name, hashes) if cache else {}
        if len(known) < len(hashes):
            wanted = set(hashes)
            known.update({h: v for h, v in seeded(embedder.name).items() if h in wanted and h not in known})
        new = {}
        for t, h in zip(texts, hashes):
            if h not in known:
                new[h] = await embedder.embed_query(t)
        if new and cache:
            cache.put_many(name, new)
        known.update(new)
    finally:
        if cache:
            cache.close()
    return unit(np.asarray([known[h] for h in hashes], dtype=np.float32).reshape(len(texts), -1))


@dataclass
class _Examples:
    texts: list[str]
    vectors: np.ndarray  # unit query vectors
    langs: list[str]
    kinds: list[str]


async def examples(runtime, domain: "Domain | None" = None) -> _Examples:
    """The deployment's examples with their vectors, once per process and embedder."""
    key = (runtime.settings.embedder, tuple(domain.offtopic if domain is not None else ()))
    per_runtime = runtime.caches.setdefault(("offtopic examples", None), {})
    if key not in per_runtime:
        kinds = example_kinds(domain)
        texts = list(kinds)
        per_runtime[key] = _Examples(texts, await embed_queries(runtime, texts), [detect_language(t) for t in texts],
                                     list(kinds.values()))
    return per_runtime[key]


async def calibrate(runtime, collection: str, domain: "Domain | None" = None, *, wait: bool = False) -> Calibration:
    """Compute and store `collection`'s calibration against this deployment's examples, then
    where its unanswered questions sit (agent/knowledge/answerable_calibration.py): awaited with
    `wait` (an ingest), else measured in the background (the gate calibrating inside a turn: the
    pseudo-questions' searches take seconds, the gate's part milliseconds)."""
    ex = await examples(runtime, domain)
    calibration = await compute_and_store(runtime, collection, ex.texts, ex.vectors, ex.langs, close_pct=CLOSE_PCT,
                                          categories=ex.kinds)
    if wait:
        return await add_answerable(runtime, collection, calibration)
    runtime.spawn(_add_answerable_later(runtime, collection, calibration))
    return calibration


async def _add_answerable_later(runtime, collection: str, calibration: Calibration) -> None:
    try:
        await add_answerable(runtime, collection, calibration)
    except Exception as exc:  # the store went away: the next calibration measures it
        log.warning("answerable calibration of %s not stored: %s", collection, type(exc).__name__)


async def add_answerable(runtime, collection: str, calibration: Calibration) -> Calibration:
    """`calibration` with the answerable judgement's cuts, stored unless the collection or the
    examples changed meanwhile (a newer calibration is then being made)."""
    from agent.knowledge import answerable_calibration

    cuts = await answerable_calibration.calibrate(runtime, collection, calibration.to_json(), measure=centered,
                                                 embed=embed_queries)
    current, _ = await stored(runtime, collection)
    if current is not None and (current.content_version, current.examples_version) != \
            (calibration.content_version, calibration.examples_version):
        return calibration
    calibration.answerable = cuts.model_dump()
    await runtime.store.update_metadata(collection, {KEY: calibration.to_json()})
    return calibration


async def refresh(runtime, collection: str) -> Calibration:
    """Recalibrate `collection` for this deployment (its domain file's examples too): an ingest
    that changed the collection calls this, so the gate finds it ready."""
    from agent.understanding.domain import domain_path, load_domain

    return await calibrate(runtime, collection, load_domain(domain_path(runtime.settings)), wait=True)


async def _write_shipped_seed() -> None:
    from pathlib import Path

    from agent.config import Settings
    from agent.knowledge.embedders import make_embedder

    settings = Settings()
    embedder = make_embedder(settings.embedder)
    texts = shipped_exemplars()
    vectors = unit(np.asarray([await embedder.embed_query(t) for t in texts], dtype=np.float32))
    target = Path(__file__).resolve().parent.parent / "data" / SEED
    write_seed(target, embedder.name, texts, vectors)
    print(f"wrote {len(texts)} vectors of {embedder.name} to {target}")


if __name__ == "__main__":
    import asyncio

    asyncio.run(_write_shipped_seed())
