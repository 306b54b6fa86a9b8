"""Rebuild and update against a real repository: skips, renames, hand edits, faults."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import memhtml

SNAPSHOT_TABLES = {
    "files": "SELECT * FROM files",
    "file_tags": "SELECT * FROM file_tags ORDER BY 1, 2",
    "file_entities": "SELECT * FROM file_entities ORDER BY 1, 2, 3",
    "file_aliases": "SELECT * FROM file_aliases ORDER BY 1, 2",
    "file_facets": "SELECT * FROM file_facets ORDER BY 1, 2",
    "file_citations": "SELECT * FROM file_citations ORDER BY 1, 2",
    "chunks": "SELECT * FROM chunks ORDER BY 1, 2",
    "edges": "SELECT src_path, dst_path, rel, edge_class, derived, provenance FROM edges"
    " ORDER BY 1, 2, 3",
    "skipped": "SELECT path, reason FROM skipped_files ORDER BY 1",
    "overlay": "SELECT path, blob_sha FROM worktree_overlay ORDER BY 1",
    "retired": "SELECT path FROM retired_paths ORDER BY 1",
    "vectors": "SELECT chunk_id FROM embeddings ORDER BY 1",
}


def snapshot(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every projected row, timestamps of indexing excluded."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for name, sql in SNAPSHOT_TABLES.items():
        cur = conn.execute(sql)
        cols = [d[0] for d in cur.description]
        rows = cur.fetchall()
        if name == "files":
            keep = [i for i, c in enumerate(cols) if c not in ("id", "indexed_at")]
            rows = sorted(tuple(r[i] for i in keep) for r in rows)
        out[name] = rows
    return out


def fresh_rebuild_snapshot(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (root / ".memhtml" / name).unlink(missing_ok=True)
    with memhtml.open(root, embedder="fake") as c:
        c.index.rebuild(embed=True)
        return snapshot(c.conn)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_unparseable_file_is_a_counted_skip(corpus: Any, repo: Path) -> None:
    corpus.write(title="Good", type="semantic", claim="Good fact.")
    (repo / "areas" / "bad.html").write_text("<html><title>x</title><article>no mark</article>")
    (repo / "areas" / "index.html").write_text("generated listing")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hand")
    report = corpus.index.rebuild(embed=False, force=True)
    assert report["projected"] == 1
    assert [s["path"] for s in report["skipped"]] == ["areas/bad.html"]
    health = corpus.index.status()
    assert health["skipped_files"] == 1
    from memhtml.ops.health import corpus_health

    doctor = corpus_health(corpus)
    assert [u["path"] for u in doctor["unparseable"]] == ["areas/bad.html"]
    assert not doctor["healthy"]


def test_state_plane_survives_index_deletion(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="Read me", type="semantic", claim="Read this one.")["path"]
    corpus.read(path)
    corpus.close()
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (repo / ".memhtml" / name).unlink(missing_ok=True)
    with memhtml.open(repo, embedder="fake") as again:
        again.index.rebuild(embed=True)
        row = again.conn.execute(
            "SELECT access_count FROM state.access WHERE path = ?", (path,)
        ).fetchone()
        assert row == (1,)
        assert again.conn.execute("SELECT count(*) FROM files").fetchone()[0] == 1


def test_rename_is_an_update_and_costs_no_embedding(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="Moves", type="semantic", claim="I will move.", tag=["t"])["path"]
    seqs = corpus.conn.execute("SELECT seq FROM embeddings").fetchall()
    file_id = corpus.conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    git(repo, "mv", path, "areas/moved.html")
    git(repo, "commit", "-qm", "move")
    report = corpus.index.update()
    assert report["moved"] == 1
    row = corpus.conn.execute("SELECT id FROM files WHERE path = 'areas/moved.html'").fetchone()
    assert row == file_id
    assert corpus.conn.execute(
        "SELECT tag FROM file_tags WHERE path = 'areas/moved.html'"
    ).fetchall() == [("t",)]
    assert corpus.conn.execute("SELECT seq FROM embeddings").fetchall() == seqs


def test_head_only_edit_keeps_vectors(corpus: Any, repo: Path) -> None:
    from memhtml.html import add_meta

    path = corpus.write(title="Stable", type="semantic", claim="Stable content.")["path"]
    seqs = corpus.conn.execute("SELECT seq FROM embeddings").fetchall()
    (repo / path).write_text(add_meta((repo / path).read_text(), "memhtml-tag", "new"))
    report = corpus.index.update()
    assert report["projected"] == 1
    assert corpus.conn.execute("SELECT seq FROM embeddings").fetchall() == seqs
    assert corpus.conn.execute("SELECT tag FROM file_tags").fetchall() == [("new",)]


def test_uncommitted_edit_then_revert(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="Edit", type="semantic", claim="Original words.")["path"]
    original = (repo / path).read_text()
    (repo / path).write_text(original.replace("Original words.", "Edited words."))
    corpus.index.update()
    assert corpus.conn.execute("SELECT gist FROM files").fetchone() == ("Edited words.",)
    (repo / path).write_text(original)
    corpus.index.update()
    assert corpus.conn.execute("SELECT gist FROM files").fetchone() == ("Original words.",)
    assert corpus.conn.execute("SELECT count(*) FROM worktree_overlay").fetchone() == (0,)


KILLER = """
import os, signal, sys
import memhtml
from memhtml.index import writer
real = writer.insert_rows
def dying(conn, rows):
    real(conn, rows)
    os.kill(os.getpid(), signal.SIGKILL)
writer.insert_rows = dying
c = memhtml.open(sys.argv[1], embedder="fake")
c.index.rebuild(embed=False, force=True)
"""


def test_killed_rebuild_is_repaired(corpus: Any, repo: Path) -> None:
    corpus.apply(
        [
            {"op": "write", "title": f"K{i}", "type": "semantic", "body": f"Kill {i}."}
            for i in range(30)
        ]
    )
    expected = snapshot(corpus.conn)
    corpus.close()
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(repo)], capture_output=True, check=False
    )
    assert proc.returncode == -signal.SIGKILL
    with memhtml.open(repo, embedder="fake") as again:
        again.index.update()
        assert snapshot(again.conn) == expected
        assert again.index.status()["index_fresh"]


def test_incremental_equals_rebuild_after_mixed_operations(corpus: Any, repo: Path) -> None:
    a = corpus.write(title="A", type="semantic", claim="Alpha.", tag=["x"])["path"]
    b = corpus.write(title="B", type="semantic", claim="Beta.", entity=["svc:api"])["path"]
    corpus.link(a, "supports", b)
    corpus.correct(b, claim="Beta corrected.")
    c = corpus.write(title="C", type="episodic", claim="Gamma.", event_at="2025-01-01")["path"]
    corpus.archive(c)
    git(repo, "mv", a, "resources/a-moved.html")
    git(repo, "commit", "-qm", "hand move")
    (repo / "areas" / "hand.html").write_text(
        (repo / "resources/a-moved.html").read_text().replace("Alpha.", "Hand written.")
    )
    corpus.index.update()
    incremental = snapshot(corpus.conn)
    corpus.close()
    assert incremental == fresh_rebuild_snapshot(repo)


def test_fresh_paths_with_one_content_fall_back_to_duplicate_arbitration(
    corpus: Any, repo: Path
) -> None:
    """Two new paths with the same article in one commit: the batched insert collides,
    and the one-at-a-time route indexes the smaller path and reports the other."""
    from memhtml.html import parse_memory

    first = corpus.write(title="Twin", type="semantic", claim="Twins share one article.")
    data = (repo / first["path"]).read_bytes()
    corpus.archive(first["path"])
    parent = corpus.git.head()
    for name in ("b-twin.html", "a-twin.html"):
        (repo / "areas" / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "twins")
    head = corpus.git.head()
    changes = [(f"areas/{n}", data, None) for n in ("b-twin.html", "a-twin.html")]
    report = corpus.indexer.apply_commit(parent, head, changes, {data: parse_memory(data)})
    assert report.touched[-1] == "areas/a-twin.html"
    indexed = corpus.conn.execute("SELECT path FROM files WHERE path LIKE 'areas/%twin.html'")
    assert [r[0] for r in indexed] == ["areas/a-twin.html"]
    assert report.skipped == [
        {"path": "areas/b-twin.html", "reason": "duplicate content of areas/a-twin.html"}
    ]
    assert snapshot(corpus.conn) == fresh_rebuild_snapshot(repo)


def test_committing_an_indexed_uncommitted_move_with_an_edit_drops_the_old_vectors(
    corpus: Any, repo: Path
) -> None:
    """Found by the stateful test: a `git mv` indexed from the worktree, then committed
    together with an edit. The commit's rename replaces the row the overlay had put at
    the new path; that row's vectors must leave with it, as a rebuild would have them."""
    path = corpus.write(title="alpha 1", type="semantic", claim="The alpha fact 1.")["path"]
    (repo / "resources" / "moved").mkdir(parents=True, exist_ok=True)
    git(repo, "mv", path, "resources/moved/m2.html")
    corpus.index.update()
    target = repo / "resources" / "moved" / "m2.html"
    target.write_text(target.read_text().replace("</mark>", " edited</mark>", 1))
    git(repo, "commit", "-qam", "hand edit")
    corpus.index.update()
    incremental = snapshot(corpus.conn)
    assert len(incremental["vectors"]) == 1
    assert incremental == fresh_rebuild_snapshot(repo)
