"""The tools of MCP servers as the agent's tools (ASKDESK_MCP_SERVERS; docs/mcp.md).

Each configured server is one tool provider (agent/tools/providers.py). Its connection is
opened at the first turn that needs the agent's tools and then reused: one task owns it (the
SDK's transports and session are async context managers that must be entered and left in the
same task) until the runtime closes. Its tools are listed once and join the registry as
`<server>__<tool>`.

What a server says is untrusted, like a document: a result reaches the model as one quoted
`<document>` block (agent/fencing.py), cut to ASKDESK_CONTEXT_CHARS. A server that hangs, dies
or cannot be started costs one timeout (`timeout_seconds`) and a note in the tool result,
never the turn; it is not tried again for RETRY_SECONDS, so a dead server does not cost every
call a timeout. A tool named in `changes` (or that the server marks destructive) is never run
by the agent: the call returns a note that it needs the asker's confirmation.

The `mcp` SDK is imported only when a server is configured and first used.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import time
from contextlib import AsyncExitStack
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from agent.fencing import quote
from agent.references import Reference
from agent.tools.base import ToolResult
from agent.tools.provided import ProvidedTool

if TYPE_CHECKING:
    from agent.config import Settings

log = logging.getLogger("askdesk.mcp")

RETRY_SECONDS = 30.0  # a server that failed is not tried again before this
CLOSE_SECONDS = 5.0  # how long closing waits for a server's child process to end
DESCRIPTION_CHARS = 1000  # of a server's tool description in the agent's prompt
NAME_CHARS = 64  # the longest tool name providers' function-calling APIs accept
SEPARATOR = "__"  # `<server>__<tool>`: model-safe, unlike a dot
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class McpConfigError(ValueError):
    """ASKDESK_MCP_SERVERS cannot be read: one line that names what is wrong."""


class McpSettings(BaseSettings):
    """MCP in both directions. Read from the environment only (not askdesk.yaml)."""

    model_config = SettingsConfigDict(env_prefix="ASKDESK_MCP_", extra="ignore")

    servers: str | None = Field(None, description="The MCP servers whose tools the agent may call: a path to a YAML "
                                "or JSON file, or inline JSON (docs/mcp.md).")
    token: SecretStr | None = Field(None, description="The bearer token `askdesk serve mcp` requires of every request; "
                                    "it refuses to start without one.")
    audience: str = Field("", description="Comma-separated audience keys (channel ids, emails, domain:<domain>) an MCP "
                          "caller may see besides what everyone may see.")
    port: int = Field(8000, description="The port of `askdesk serve mcp` (streamable HTTP at /mcp).")

    def audience_keys(self) -> frozenset[str]:
        """The keys as chunks' audiences spell them: emails and domains lower-cased."""
        keys = (k.strip() for k in self.audience.split(","))
        return frozenset(k.lower() if "@" in k or k.lower().startswith("domain:") else k for k in keys if k)


class ServerSpec(BaseModel):
    """One MCP server: a command started over stdio, or a streamable-HTTP URL."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)  # values may name variables: "${TOKEN}"
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)  # values may name variables: "Bearer ${TOKEN}"
    allowed_tools: list[str] | None = None  # None: every tool the server lists
    changes: list[str] = Field(default_factory=list)  # tools that change something: never run unconfirmed
    timeout_seconds: float = Field(10.0, gt=0, le=300)

    @model_validator(mode="after")
    def _one_transport(self) -> "ServerSpec":
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (stdio) or `url` (streamable HTTP)")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def where(self) -> str:
        """Where it runs, without any secret (header and env values are never shown)."""
        return " ".join([self.command or "", *self.args]) if self.command else str(self.url)


def expand(text: str, environ: dict[str, str] | None = None) -> str:
    """`${NAME}` replaced by the variable's value; KeyError(NAME) when it is not set."""
    environ = os.environ if environ is None else environ  # type: ignore[assignment]

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise KeyError(name)
        return environ[name]

    return _VARIABLE.sub(value, text)


def parse_servers(value: str) -> list[ServerSpec]:
    """ASKDESK_MCP_SERVERS: inline JSON, or a YAML/JSON file. Either a list of servers,
    `{servers: [...]}`, or `{mcpServers: {name: {...}}}` (the shape MCP clients' files use)."""
    text = value.strip()
    if not text:
        return []
    if text[0] in "[{":
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise McpConfigError(f"ASKDESK_MCP_SERVERS is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    else:
        path = Path(text).expanduser()
        if not path.is_file():
            raise McpConfigError(f"ASKDESK_MCP_SERVERS: {path}: no such file")
        from agent.yamlio import safe_load

        try:
            data = safe_load(path.read_text(encoding="utf-8"))
        except Exception as exc:  # noqa: BLE001 - YAML and JSON errors alike: one line
            raise McpConfigError(f"ASKDESK_MCP_SERVERS: {path} cannot be read: {exc}".splitlines()[0]) from None
    if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
        data = [{"name": name, **(spec or {})} for name, spec in data["mcpServers"].items()]
    elif isinstance(data, dict):
        data = data.get("servers", [])
    if not isinstance(data, list):
        raise McpConfigError("ASKDESK_MCP_SERVERS must list servers (a list, or `servers:` with a list)")
    specs: list[ServerSpec] = []
    for i, item in enumerate(data):
        try:
            spec = ServerSpec.model_validate(item)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = "".join(f"{part}: " for part in (".".join(map(str, first["loc"])),) if part)
            name = item.get("name", f"#{i + 1}") if isinstance(item, dict) else f"#{i + 1}"
            message = first["msg"].removeprefix("Value error, ")
            raise McpConfigError(f"ASKDESK_MCP_SERVERS: server {name}: {where}{message}") from None
        if any(s.name == spec.name for s in specs):
            raise McpConfigError(f"ASKDESK_MCP_SERVERS: server {spec.name} is declared twice")
        specs.append(spec)
    return specs


def mcp_providers(settings: "Settings", mcp: McpSettings | None = None) -> list["McpServerTools"]:
    """One provider per configured server (none, and nothing imported, when unset)."""
    mcp = mcp or McpSettings()
    if not mcp.servers:
        return []
    return [McpServerTools(spec, result_chars=settings.context_chars) for spec in parse_servers(mcp.servers)]


def tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>` with only letters, digits, `_` and `-`, at most NAME_CHARS long."""
    return _UNSAFE.sub("_", f"{server}{SEPARATOR}{tool}")[:NAME_CHARS]


def args_model(schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model whose JSON schema is the server's own and which checks arguments
    against it, so a wrong call is corrected once like any tool's (agent/turn/loop.py)."""
    import jsonschema

    try:
        validator: Any = jsonschema.validators.validator_for(schema)(schema)
        validator.check_schema(schema)
    except Exception:  # noqa: BLE001 - a schema the validator cannot read: the server judges
        validator = None

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return schema

        @model_validator(mode="before")
        @classmethod
        def _check(cls, data: Any) -> Any:
            if not isinstance(data, dict):
                raise ValueError("arguments must be an object")
            if validator is not None:
                problems = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
                if problems:
                    where = ".".join(map(str, problems[0].path))
                    raise ValueError(f"{where + ': ' if where else ''}{problems[0].message}")
            return data

    return Arguments


def result_text(result: Any) -> str:
    """What a CallToolResult says, as text: text blocks and embedded text resources as they are,
    structured content as JSON when there is no text, other media as a one-line placeholder."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            inner = block.resource
            parts.append(getattr(inner, "text", None) or f"[binary resource {inner.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.name}: {block.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content omitted]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _leaf(exc: BaseException) -> BaseException:
    """The first error inside task groups' exception groups: the one that says what happened."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _kind(exc: BaseException) -> str:
    """An error for the log: its type and MCP error code, never its message."""
    exc = _leaf(exc)
    code = getattr(exc, "code", None)
    return f"{type(exc).__name__}{f' {code}' if isinstance(code, int) else ''}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


class McpServerTools:
    """One MCP server's tools, its connection opened lazily and reused (a ToolProvider)."""

    def __init__(self, spec: ServerSpec, *, result_chars: int = 6000,
                 environ: Callable[[], dict[str, str]] | None = None) -> None:
        self.name = spec.name
        self.spec = spec
        self.result_chars = result_chars
        self._environ = environ or (lambda: dict(os.environ))
        self._listed: list[ProvidedTool] | None = None
        self._session: Any = None
        self._owner: asyncio.Task | None = None
        self._closing: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._ending: set[asyncio.Task] = set()  # owners told to close, still ending their child process
        self._problem: str | None = None
        self._retry_at = 0.0
        self.connects = 0  # connections opened (tests, `askdesk tools`)

    # ------------------------------------------------------------------ the provider's side
    def problem(self) -> str | None:
        return self._problem

    async def tools(self) -> list[ProvidedTool] | None:
        if self._listed is None and await self._session_now() is None:
            return None
        return self._listed

    async def aclose(self) -> None:
        """Close the connection and wait (bounded) for the child process to end."""
        self._drop()
        ending, self._ending = list(self._ending), set()
        if ending and self._loop is asyncio.get_running_loop():
            done, pending = await asyncio.wait(ending, timeout=CLOSE_SECONDS)
            for task in pending:
                task.cancel()

    # ------------------------------------------------------------------ calls
    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Run `tool` on the server: its result as a quoted document, or a note saying why not."""
        label = f"{self.name}{SEPARATOR}{tool}"
        session = await self._session_now()
        if session is None:
            return ToolResult(text=f"ERROR: {label} was not run: {self._problem}. Answer without it.")
        timeout = self.spec.timeout_seconds
        try:
            async with asyncio.timeout(timeout + 1):  # the SDK's own timeout first, this if it hangs anyway
                result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except Exception as exc:  # noqa: BLE001 - a hung or dead server is a note, never the turn's failure
            why = self._why(exc)
            if self._broken(exc):  # hung or gone: closed, and rested before the next try
                self._fail(why)
            log.warning("MCP server %s: %s failed (%s)", self.name, tool, _kind(exc))  # no text: it may quote the asker
            return ToolResult(text=f"ERROR: {label} failed: {why}. Answer without it.")
        text = _cut(result_text(result), self.result_chars)
        if result.is_error:
            return ToolResult(text=f"ERROR: {label} failed: {quote(text)}")
        ref = Reference(source=f"mcp:{self.name}", title=f"{tool} ({self.name})", section=tool)
        block = (f'<document index="1" source="{escape(ref.source)}" title="{escape(ref.title)}" '
                 f'section="{escape(tool)}">\n{quote(text)}\n</document>')
        return ToolResult(text=block, references=[ref], documents=[ref])

    @staticmethod
    def _broken(exc: BaseException) -> bool:
        """The connection is of no more use (hung, closed, unreachable), unlike an error the server
        answered with for this one call."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        exc = _leaf(exc)
        if isinstance(exc, MCPError):
            return exc.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT)
        import anyio

        if "httpx2" in sys.modules and isinstance(exc, sys.modules["httpx2"].TransportError):
            return True  # refused, reset, unreadable: the HTTP side of a server that is gone
        return isinstance(exc, (TimeoutError, OSError, anyio.ClosedResourceError, anyio.BrokenResourceError,
                                anyio.EndOfStream))

    def _why(self, exc: BaseException) -> str:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        exc = _leaf(exc)
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if isinstance(status, int):
            return f"the MCP server {self.name} answered HTTP {status}"
        if isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT):
            return f"the MCP server {self.name} did not answer within {self.spec.timeout_seconds:g} s"
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            return f"the MCP server {self.name} closed the connection (it may have stopped)"
        if isinstance(exc, MCPError):
            return f"the MCP server {self.name} answered with an error: {_cut(quote(exc.message), 200)}"
        if self._broken(exc):
            return f"the MCP server {self.name} cannot be reached ({type(exc).__name__})"
        return f"the MCP server {self.name} failed ({type(exc).__name__})"

    # ------------------------------------------------------------------ the connection
    async def _session_now(self) -> Any:
        """The open session, opening it when there is none; None (with `problem`) when the
        server cannot be reached now or failed less than RETRY_SECONDS ago."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a connection belongs to its event loop (a new asyncio.run)
            self._session = self._owner = self._closing = None
            self._ending.clear()
            self._loop, self._lock = loop, asyncio.Lock()
        if self._live():
            return self._session
        if time.monotonic() < self._retry_at:
            return None
        assert self._lock is not None
        async with self._lock:
            if self._live():
                return self._session
            if time.monotonic() < self._retry_at:
                return None
            try:
                async with asyncio.timeout(self.spec.timeout_seconds):
                    await self._open()
            except Exception as exc:  # noqa: BLE001 - not found, refused, hung, broken: a note
                why = self._opening_problem(exc)
                self._fail(why)
                log.warning("MCP server %s: %s", self.name, why)  # the command or variable, never a reply's text
                return None
            self._problem = None
            return self._session

    def _live(self) -> bool:
        return self._session is not None and self._owner is not None and not self._owner.done()

    def _opening_problem(self, exc: BaseException) -> str:
        exc = _leaf(exc)
        if isinstance(exc, KeyError):
            return f"the MCP server {self.name} is not started: the variable {exc.args[0]} is not set"
        if isinstance(exc, OSError) and not isinstance(exc, TimeoutError) and self.spec.command:
            return f"the MCP server {self.name} cannot be started: {self.spec.command}: {exc.strerror or exc}"
        return self._why(exc)

    async def _open(self) -> None:
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        closing = asyncio.Event()
        owner = asyncio.create_task(self._own(ready, closing), name=f"askdesk-mcp-{self.name}")
        try:
            session = await ready
        except BaseException:
            closing.set()
            owner.cancel()
            self._ending.add(owner)
            owner.add_done_callback(self._ending.discard)
            raise
        self._session, self._owner, self._closing = session, owner, closing
        self.connects += 1

    async def _own(self, ready: asyncio.Future, closing: asyncio.Event) -> None:
        """Enter the transport and the session, list the tools (once), hand the session over,
        and hold it open until told to close: all in this one task."""
        from mcp import ClientSession

        try:
            async with AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                if self._listed is None:
                    self._listed = await self._list(session)
                if not ready.done():
                    ready.set_result(session)
                await closing.wait()
        except BaseException as exc:
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    ready.cancel()
                else:
                    ready.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            log.info("MCP server %s: connection ended (%s)", self.name, type(exc).__name__)

    async def _transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        environ = self._environ()
        if self.spec.command:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=expand(self.spec.command, environ),
                                           args=[expand(a, environ) for a in self.spec.args],
                                           env={k: expand(v, environ) for k, v in self.spec.env.items()} or None)
            return await stack.enter_async_context(stdio_client(params))
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = {k: expand(v, environ) for k, v in self.spec.headers.items()}
        client = await stack.enter_async_context(httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(self.spec.timeout_seconds, read=300.0)))
        return await stack.enter_async_context(streamable_http_client(expand(str(self.spec.url), environ),
                                                                      http_client=client))

    async def _list(self, session: Any) -> list[ProvidedTool]:
        from mcp_types import PaginatedRequestParams

        listed: list[Any] = []
        cursor = None
        for _ in range(100):  # a server that pages forever cannot hang the listing
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        allowed = self.spec.allowed_tools
        offered = [t for t in listed if allowed is None or t.name in allowed]
        missing = sorted(set(allowed or ()) - {t.name for t in listed})
        if missing:
            log.warning("MCP server %s does not offer %s (allowed_tools)", self.name, ", ".join(missing))
        return [self._tool(t) for t in offered]

    def _tool(self, listed: Any) -> ProvidedTool:
        remote = listed.name
        annotations = listed.annotations
        changes = remote in self.spec.changes or bool(annotations and annotations.destructive_hint)
        about = _cut(quote(" ".join((listed.description or listed.title or remote).split())), DESCRIPTION_CHARS)
        name = tool_name(self.name, remote)

        async def run(args: BaseModel) -> ToolResult:  # a changing tool gets here only once confirmed
            return await self.call(remote, args.model_dump())

        return ProvidedTool(name=name, args_model=args_model(listed.input_schema or {"type": "object"}), fn=run,
                            description=f"{about} [MCP server {self.name}]", progress=f"Asking {self.name}…",
                            provider=f"mcp:{self.name}", reads_only=not changes)

    def _fail(self, why: str) -> None:
        """Close the connection (a broken one is opened afresh later) and wait RETRY_SECONDS."""
        self._problem = why
        self._retry_at = time.monotonic() + RETRY_SECONDS
        self._drop()

    def _drop(self) -> None:
        owner, closing = self._owner, self._closing
        self._session = self._owner = self._closing = None
        if owner is not None and not owner.done() and closing is not None:
            closing.set()
            self._ending.add(owner)
            owner.add_done_callback(self._ending.discard)


