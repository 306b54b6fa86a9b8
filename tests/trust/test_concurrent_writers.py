"""Eight writer processes at once, CLI and MCP mixed: nothing fails, nothing is lost (§6).

Four writers run one `memhtml write` process per memory, four hold an MCP
server each and call `memory_write`. Every acknowledged path must be in HEAD,
one commit per write, the tree clean, `git fsck` clean, and the index equal to
a fresh rebuild. MEMHTML_WRITERS_N sets the writes per writer (10 by default;
the issue's proof is 100).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import memhtml
from tests.index.test_indexer import fresh_rebuild_snapshot, snapshot

from .conftest import git

N = int(os.environ.get("MEMHTML_WRITERS_N", "10"))
WRITER = str(Path(__file__).with_name("writer.py"))


def test_eight_writers_cli_and_mcp_lose_nothing(repo: Path) -> None:
    env = {**os.environ, "MEMHTML_EMBED": "fake", "MEMHTML_LOCK_TIMEOUT": "120"}
    procs = [
        subprocess.Popen(
            [sys.executable, WRITER, door, str(repo), f"{door}{k}", str(N)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for k in range(4)
        for door in ("cli", "mcp")
    ]
    acknowledged: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=1800)
        assert proc.returncode == 0, err[-2000:]
        lines = out.split()
        assert not [ln for ln in lines if ln.startswith("FAILED")], out[-2000:]
        acknowledged += lines
    assert len(acknowledged) == 8 * N == len(set(acknowledged))
    in_head = set(git(repo, "ls-tree", "-r", "--name-only", "HEAD").split())
    assert set(acknowledged) <= in_head
    assert int(git(repo, "rev-list", "--count", "HEAD")) == 1 + 8 * N
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, check=True, capture_output=True)
    with memhtml.open(repo, embedder="fake") as corpus:
        assert corpus.search("recorded fact").index_fresh
        incremental = snapshot(corpus.conn)
    assert incremental == fresh_rebuild_snapshot(repo)
