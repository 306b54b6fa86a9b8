"""Load with sync: writers, a sync loop and a remote pusher at once; acknowledged = in HEAD =
on the remote.

W writer processes write N memories each into clone `a` (one `memhtml write`
process per memory) while a process syncs `a` again and again and clone `b`
writes and syncs (pushes) in a loop. When the writers are done, the loops
stop and both clones sync until they agree. Every acknowledged write must then
be in `a`'s HEAD and on the remote exactly once (none lost, none doubled), no
write may fail, the only sync errors allowed are a push the remote kept
rejecting (it moved three times: `ERR_REMOTE` reason `rejected`), and `a`'s tree
is clean with its index equal to a fresh rebuild.

MEMHTML_SYNC_LOAD=WxN sets the size (default 3x4; the issue's proof is 8x50).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import memhtml
from memhtml.html import parse_memory
from memhtml.ops.sync import clone, sync
from tests.index.test_indexer import fresh_rebuild_snapshot, snapshot
from tests.sync.conftest import git

W, N = (int(x) for x in os.environ.get("MEMHTML_SYNC_LOAD", "3x4").lower().split("x"))
DRIVER = str(Path(__file__).with_name("load_driver.py"))
PUSHER_MAX = max(3, N // 2)


def claims_at(root: Path, ref: str) -> Counter[str]:
    """Claim -> number of active memories holding it at `ref` (in the repository at `root`)."""
    entries = git(root, "ls-tree", "-r", "--name-only", ref, "--", "areas", "projects", "resources")
    paths = [p for p in entries.splitlines() if p.endswith(".html")]
    names = "".join(f"{ref}:{p}\n" for p in paths).encode()
    out = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=root, input=names, capture_output=True, check=True
    ).stdout
    found: Counter[str] = Counter()
    pos = 0
    for _ in paths:
        nl = out.index(b"\n", pos)
        size = int(out[pos:nl].split()[2])
        data = out[nl + 1 : nl + 1 + size]
        pos = nl + 1 + size + 1
        gist = parse_memory(data).gist
        if gist:
            found[gist] += 1
    return found


def test_writers_a_sync_loop_and_a_remote_pusher_lose_and_double_nothing(
    remote: Path, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    clone(str(remote), a)
    clone(str(remote), b)
    stop = tmp_path / "stop"
    env = {
        **os.environ,
        "MEMHTML_EMBED": "fake",
        "MEMHTML_EMBEDDER": "fake",
        "MEMHTML_LOCK_TIMEOUT": "300",
    }

    def start(mode: str, root: Path, name: str, count: int) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, DRIVER, mode, str(root), name, str(count), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    started = time.monotonic()
    writers = [start("writer", a, f"w{k}", N) for k in range(W)]
    syncer = start("syncer", a, "sync", 0)
    pusher = start("pusher", b, "remote", PUSHER_MAX)
    outputs: list[str] = []
    for proc in writers:
        out, err = proc.communicate(timeout=7200)
        assert proc.returncode == 0, err[-2000:]
        outputs.append(out)
    stop.touch()
    for proc in (syncer, pusher):
        out, err = proc.communicate(timeout=1800)
        assert proc.returncode == 0, err[-2000:]
        outputs.append(out)
    loaded = time.monotonic() - started

    lines = [ln for out in outputs for ln in out.splitlines()]
    failed = [ln for ln in lines if ln.startswith("FAILED")]
    assert failed == [], failed[:3]
    sync_errors = [ln for ln in lines if ln.startswith("SYNCERR")]
    assert all(ln.split()[1:3] == ["ERR_REMOTE", "rejected"] for ln in sync_errors), sync_errors[:3]
    acked = [ln.removeprefix("ACK ") for ln in lines if ln.startswith("ACK ")]
    pushed = [c for c in acked if "Writer remote " in c]
    assert len(acked) - len(pushed) == W * N and len(set(acked)) == len(acked)

    # settle: both clones sync until the remote, a and b agree
    for root in (a, b, a):
        with memhtml.open(root, embedder="fake") as corpus:
            sync(corpus)
    tip = git(remote, "rev-parse", "refs/heads/main")
    assert git(a, "rev-parse", "HEAD") == tip == git(b, "rev-parse", "HEAD")

    for where, root, ref in (("a's HEAD", a, "HEAD"), ("the remote", remote, "refs/heads/main")):
        held = claims_at(root, ref)
        lost = [c for c in acked if held[c] == 0]
        doubled = [c for c in acked if held[c] > 1]
        assert (lost, doubled) == ([], []), where
        writers_claims = {c for c in held if c.startswith("Writer ")}
        assert writers_claims == set(acked), where  # nothing unacknowledged landed

    assert git(a, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (a / ".git" / "MERGE_HEAD").exists()
    with memhtml.open(a, embedder="fake") as corpus:
        corpus.sync()
        incremental = snapshot(corpus.conn)
    assert incremental == fresh_rebuild_snapshot(a)

    syncs = Counter(ln.split()[1] for ln in lines if ln.startswith("SYNC "))
    sent = sum(1 for ln in lines if ln.startswith("SYNC ") and ln.split()[3] != "0")
    print(
        f"\nsync load {W}x{N}: {len(acked)} acknowledged ({len(pushed)} by the pusher),"
        f" 0 lost, 0 doubled; syncs {dict(syncs)} ({sent} pushed),"
        f" {len(sync_errors)} rejected thrice;"
        f" {int(git(a, 'rev-list', '--count', 'HEAD'))} commits; load phase {loaded:.0f} s"
    )
