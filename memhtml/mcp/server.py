"""`memhtml-mcp`: the MCP server over stdio, one Corpus per process.

stdout is the protocol; logs go to stderr (the SDK also points fd 1 at stderr
while serving, so a stray print cannot corrupt a frame). Corpus calls are
blocking (SQLite, git), so they run in a worker thread, one at a time: the
Corpus's single index connection is never used by two calls at once, and the
event loop keeps answering pings while a commit runs. `exec` (code mode)
reads a commit through git only: it runs beside them (at most EXEC_SLOTS at
once), so a long script never holds up a search, a write or a ping.

The server shares the store with CLI processes: writes take the repository
lock (bounded by MEMHTML_LOCK_TIMEOUT, then ERR_WRITE_CONFLICT), SQLite runs
in WAL with a busy timeout, and every read first catches the index up with
HEAD, so commits made behind the server's back are visible to its next call.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from memhtml import __version__
from memhtml.contracts.envelope import failure
from memhtml.contracts.errors import (
    InvalidPathError,
    MemhtmlError,
    PathNotFoundError,
    RepoRequiredError,
    UsageError,
)
from memhtml.mcp import SERVER_NAME
from memhtml.mcp.resources import FIXED, TEMPLATES, ResourceText, read_resource
from memhtml.mcp.tools import TOOLS, TOOLS_BY_NAME, call_tool

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

log = logging.getLogger("memhtml.mcp")
T = TypeVar("T")
# Scripts at once: each is a worker process bounded by its own memory and time.
EXEC_SLOTS = 2

INSTRUCTIONS = (
    "memhtml is your long-term memory: a git repository of small HTML files, one fact each,"
    " with a search index. Before a task that may depend on what was learned earlier, call"
    " memory_search (or memory_recall for a quoted context pack); read a hit with"
    " memory_read when you need all of it. After learning something durable (a fact, a user"
    " preference, a procedure, an error and its fix), save it with memory_write, one fact per"
    " memory; use memory_correct when a memory is wrong, memory_reinforce when memories"
    " helped. Every result is an envelope {ok, type, data} or {ok: false, code, error,"
    " suggestions}: branch on `code`."
)


def tool_result(envelope: dict[str, Any]) -> types.CallToolResult:
    """An envelope as a tool result: structured content, the same JSON as text, isError."""
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=envelope,
        is_error=not envelope.get("ok", False),
    )


def _tool_list() -> list[types.Tool]:
    return [
        types.Tool(
            name=t.name,
            title=t.title,
            description=t.description,
            input_schema=t.input_schema(),
            annotations=types.ToolAnnotations(
                title=t.title,
                read_only_hint=t.read_only,
                destructive_hint=t.destructive,
                idempotent_hint=t.idempotent,
                open_world_hint=False,
            ),
        )
        for t in TOOLS
    ]


class MemhtmlMCP:
    """The server's per-process state: the root, one lazily opened Corpus, counters."""

    def __init__(self, repo: str | os.PathLike[str] | None = None) -> None:
        from memhtml.ops.config import resolve_root

        self.root = resolve_root(repo)
        self._corpus: Corpus | None = None
        self._limiter = anyio.CapacityLimiter(1)
        self._beside = anyio.CapacityLimiter(EXEC_SLOTS)
        self._counting = threading.Lock()  # calls beside the corpus count from their threads
        self._tools = _tool_list()
        self.stats: dict[str, int] = {
            "tool_calls": 0,
            "tool_errors": 0,
            "resource_reads": 0,
            "resource_errors": 0,
        }

    # -- the corpus ------------------------------------------------------------------
    def corpus(self) -> Corpus:
        """The Corpus, opened on first use (ERR_REPO_REQUIRED until the root is a repo)."""
        if self._corpus is None:
            from memhtml.ops.corpus import open_corpus

            self._corpus = open_corpus(self.root)
            # A long-lived reader: let the kernel say when the tree changed, so a
            # search skips `git status` while nothing did (memhtml.store.watch).
            self._corpus.watch_tree()
        return self._corpus

    def close(self) -> None:
        """Close the index connection."""
        if self._corpus is not None:
            self._corpus.close()
            self._corpus = None

    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=self._limiter)

    # -- synchronous entry points (also what tests and the benchmark drive) -----------
    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        get: Callable[[], Corpus] | None = None,
    ) -> dict[str, Any]:
        """Run one tool and count it; always an envelope."""
        from memhtml.telemetry import span

        with span(f"memhtml-mcp {name}", tool=name) as s:
            envelope = call_tool(get or self.corpus, name, arguments)
            s.set(ok=bool(envelope.get("ok")), code=envelope.get("code"))
        with self._counting:
            self.stats["tool_calls"] += 1
            if not envelope.get("ok"):
                self.stats["tool_errors"] += 1
        if not envelope.get("ok"):
            log.info("tool %s -> %s: %s", name, envelope.get("code"), envelope.get("error"))
        return envelope

    def opened(self) -> Callable[[], Corpus]:
        """A getter of the open Corpus for a call beside the others (it raises what opening did).

        Opening runs one at a time with the corpus calls; the getter then only
        hands out the Corpus, whose `git` a call beside them reads.
        """
        try:
            corpus = self.corpus()
        except MemhtmlError as err:
            failed = err

            def refuse() -> Corpus:
                raise failed

            return refuse
        return lambda: corpus

    def read(self, uri: str) -> ResourceText:
        """Read one resource; raises MemhtmlError on failure."""
        self.stats["resource_reads"] += 1
        try:
            return read_resource(self.corpus, uri)
        except Exception:
            self.stats["resource_errors"] += 1
            raise

    # -- protocol handlers --------------------------------------------------------------
    async def on_list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Every tool with its generated input schema."""
        return types.ListToolsResult(tools=self._tools)

    async def on_call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """One tool call, answered with the envelope (errors as isError, never raised)."""
        spec = TOOLS_BY_NAME.get(params.name)
        if spec is not None and not spec.exclusive:
            corpus = self._corpus
            get = (lambda: corpus) if corpus is not None else await self._blocking(self.opened)
            envelope = await anyio.to_thread.run_sync(
                functools.partial(self.call, params.name, params.arguments, get),
                limiter=self._beside,
            )
        else:
            envelope = await self._blocking(self.call, params.name, params.arguments)
        return tool_result(envelope)

    async def on_list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """The fixed resources (memories are reached through the templates)."""
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri,
                    name=r.name,
                    title=r.title,
                    description=r.description,
                    mime_type=r.mime_type,
                )
                for r in FIXED
            ]
        )

    async def on_list_resource_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """The three templates: file, at, sleep."""
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=r.uri,
                    name=r.name,
                    title=r.title,
                    description=r.description,
                    mime_type=r.mime_type,
                )
                for r in TEMPLATES
            ]
        )

    async def on_read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """One resource; a failure is a protocol error whose data is the failure envelope."""
        uri = str(params.uri)
        try:
            res = await self._blocking(self.read, uri)
        except MemhtmlError as err:
            envelope = failure(err.code, err.message, err.suggestions, err.details or None)
            # SEP-2164: a resource that does not exist (or cannot) is invalid params.
            invalid = (PathNotFoundError, InvalidPathError, UsageError, RepoRequiredError)
            code = types.INVALID_PARAMS if isinstance(err, invalid) else types.INTERNAL_ERROR
            raise MCPError(code=code, message=f"{err.code}: {err.message}", data=envelope) from None
        except Exception as exc:
            log.exception("resource %s failed unexpectedly", uri)
            envelope = failure("ERR_UNKNOWN", f"{type(exc).__name__}: {exc}")
            raise MCPError(
                code=types.INTERNAL_ERROR, message=f"ERR_UNKNOWN: {exc}", data=envelope
            ) from None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=res.uri, mime_type=res.mime_type, text=res.text)
            ]
        )

    def server(self) -> Server[Any]:
        """The low-level SDK server wired to this state."""
        return Server(
            SERVER_NAME,
            version=__version__,
            title="memhtml",
            instructions=INSTRUCTIONS,
            # A memory changes with every write: a client must never serve a read from cache.
            cache_hints={"resources/read": CacheHint(ttl_ms=0, scope="private")},
            on_list_tools=self.on_list_tools,
            on_call_tool=self.on_call_tool,
            on_list_resources=self.on_list_resources,
            on_list_resource_templates=self.on_list_resource_templates,
            on_read_resource=self.on_read_resource,
        )

    async def run_stdio(self) -> None:
        """Serve over this process's stdin/stdout until stdin closes."""
        server = self.server()
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_stdio(repo: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Serve until the client goes away; return the `serve.exit` payload."""
    app = MemhtmlMCP(repo)
    if not (app.root / ".git").exists():
        log.warning(
            "no memhtml repository at %s: tools answer ERR_REPO_REQUIRED until"
            " `memhtml init --repo %s`",
            app.root,
            app.root,
        )
    log.info("memhtml-mcp %s serving %s over stdio", __version__, app.root)
    started = time.monotonic()
    reason = "stdin closed"
    try:
        anyio.run(app.run_stdio)
    except KeyboardInterrupt:
        reason = "interrupted"
    finally:
        app.close()
    return {
        "server": "memhtml-mcp",
        "transport": "stdio",
        "root": str(app.root),
        "reason": reason,
        "uptime_s": round(time.monotonic() - started, 3),
        **app.stats,
    }


def configure_logging() -> None:
    """Log to stderr only (stdout is the protocol); level from MEMHTML_LOG."""
    level = os.environ.get("MEMHTML_LOG", "WARNING").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level, logging.WARNING),
        format="memhtml-mcp: %(levelname)s %(message)s",
    )


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console-script entry point: `memhtml-mcp [--repo DIR]`."""
    parser = argparse.ArgumentParser(
        prog="memhtml-mcp",
        description="Serve a memhtml store to MCP clients over stdio (logs on stderr).",
    )
    parser.add_argument(
        "--repo",
        metavar="DIR",
        help="memory root (else $MEMHTML_ROOT, default ~/memhtml)",
    )
    parser.add_argument("--version", action="version", version=f"memhtml-mcp {__version__}")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    from memhtml.ops.config import prefer_single_threaded_blas

    prefer_single_threaded_blas()
    configure_logging()
    from memhtml import telemetry

    telemetry.start("memhtml-mcp")
    serve_stdio(args.repo)
    sys.exit(0)


if __name__ == "__main__":
    main()
