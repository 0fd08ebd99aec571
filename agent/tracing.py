"""LangSmith traces: one trace per turn, with the router, each model call and each tool as
child runs, and the thread id and surface as metadata.

Tracing is on only when LANGSMITH_API_KEY is set; otherwise every span is a strict no-op
(no client, no thread, no network). The whole run tree is posted once, when the turn ends,
through the LangSmith client's background batcher, so tracing never sits on the critical path.
With `trace_redact`, message text (questions, answers, queries, tool output) is replaced by
a placeholder before anything leaves the process.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol

log = logging.getLogger(__name__)

# Keys whose values carry user or document text; everything under them is redacted.
TEXT_KEYS = frozenset(
    {"text", "message", "messages", "content", "answer", "query", "search_query", "rewritten_query",
     "arguments", "clarification", "history", "prompt", "result", "output", "outputs", "references"}
)


def _placeholder(value: str) -> str:
    return f"[redacted {len(value)} chars]"


def _blank(value: Any) -> Any:
    if isinstance(value, str):
        return _placeholder(value)
    if isinstance(value, dict):
        return {k: _blank(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_blank(v) for v in value]
    return value


def redact(value: Any) -> Any:
    """Replace every string under a text-bearing key (see TEXT_KEYS); keep structure, ids,
    routes, names and numbers so a redacted trace still shows what happened."""
    if isinstance(value, dict):
        return {k: (_blank(v) if k in TEXT_KEYS else redact(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


class Span(Protocol):
    def child(self, name: str, run_type: str = "chain", inputs: dict[str, Any] | None = None) -> "Span": ...

    def end(self, outputs: dict[str, Any] | None = None, error: str | None = None) -> None: ...


class NoopSpan:
    """What every span is when tracing is off: does nothing, allocates nothing new."""

    def child(self, name: str, run_type: str = "chain", inputs: dict[str, Any] | None = None) -> "NoopSpan":
        return self

    def end(self, outputs: dict[str, Any] | None = None, error: str | None = None) -> None:
        return None


NOOP = NoopSpan()


class LangSmithSpan:
    def __init__(self, run: Any, tracer: "Tracer", *, root: bool = False) -> None:
        self._run = run
        self._tracer = tracer
        self._root = root

    def child(self, name: str, run_type: str = "chain", inputs: dict[str, Any] | None = None) -> "LangSmithSpan":
        try:
            run = self._run.create_child(name=name, run_type=run_type, inputs=self._tracer.clean(inputs or {}))
        except Exception:  # tracing must never break a turn
            log.debug("trace child failed", exc_info=True)
            return NOOP  # type: ignore[return-value]
        return LangSmithSpan(run, self._tracer)

    def end(self, outputs: dict[str, Any] | None = None, error: str | None = None) -> None:
        try:
            self._run.end(outputs=self._tracer.clean(outputs or {}), error=error)
            if self._root:
                self._run.post(exclude_child_runs=False)
        except Exception:
            log.debug("trace end failed", exc_info=True)


class Tracer:
    """Creates one root span per turn; `enabled` is False without LANGSMITH_API_KEY."""

    def __init__(self, *, redact_text: bool = False, project: str | None = None) -> None:
        self.redact_text = redact_text
        self.project = project or os.environ.get("LANGSMITH_PROJECT") or "askdesk"
        self._client: Any = None
        key = os.environ.get("LANGSMITH_API_KEY") or os.environ.get("LANGCHAIN_API_KEY")
        self.enabled = bool(key)
        if self.enabled:
            from langsmith import Client

            endpoint = os.environ.get("LANGSMITH_ENDPOINT") or os.environ.get("LANGCHAIN_ENDPOINT")
            self._client = Client(api_url=endpoint, api_key=key)

    def clean(self, data: dict[str, Any]) -> dict[str, Any]:
        return redact(data) if self.redact_text else data

    def turn(self, name: str, inputs: dict[str, Any], *, metadata: dict[str, Any]) -> Span:
        if not self.enabled:
            return NOOP
        try:
            from langsmith.run_trees import RunTree

            run = RunTree(
                name=name,
                run_type="chain",
                inputs=self.clean(inputs),
                extra={"metadata": metadata},
                session_name=self.project,
                ls_client=self._client,
            )
        except Exception:
            log.debug("trace start failed", exc_info=True)
            return NOOP
        return LangSmithSpan(run, self, root=True)

    def flush(self) -> None:
        if self._client is not None:
            try:
                self._client.flush()
            except Exception:
                log.debug("trace flush failed", exc_info=True)

    def close(self) -> None:
        self.flush()
