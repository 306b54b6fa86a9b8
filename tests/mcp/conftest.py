"""A real MCP client session over stdio, driven synchronously from tests.

The server is the spawned `python -m memhtml.mcp.server --repo <tmp repo>`
process; the SDK's own client talks to it through a blocking portal (an event
loop in a thread), so one server can serve a whole test module.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from memhtml.contracts.envelope import validate_envelope

_PASS_THROUGH = (
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "MEMHTML_NOW",
)


def server_env(**extra: str) -> dict[str, str]:
    """The spawned server's environment: the fake embedder, test git identity, quiet logs."""
    env = {"MEMHTML_EMBED": "fake", "MEMHTML_LLM": "off", "MEMHTML_LOG": "WARNING"}
    env |= {k: os.environ[k] for k in _PASS_THROUGH if k in os.environ}
    env |= extra
    return env


class SyncClient:
    """The SDK client, called from synchronous test code."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client

    def list_tools(self) -> Any:
        return self.portal.call(self.client.list_tools)

    def list_resources(self) -> Any:
        return self.portal.call(self.client.list_resources)

    def list_resource_templates(self) -> Any:
        return self.portal.call(self.client.list_resource_templates)

    def read_resource(self, uri: str) -> Any:
        return self.portal.call(self.client.read_resource, uri)

    def read_error(self, uri: str) -> MCPError:
        """Read a resource that must fail; return the protocol error."""
        try:
            self.read_resource(uri)
        except MCPError as exc:
            return exc
        raise AssertionError(f"{uri} was read without an error")

    def raw(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return self.portal.call(self.client.call_tool, name, arguments)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool; check the result is an envelope, marked isError exactly on failure."""
        result = self.raw(name, arguments)
        envelope = result.structured_content
        assert isinstance(envelope, dict), result
        validate_envelope(envelope)
        assert result.is_error is (not envelope["ok"])
        return envelope


@contextmanager
def mcp_client(repo: Path, **env: str) -> Iterator[SyncClient]:
    """Spawn the stdio server on `repo` and yield a connected client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memhtml.mcp.server", "--repo", str(repo)],
        env=server_env(**env),
    )
    with start_blocking_portal() as portal:
        client = Client(params, cache=None, read_timeout_seconds=60)
        with portal.wrap_async_context_manager(client) as entered:
            yield SyncClient(portal, entered)


@pytest.fixture(scope="module")
def module_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh memory root shared by one test module."""
    from memhtml.store.layout import init_repo

    root = tmp_path_factory.mktemp("mcp") / "memory"
    init_repo(root)
    return root


@pytest.fixture(scope="module")
def client(module_repo: Path) -> Iterator[SyncClient]:
    """One server process and one client session for the whole module."""
    with mcp_client(module_repo) as c:
        yield c


@pytest.fixture(scope="session")
def spawn_mcp() -> Any:
    """`spawn_mcp(repo, **env)`: a context manager yielding a client of a fresh server."""
    return mcp_client


@pytest.fixture(scope="session")
def child_env() -> Any:
    """`child_env(**extra)`: the full environment for a memhtml child process."""

    def make(**extra: str) -> dict[str, str]:
        return {**os.environ, **server_env(**extra)}

    return make
