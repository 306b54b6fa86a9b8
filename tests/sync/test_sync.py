"""sync: clones of one memory meet through a bare remote; nothing lost, nothing doubled."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import DirtyTreeError, RemoteError, SyncConflictError
from memhtml.ops.sync import abort, ahead_behind, merge_in_progress, remote_add, sync
from tests.sync.conftest import git


def active(corpus: Any) -> dict[str, str]:
    """path -> claim of every active non-task memory, from the index."""
    corpus.sync()
    return {
        str(p): str(g)
        for p, g in corpus.conn.execute(
            "SELECT path, gist FROM files WHERE archived = 0 AND memory_type <> 'task'"
        )
    }


def test_two_clones_exchange_writes(clones: Any) -> None:
    a, b = clones("a"), clones("b")
    x = a.write(title="Drain first", claim="Drain the VIP before a deploy.")["path"]
    out = sync(a)
    assert (out["mode"], out["sent"], out["pushed"]) == ("up-to-date", 1, True)
    y = b.write(title="Cache", claim="The cache keeps entries for a day.")["path"]
    out = sync(b)
    assert out["mode"] == "merge" and out["received"] == 1 and out["files"]["added"] == 1
    assert set(active(b)) == {x, y}
    out = sync(a)
    assert out["mode"] == "fast-forward" and set(active(a)) == {x, y}
    assert ahead_behind(a.git) == {"remote": "origin", "branch": "main", "ahead": 0, "behind": 0}


def test_head_only_divergence_merges_clean(clones: Any) -> None:
    a, b = clones("a"), clones("b")
    x = a.write(title="Drain first", claim="Drain the VIP before a deploy.")["path"]
    y = a.write(title="Cache", claim="The cache keeps entries for a day.")["path"]
    sync(a)
    sync(b)
    a.link(x, "relates_to", y)
    b.task_add("Check the drain runbook")  # b moves too, elsewhere
    b.link(y, "supports", x)
    sync(a)
    out = sync(b)
    assert out["mode"] == "merge" and out["conflicts"] == []
    sync(a)
    for c in (a, b):
        links = {(r["rel"], r["path"]) for r in c.read(x)["links"]} | {
            (r["rel"], r["path"]) for r in c.read(y)["links"]
        }
        assert ("relates_to", y) in links and ("supports", x) in links


def test_a_real_conflict_stops_with_both_claims_and_abort_restores(clones: Any) -> None:
    a, b = clones("a"), clones("b")
    x = a.write(title="Port", claim="The api listens on port 8080.")["path"]
    sync(a)
    sync(b)
    for c, port in ((a, "9090"), (b, "7070")):
        path = c.root / x
        path.write_text(path.read_text().replace("8080", port))
        git(c.root, "commit", "-qam", f"port {port}")
    sync(a)
    before = b.git.head()
    with pytest.raises(SyncConflictError) as err:
        sync(b)
    (conflict,) = err.value.details["conflicts"]
    assert conflict["path"] == x
    assert "7070" in conflict["ours"] and "9090" in conflict["theirs"]
    # git's own words about the path, on the entry and in the message
    assert conflict["git"] == f"CONFLICT (content): Merge conflict in {x}"
    assert conflict["git"] in err.value.message and conflict["git"] in err.value.details["git"]
    assert merge_in_progress(b.root)
    # nothing is written while the merge is unresolved, and no commit holds a marker
    with pytest.raises(SyncConflictError):
        b.write(title="Other", claim="Another fact.")
    with pytest.raises(SyncConflictError):
        sync(b)
    assert abort(b)["aborted"] is True
    assert b.git.head() == before and not merge_in_progress(b.root)
    assert "<<<<<<<" not in (b.root / x).read_text()
    log = git(b.root, "log", "-p", "--all")
    assert "<<<<<<<" not in log


def test_the_same_fact_written_on_two_clones_ends_as_one_memory(clones: Any) -> None:
    a = clones("a", now="2026-03-01T10:00:00Z")
    b = clones("b", now="2026-03-01T11:00:00Z")
    claim = "Rotate the signing keys every ninety days."
    pa = a.write(title="Key rotation", claim=claim)["path"]
    pb = b.write(title="Signing keys", claim=claim)["path"]
    assert pa != pb
    sync(a)
    out = sync(b)
    assert [f["path"] for f in out["folded"]] == [pb]
    live = [p for p, g in active(b).items() if g == claim]
    assert live == [pa]  # the older one stays; the later one is archived with supersedes
    archived = b.read(f"archive/2026/{pb}")
    assert archived["metas"]["memhtml-superseded-by"] == f"/{pa}"


def test_bad_remotes_are_typed_and_lose_nothing(clones: Any, tmp_path: Path) -> None:
    a = clones("a")
    a.write(title="Drain first", claim="Drain the VIP before a deploy.")
    head = a.git.head()
    git(a.root, "remote", "remove", "origin")
    with pytest.raises(RemoteError) as err:
        sync(a)
    assert err.value.details["reason"] == "none"
    remote_add(a, "origin", str(tmp_path / "nowhere.git"))
    with pytest.raises(RemoteError) as err:
        sync(a)
    assert err.value.details["reason"] == "unreachable"
    with pytest.raises(RemoteError):
        remote_add(a, "origin", "x")
    # a remote with an unrelated history
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(
        other,
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@y",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "another history",
    )
    git(a.root, "remote", "set-url", "origin", str(other))
    with pytest.raises(RemoteError) as err:
        sync(a, push=False)
    assert err.value.details["reason"] == "unrelated"
    assert a.git.head() == head
    (a.root / "areas" / "scratch.txt").write_text("x")
    with pytest.raises(DirtyTreeError):
        sync(a)


def test_four_clones_fifty_writes_each_converge(clones: Any) -> None:
    rng = random.Random(7)
    corpora = [clones(f"c{i}", now=f"2026-03-01T1{i}:00:00Z") for i in range(4)]
    pending = [list(range(50)) for _ in corpora]
    written: set[str] = set()
    while any(pending):
        i = rng.randrange(4)
        if pending[i] and rng.random() < 0.8:
            n = pending[i].pop(0)
            claim = f"Clone {i} recorded fact number {n} about service s{n % 7}."
            corpora[i].write(title=f"c{i} fact {n}", claim=claim)
            written.add(claim)
        else:
            sync(corpora[i])
    for _round in range(2):
        for c in corpora:
            sync(c)
    views = [active(c) for c in corpora]
    for view in views:
        assert sorted(view.values()) == sorted(written)  # 200 claims, none lost, none doubled
        assert len(view) == 200
    heads = {c.git.head() for c in corpora}
    assert len(heads) == 1
    for c in corpora:
        assert not any(
            "<<<<<<<" in p.read_text() for p in c.root.rglob("*.html") if ".git" not in p.parts
        )
        before = _snapshot(c)
        c.index.rebuild()
        assert _snapshot(c) == before


def _snapshot(corpus: Any) -> list[tuple[Any, ...]]:
    return (
        corpus.conn.execute(
            "SELECT path, content_hash, archived, title FROM files ORDER BY path"
        ).fetchall()
        + corpus.conn.execute(
            "SELECT src_path, rel, dst_path, derived FROM edges ORDER BY 1, 2, 3"
        ).fetchall()
    )
