"""Writes and merges never depend on attributes a commit can set (`.git/info/attributes`).

The hostile `.gitattributes` here is committed by hand in the clone itself,
the way a sync's check cannot see it, and the clone's `info/attributes` is
removed first, as in a clone made before memhtml pinned its attributes.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.cli.main import run
from memhtml.html import parse_memory
from memhtml.store import attributes

HOSTILE = (
    "*.html binary text eol=crlf ident filter=shout working-tree-encoding=UTF-16LE-BOM"
    " merge=union\n"
    "*.jsonl merge=union\n"
)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def call(*argv: str) -> dict[str, Any]:
    out = io.StringIO()
    code = run([*argv, "--json"], stdout=out)
    data: dict[str, Any] = json.loads(out.getvalue())
    assert code == 0 and data["ok"], data
    return data


def blob(root: Path, rel: str) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "blob", f"HEAD:{rel}"], cwd=root, capture_output=True, check=True
    ).stdout


@pytest.fixture
def hostile(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`repo` with a hand-committed hostile `.gitattributes`, a clean filter configured (as
    `git lfs install` configures one for every repository), and no pinned attributes."""
    monkeypatch.setenv("MEMHTML_EMBEDDER", "fake")
    (repo / ".git" / "info" / "attributes").unlink()
    git(repo, "config", "filter.shout.clean", "tr a-z A-Z")
    git(repo, "config", "filter.shout.smudge", "cat")
    with (repo / ".gitattributes").open("a") as f:
        f.write(HOSTILE)
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "hostile attributes, by hand")
    return repo


def test_a_write_commits_exactly_the_bytes_it_wrote(hostile: Path) -> None:
    data = call(
        "write",
        "--repo",
        str(hostile),
        "--title",
        "Café",
        "--type",
        "semantic",
        "--claim",
        "The café opens at 7 ($Id$ stays).",
    )["data"]
    rel = data["path"]
    stored = blob(hostile, rel)
    assert stored == (hostile / rel).read_bytes()
    assert parse_memory(stored).gist == "The café opens at 7 ($Id$ stays)."
    assert git(hostile, "status", "--porcelain") == ""
    assert "merge=memhtml" in (hostile / ".git" / "info" / "attributes").read_text()
    # a batch of more than 100 files (the write-tree path) too
    ops = "".join(
        json.dumps(
            {
                "op": "write",
                "title": f"Fact {i}",
                "type": "semantic",
                "body": f"Fact number {i} holds é.",
            }
        )
        + "\n"
        for i in range(120)
    )
    inp = hostile / "ops.jsonl"
    inp.write_text(ops)
    out = call("apply", "--repo", str(hostile), "--file", str(inp))["data"]
    inp.unlink()
    paths = [r["path"] for r in out["results"]]
    assert len(paths) == 120
    for rel in paths[:5] + paths[-5:]:
        assert blob(hostile, rel) == (hostile / rel).read_bytes()
    assert git(hostile, "status", "--porcelain") == ""


def test_a_merge_keeps_memhtmls_driver(hostile: Path, tmp_path: Path) -> None:
    """A real conflict stays a conflict (a `merge=union` would have joined both claims)."""
    rel = call(
        "write",
        "--repo",
        str(hostile),
        "--title",
        "Port",
        "--type",
        "semantic",
        "--claim",
        "The api listens on port 8080.",
    )["data"]["path"]
    git(hostile, "checkout", "-qb", "other")
    for branch, port in (("other", "7070"), ("main", "9090")):
        if branch == "main":
            git(hostile, "checkout", "-q", "main")
        path = hostile / rel
        path.write_text(path.read_text().replace("8080", port))
        git(hostile, "commit", "-qam", f"port {port}")
    proc = subprocess.run(
        ["git", "merge", "-q", "other"], cwd=hostile, capture_output=True, text=True, check=False
    )
    assert proc.returncode != 0  # a conflict: both claims changed
    text = (hostile / rel).read_text()
    assert "<<<<<<<" in text and text.count("<mark>") == 2
    git(hostile, "merge", "--abort")


# -- the block itself ---------------------------------------------------------------

_lines = st.lists(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30), max_size=6
)


@given(_lines, _lines)
def test_with_block_keeps_a_persons_lines_and_ends_with_ours(
    before: list[str], after: list[str]
) -> None:
    mine = "\n".join(before + after)
    expected = (mine.rstrip("\n") + "\n" if mine.rstrip("\n") else "") + attributes.BLOCK
    assert attributes.with_block(mine) == expected
    # an older block of ours anywhere is replaced, a person's lines stay in order
    old = "\n".join([*before, attributes.BEGIN, "*.html merge=old", attributes.END, *after])
    assert attributes.with_block(old) == expected
    assert attributes.with_block(expected) == expected


def test_ensure_replaces_an_older_block_and_writes_once(repo: Path) -> None:
    path = attributes.info_path(repo)
    path.write_text(f"*.txt diff\n{attributes.BEGIN}\n*.html merge=old\n{attributes.END}\n")
    assert attributes.ensure(repo) is True
    text = path.read_text()
    assert text.startswith("*.txt diff\n") and "merge=old" not in text
    assert text.count(attributes.BEGIN) == 1
    assert attributes.ensure(repo) is False
