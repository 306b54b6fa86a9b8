"""The vector graph follows a model switch and its rollback (`index migrate`).

Real parts: a git memory root, the shipped migrations, the OpenAI-compatible stand-in on
127.0.0.1 at the network edge, the graph library.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memhtml
from memhtml.embed import ann
from memhtml.eval.embedders import gate_verdict
from memhtml.ops.ann import ENV_MIN_ROWS
from memhtml.ops.migrate import migrate
from tests.ops.test_migrate import fill, standin  # noqa: F401  (the stand-in fixture)

pytestmark = pytest.mark.skipif(not ann.available(), reason="the ann extra is not installed")


def graph_epochs(root: Path) -> set[str]:
    folder = root / ".memhtml" / "vectors"
    return {json.loads(p.read_text())["epoch"] for p in folder.glob("*.ann.json")}


def epoch(root: Path) -> str:
    with memhtml.open(root, embedder="fake") as c:
        return str(c.conn.execute("SELECT vector_epoch FROM index_state").fetchone()[0])


def searched(root: Path, embedder: str) -> dict[str, object]:
    with memhtml.open(root, embedder=embedder) as c:
        result = c.search("drains the cache before the deploy", explain=True)
        assert not result.degraded, result.degraded_reason
        assert result.vector_search is not None
        return result.vector_search


def test_the_graph_follows_a_switch_and_a_rollback(repo, standin, monkeypatch):  # noqa: F811
    monkeypatch.setenv(ENV_MIN_ROWS, "10")
    fill(repo, 30)
    assert searched(repo, "fake")["method"] == "ann"  # the first read built it
    old = epoch(repo)
    assert graph_epochs(repo) == {old}
    with memhtml.open(repo, embedder="fake") as c:
        out = migrate(c, to="openai", gate=gate_verdict, progress=False, keep_old=True)
    assert out["mode"] == "switched"
    new = epoch(repo)
    assert new != old and graph_epochs(repo) == {new}  # the old graph left with its matrix
    used = searched(repo, "openai")
    assert used["method"] == "ann" and used["tail_rows"] == 0  # built at the switch
    with memhtml.open(repo, embedder="openai") as c:
        back = migrate(c, to="fake", gate=gate_verdict, progress=False)
    assert back["mode"] == "switched"
    rolled = epoch(repo)
    assert rolled not in (old, new) and graph_epochs(repo) == {rolled}
    assert searched(repo, "fake")["method"] == "ann"
