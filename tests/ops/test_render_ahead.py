"""A large batch renders its writes ahead on worker processes; the outcome is the same."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.index.parallel import usable_cpus
from memhtml.ops import writes
from memhtml.store.layout import init_repo

NOW = "2026-03-04T05:06:07Z"


def _ops() -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = [
        {"title": f"fact {i}", "type": "semantic", "claim": f"The pool holds {i} rows."}
        for i in range(9)
    ]
    ops[3] = {**ops[3], "event_at": "not a date"}  # refused at its turn
    ops[5] = {**ops[5], "claim": ops[1]["claim"]}  # a duplicate of an earlier op
    ops.insert(6, {"op": "link", "src": "areas/inbox/fact-0.html", "rel": "supports",
                   "dst": "areas/inbox/fact-1.html"})  # fmt: skip
    ops.append({"title": "a task", "type": "task", "claim": "Do the thing.", "due": "2026-05-01"})
    return ops


def _apply(root: Path, ops: list[dict[str, Any]]) -> tuple[Any, str, list[tuple[Any, ...]]]:
    init_repo(root)
    corpus = memhtml.open(root, embedder="fake", now=NOW)
    try:
        out = corpus.apply(ops, continue_on_error=True)
        rows = corpus.conn.execute(
            "SELECT path, blob_sha, content_hash, fts_text FROM files ORDER BY path"
        ).fetchall()
    finally:
        corpus.close()
    tree = subprocess.run(
        ["git", "-C", str(root), "ls-tree", "-r", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.results, tree, rows


_REAL_RENDER = writes.render_chunk


def marked_render(items: list[Any]) -> list[Any]:
    """render_chunk that leaves a mark named by the process that ran it (pickled by name)."""
    (Path(os.environ["MEMHTML_TEST_MARKS"]) / str(os.getpid())).touch()
    return _REAL_RENDER(items)


def test_rendering_ahead_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ops = _ops()
    inline = _apply(tmp_path / "inline", ops)
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("MEMHTML_TEST_MARKS", str(marks))
    monkeypatch.setattr(writes, "RENDER_AHEAD_MIN", 2)
    monkeypatch.setattr(writes, "RENDER_CHUNK", 3)
    monkeypatch.setattr(writes, "render_chunk", marked_render)
    ahead = _apply(tmp_path / "ahead", ops)
    assert ahead == inline
    if usable_cpus() > 1:  # the renders ran in worker processes
        pids = {int(p.name) for p in marks.iterdir()}
        assert pids and os.getpid() not in pids
    assert [r["ok"] for r in inline[0]].count(False) == 1  # the bad date, at its own index
    assert inline[0][3]["code"] == "ERR_INVALID_MEMORY"
    assert inline[0][5]["deduped"] is True


def test_a_small_batch_renders_as_it_plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(items: list[Any]) -> list[Any]:
        raise AssertionError("rendered ahead")

    monkeypatch.setattr(writes, "render_chunk", refuse)
    results, _, rows = _apply(tmp_path / "m", _ops()[:3])
    assert all(r["ok"] for r in results) and len(rows) == 3
