"""The server and CLI processes share one store: nothing lost, nothing stale, bounded waits."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

MEMHTML = str(Path(sys.executable).with_name("memhtml"))
N = 50


@pytest.fixture
def fresh_repo(tmp_path: Path) -> Path:
    from memhtml.store.layout import init_repo

    root = tmp_path / "memory"
    init_repo(root)
    return root


def _cli(repo: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [MEMHTML, *args, "--repo", str(repo), "--dense"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout)


def _cli_write(repo: Path, env: dict[str, str], i: int) -> tuple[int, dict[str, Any]]:
    return _cli(
        repo,
        env,
        "write",
        "--title",
        f"CLI fact {i}",
        "--type",
        "semantic",
        "--claim",
        f"The CLI process recorded fact {i}, marked clitoken{i}.",
        "--tag",
        "cli",
    )


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def _index_rows(repo: Path) -> list[tuple[str, str]]:
    import memhtml

    with memhtml.open(str(repo), embedder="fake") as corpus:
        return [
            tuple(r)
            for r in corpus.conn.execute("SELECT path, content_hash FROM files ORDER BY path")
        ]


def test_cli_writes_are_visible_to_the_running_server(
    fresh_repo: Path, spawn_mcp: Any, child_env: Any
) -> None:
    with spawn_mcp(fresh_repo) as client:
        first = client.call(
            "memory_write",
            {
                "title": "Server fact",
                "memory_type": "semantic",
                "claim": "The server wrote this before the CLI did anything.",
            },
        )
        assert first["ok"], first
        warm = client.call("memory_search", {"query": "server wrote"})
        assert warm["data"]["hits"] and not warm["data"]["degraded"]  # caches now warm
        rc, written = _cli(
            fresh_repo,
            child_env(),
            "write",
            "--title",
            "Quokka",
            "--type",
            "semantic",
            "--claim",
            "A quokka visited the CLI today.",
        )
        assert rc == 0, written
        seen = client.call("memory_search", {"query": "quokka", "explain": True})
        hits = seen["data"]["hits"]
        assert hits and hits[0]["path"] == written["data"]["path"]
        assert seen["data"]["index_fresh"] is True
        assert "vector" in hits[0]["arms"]  # the server's vector matrix saw the new rows
        status = client.call("memory_status", {})
        assert status["data"]["head_sha"] == written["data"]["commit_sha"]
        assert status["data"]["active_count"] == 2


def test_server_and_cli_write_at_once_and_everything_lands(
    fresh_repo: Path, spawn_mcp: Any, child_env: Any
) -> None:
    env = child_env()
    with spawn_mcp(fresh_repo) as client, ThreadPoolExecutor(max_workers=6) as pool:
        cli = [pool.submit(_cli_write, fresh_repo, env, i) for i in range(N)]
        served = [
            client.call(
                "memory_write",
                {
                    "title": f"Server fact {i}",
                    "memory_type": "semantic",
                    "tags": ["server"],
                    "claim": f"The MCP server recorded fact {i}, marked srvtoken{i}.",
                },
            )
            for i in range(N)
        ]
        cli_results = [f.result() for f in cli]
        for env_ in served:
            assert env_["ok"] and env_["data"]["created"], env_
        for rc, env_ in cli_results:
            assert rc == 0 and env_["ok"] and env_["data"]["created"], env_
        found = client.call("memory_search", {"query": "clitoken17"})
        assert found["data"]["hits"][0]["title"] == "CLI fact 17"

    tree = sorted(
        p
        for p in _git(
            fresh_repo, "ls-files", "--", "projects", "areas", "resources", "archive"
        ).split()
        if p.endswith(".html")
    )
    assert len(tree) == 2 * N
    assert (
        _git(fresh_repo, "status", "--porcelain", "--", "projects", "areas", "resources", "archive")
        == ""
    )
    assert int(_git(fresh_repo, "rev-list", "--count", "HEAD")) == 1 + 2 * N
    # The two writers really interleaved: commit authorship switches back and forth.
    subjects = [
        s for s in _git(fresh_repo, "log", "--format=%s", "--reverse").splitlines() if "fact" in s
    ]
    sides = ["server" if "Server fact" in s else "cli" for s in subjects]
    switches = sum(1 for a, b in itertools.pairwise(sides) if a != b)
    assert switches >= 4, sides

    before = _index_rows(fresh_repo)
    assert [p for p, _ in before] == tree
    import memhtml

    with memhtml.open(str(fresh_repo), embedder="fake") as corpus:
        corpus.index.rebuild()
    assert _index_rows(fresh_repo) == before


def test_a_write_waits_for_the_lock_then_fails_typed(fresh_repo: Path, spawn_mcp: Any) -> None:
    from memhtml.store.lock import RepoLock

    write = {
        "title": "Locked out",
        "memory_type": "semantic",
        "claim": "This write waits for the repository lock.",
    }
    with spawn_mcp(fresh_repo, MEMHTML_LOCK_TIMEOUT="1") as client:
        client.call("memory_status", {})  # the corpus is open before the lock is taken
        with RepoLock(fresh_repo / ".git" / "memhtml.lock").hold():
            started = time.monotonic()
            refused = client.call("memory_write", write)
            waited = time.monotonic() - started
            reads = client.call("memory_search", {"query": "anything"})
        assert refused["ok"] is False and refused["code"] == "ERR_WRITE_CONFLICT", refused
        assert 0.9 <= waited < 10
        assert reads["ok"] is True  # readers never wait on the writer lock for long
        landed = client.call("memory_write", write)
        assert landed["ok"] and landed["data"]["created"], landed


def test_without_a_repository_tools_answer_repo_required(tmp_path: Path, spawn_mcp: Any) -> None:
    with spawn_mcp(tmp_path / "not-a-repo") as client:
        env = client.call("memory_search", {"query": "x"})
        assert env["code"] == "ERR_REPO_REQUIRED"
        assert any("memhtml init" in s for s in env["suggestions"])
        assert client.call("trace_search", {"query": "x"})["ok"] is True
        assert client.read_resource("memhtml://manifest").contents[0].text.startswith("{")
        err = client.read_error("memhtml://file/areas/x.html")
        assert err.data["code"] == "ERR_REPO_REQUIRED"


def test_a_state_write_blocked_past_busy_timeout_fails_typed(fresh_repo: Path) -> None:
    import sqlite3

    from memhtml.mcp.server import MemhtmlMCP

    app = MemhtmlMCP(fresh_repo)
    written = app.call(
        "memory_write",
        {"title": "Busy", "memory_type": "semantic", "claim": "A read bumps salience in state.db."},
    )
    assert written["ok"], written
    blocker = sqlite3.connect(fresh_repo / ".memhtml" / "state.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        refused = app.call("memory_read", {"path": written["data"]["path"]})
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        app.close()
    assert refused["ok"] is False
    assert refused["code"] in ("ERR_STORAGE", "ERR_WRITE_CONFLICT"), refused
