"""Code mode over MCP: a script never holds up the server, nor leaves its memory behind.

Issue 29, item 5: over MCP, `parse` of 42 MB of HTML ran in the server
process, blocked every other request for the whole script (17.6 s there) and
left the server 1.78 GB larger. Asserted on outcomes only: the answer of a
request sent while a script runs (the script still running when it comes
back), the limit the report names, the server's peak and resident memory
read from /proc. No timing assertions.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.codemode.procfs import find_descendant, reset_peak, status_mb
from tests.mcp.conftest import SyncClient, mcp_client

REPRO = (
    'import { parse } from "/workspace/lib/nhp.mjs"\n'
    'const doc = parse("<p a=1 b=2 c=3 d=4 e=5>x</p>".repeat(1500000))\n'
    "console.log(doc.childNodes.length)\n"
)


@pytest.fixture(scope="module")
def served(module_repo: Path) -> Iterator[tuple[SyncClient, int]]:
    """A client of a server on a store with one memory, and the server's pid."""
    with mcp_client(module_repo) as client:
        written = client.call(
            "memory_write",
            {
                "title": "Parser bounds",
                "memory_type": "semantic",
                "claim": "Code mode parses HTML in its worker, under the script's bounds.",
            },
        )
        assert written["ok"], written
        server = find_descendant(f"memhtml.mcp.server --repo {module_repo}")
        assert server is not None
        yield client, server


def _wait_for(find: Any, what: str) -> int:
    # A bounded wait for a process to appear: not a timing assertion, a precondition.
    for _ in range(3000):
        found = find()
        if found is not None:
            return int(found)
        time.sleep(0.02)
    raise AssertionError(f"{what} never started")


def test_the_repro_over_mcp_is_a_memory_limit_and_the_server_stays_small(
    served: tuple[SyncClient, int],
) -> None:
    client, server = served
    before = status_mb(server, "VmRSS")
    reset_peak(server)
    envelope = client.call("exec", {"script": REPRO, "memory_mb": 512})
    assert envelope["ok"] is True, envelope
    data = envelope["data"]
    assert data["limit"] is not None and data["limit"]["name"] == "memory", data["stderr"]
    assert "out of memory" in data["stderr"]
    # Before: the server parsed it itself, peaking near 3 GB and keeping 1.78 GB.
    peak = status_mb(server, "VmHWM") - before
    kept = status_mb(server, "VmRSS") - before
    assert peak < 100, f"the server's peak RSS grew {peak:.0f} MiB"
    assert kept < 50, f"the server kept {kept:.0f} MiB"


def test_the_server_answers_other_requests_while_a_script_runs(
    served: tuple[SyncClient, int],
) -> None:
    client, server = served
    running = client.portal.start_task_soon(
        client.client.call_tool,
        "exec",
        {"script": "for (;;) {}", "timeout_ms": 120_000},
    )
    worker = _wait_for(lambda: find_descendant("codemode/worker.py", server), "the worker")
    listed = client.call("memory_list", {})
    found = client.call("memory_search", {"query": "parser bounds"})
    status = client.call("memory_status", {})
    # Each came back while the script was still running: its worker is alive, its call open.
    assert not running.done()
    assert find_descendant("codemode/worker.py", server) == worker
    assert listed["ok"] and listed["data"]["files"]
    assert found["ok"] and found["data"]["hits"]
    assert status["ok"]
    os.kill(worker, signal.SIGKILL)  # end the script without waiting out its bound
    ended = running.result(timeout=120).structured_content
    assert ended["ok"] is False and ended["code"] == "ERR_SANDBOX"
