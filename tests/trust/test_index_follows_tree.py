"""The index follows the tree, and `index_fresh` says exactly whether it does (issue 12 §1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import memhtml

from .conftest import git


def _hits(envelope: dict[str, Any]) -> list[str]:
    return [h["path"] for h in envelope["data"]["hits"]]


def test_reverted_hand_edit_leaves_the_index(cli: Any, repo: Path) -> None:
    code, env = cli(
        "write",
        "--type",
        "semantic",
        "--title",
        "port",
        "--claim",
        "The service listens on port 8080.",
    )
    assert code == 0
    path = env["data"]["path"]
    target = repo / path
    target.write_text(target.read_text().replace("8080", "9090"))
    assert cli("index", "update")[0] == 0
    git(repo, "checkout", "--", path)
    assert (
        cli("write", "--type", "semantic", "--title", "other", "--claim", "Backups run nightly.")[0]
        == 0
    )

    code, env = cli("search", "port 8080")
    assert code == 0
    assert _hits(env)[:1] == [path]
    assert env["data"]["index_fresh"] is True
    hit = env["data"]["hits"][0]
    assert "8080" in hit["gist"] and "9090" not in hit["gist"]
    with memhtml.open(repo, embedder="fake") as corpus:
        indexed = corpus.conn.execute(
            "SELECT fts_text FROM files WHERE path = ?", (path,)
        ).fetchone()[0]
    assert "8080" in indexed and "9090" not in indexed
    status = cli("index", "status")[1]["data"]
    assert status["index_fresh"] is True and status["worktree_drift"] == []


def test_unparseable_then_repaired_returns_to_search_and_list(cli: Any, repo: Path) -> None:
    path = cli(
        "write", "--type", "semantic", "--title", "window", "--claim", "Deploys happen on Tuesdays."
    )[1]["data"]["path"]
    target = repo / path
    good = target.read_text()
    created = good.split('name="memhtml-created" content="', 1)[1].split('"', 1)[0]
    target.write_text(good.replace(created, "last tuesday", 1))
    assert cli("index", "update")[0] == 0
    assert path not in [m["path"] for m in cli("list")[1]["data"]["files"]]
    git(repo, "checkout", "--", path)
    cli("write", "--type", "semantic", "--title", "other", "--claim", "Backups run nightly.")

    assert path in [m["path"] for m in cli("list")[1]["data"]["files"]]
    assert _hits(cli("search", "deploys tuesdays")[1])[:1] == [path]


def test_status_is_not_fresh_while_a_hand_edit_is_unindexed(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="port", claim="The service listens on port 8080.")["path"]
    assert corpus.index.status()["index_fresh"] is True
    target = repo / path
    target.write_text(target.read_text().replace("8080", "9090"))
    status = corpus.index.status()
    assert status["index_fresh"] is False
    assert status["worktree_drift"] == [path]
    # A read follows the edit and is then exact.
    result = corpus.search("9090")
    assert result.index_fresh and [h.path for h in result.hits][:1] == [path]
    assert corpus.index.status()["index_fresh"] is True


def test_deleted_then_restored_memory_is_searchable_again(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="cache", claim="The cache holds 512 entries.")["path"]
    (repo / path).unlink()
    assert path not in [h.path for h in corpus.search("cache 512 entries").hits]
    git(repo, "checkout", "--", path)
    assert [h.path for h in corpus.search("cache 512 entries").hits][:1] == [path]
