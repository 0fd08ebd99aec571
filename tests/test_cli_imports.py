"""A one-shot command loads only what it needs (issue 19): `askdesk ask` and `askdesk search` on
the embedded store (Qdrant Edge, `ASKDESK_QDRANT_URL` unset) import neither qdrant-client
(about 0.7 s: only the server backend uses it), nor the Slack or Teams SDKs, nor, with no
model configured, any provider SDK. Each runs in a fresh interpreter, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.test_cli_chat import DOC, data_dir, kb_data  # noqa: F401  (fixtures: DOC ingested, seeded vectors)

QUESTION = "what's the weekly parent share for a family of 3 making $2,890/mo?"
# never on the ask/search path of the embedded store with no model configured
NOT_LOADED = ("qdrant_client", "slack_bolt", "slack_sdk", "microsoft_teams", "openai", "groq", "google.genai",
              "anthropic", "instructor", "tenacity", "langsmith", "aiohttp", "httpx", "trafilatura", "mcp")

# runs the console script's entry in-process, then reports what was imported
CHILD = """
import json, sys
args, watched = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["askdesk", *args]
from bot.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
else:
    code = 0
print("\\nMODULES " + json.dumps({"code": code, "loaded": [m for m in watched if m in sys.modules]}), file=sys.stderr)
"""


def child_env(**extra: str) -> dict[str, str]:
    """The test's environment (conftest cleared every provider key and ASKDESK_* variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PYTHONIOENCODING="utf-8", **extra)
    return env


def run_cli(args: list[str], env: dict[str, str]) -> tuple[str, dict]:
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args), json.dumps(NOT_LOADED)],
                          capture_output=True, text=True, env=env, timeout=120)
    report = [line for line in proc.stderr.splitlines() if line.startswith("MODULES ")]
    assert report, f"no report (rc {proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc.stdout, json.loads(report[-1].removeprefix("MODULES "))


@pytest.mark.parametrize("args", [["ask", QUESTION, "--json"], ["search", QUESTION, "--json"]],
                         ids=["ask", "search"])
def test_ask_and_search_on_the_embedded_store_import_no_client_sdk_or_chat_sdk(args, data_dir):  # noqa: F811
    stdout, report = run_cli(args, child_env(ASKDESK_DATA_DIR=str(data_dir)))
    assert report["code"] == 0, stdout
    out = json.loads(stdout)
    sources = [r["source"] for r in out["references"]] if args[0] == "ask" else [p["source"] for p in out]
    assert DOC in sources  # it really searched the knowledge base
    assert report["loaded"] == []


def test_importing_the_cli_loads_no_store_client_and_no_surface_sdk():
    code = ("import sys, bot.cli, agent.store, agent.store.edge, agent.knowledge.search\n"
            f"print([m for m in {NOT_LOADED!r} if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_server_store_imports_qdrant_client_when_it_is_opened(tmp_path):
    """With ASKDESK_QDRANT_URL set the server backend is used, and only then is the client loaded
    (building it opens no connection: no server is needed here)."""
    code = """
import asyncio, sys
from agent.config import load_settings
from agent.store import open_store
before = "qdrant_client" in sys.modules
store = open_store(load_settings())
print(before, type(store).__name__, "qdrant_client" in sys.modules)
asyncio.run(store.close())
"""
    env = child_env(ASKDESK_QDRANT_URL="http://127.0.0.1:9", ASKDESK_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "ServerStore", "True"]


def test_the_seams_models_become_qdrant_clients_for_the_server():
    from qdrant_client import models as qm

    import agent.store.models as models
    from agent.store.server import to_qdrant

    flt = models.Filter(
        must=[models.FieldCondition(key="source", match=models.MatchValue(value="a.md")),
              models.IsEmptyCondition(is_empty=models.PayloadField(key="version"))],
        must_not=[models.FieldCondition(key="version", match=models.MatchExcept(except_=["v1"]))],
    )
    assert to_qdrant(flt) == qm.Filter(
        must=[qm.FieldCondition(key="source", match=qm.MatchValue(value="a.md")),
              qm.IsEmptyCondition(is_empty=qm.PayloadField(key="version"))],
        must_not=[qm.FieldCondition(key="version", match=qm.MatchExcept(**{"except": ["v1"]}))],
    )
    query = to_qdrant([models.Prefetch(query=models.SparseVector(indices=[1], values=[0.5]), using="sparse", limit=3)])
    assert query == [qm.Prefetch(query=qm.SparseVector(indices=[1], values=[0.5]), using="sparse", limit=3)]
    assert to_qdrant(models.PayloadSchemaType.KEYWORD) is qm.PayloadSchemaType.KEYWORD
    # and back: what the client returns is read as the seam's own
    point = models.neutral(qm.ScoredPoint(id="x", version=1, score=0.5, payload={"n": 1},
                                          vector={"sparse": qm.SparseVector(indices=[2], values=[1.0])}))
    assert point == models.ScoredPoint(id="x", version=1, score=0.5, payload={"n": 1},
                                       vector={"sparse": models.SparseVector(indices=[2], values=[1.0])})
