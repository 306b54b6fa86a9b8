"""A script reads one commit: reproducible, blind to uncommitted edits and to refs that move."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memhtml.contracts.errors import InvalidFlagError, InvalidMemoryError
from tests.codemode.conftest import Run, answer, commit, memory_html

CENSUS = """import { corpus } from "/workspace/lib/corpus.mjs"
const byType = {}
const memories = [...corpus().values()].filter((m) => m.memoryType)
for (const m of memories) byType[m.memoryType] = (byType[m.memoryType] ?? 0) + 1
console.log(JSON.stringify({ byType, claims: memories.map((m) => m.claim) }))
"""


def test_a_script_at_commit_a_answers_the_same_after_more_writes(repo: Path, run: Run) -> None:
    a = commit(
        repo,
        {
            "areas/one.html": memory_html("One holds."),
            "areas/two.html": memory_html("Two holds.", type_="procedural"),
        },
    )
    at_a = run(repo, CENSUS)
    assert at_a.sha == a
    before = answer(at_a)
    assert before == {
        "byType": {"semantic": 1, "procedural": 1},
        "claims": ["One holds.", "Two holds."],
    }

    commit(repo, {"areas/three.html": memory_html("Three holds.", type_="episodic")}, "more")
    commit(repo, {"areas/one.html": memory_html("One changed.")}, "edit")
    (repo / "areas" / "two.html").write_text(memory_html("An uncommitted edit."), encoding="utf-8")
    (repo / "areas" / "four.html").write_text(memory_html("An untracked file."), encoding="utf-8")

    again = run(repo, CENSUS, sha=a)
    assert again.sha == a and again.ref == a
    assert answer(again) == before
    assert again.stdout == at_a.stdout

    now = answer(run(repo, CENSUS))
    assert now["claims"] == ["One changed.", "Three holds.", "Two holds."]  # committed only


def test_refs_are_resolved_once_before_the_script_runs(repo: Path, run: Run) -> None:
    a = commit(repo, {"areas/one.html": memory_html("One.")})
    b = commit(repo, {"areas/two.html": memory_html("Two.")}, "second")
    short = run(repo, "console.log(1)", sha=a[:10])
    parent = run(repo, "console.log(1)", sha="HEAD~1")
    head = run(repo, "console.log(1)")
    assert (short.sha, parent.sha, head.sha) == (a, a, b)
    assert (short.ref, parent.ref, head.ref) == (a[:10], "HEAD~1", "HEAD")


def test_a_ref_that_names_no_commit_is_refused(repo: Path, run: Run) -> None:
    with pytest.raises(InvalidMemoryError):
        run(repo, "console.log(1)", sha="0" * 40)
    with pytest.raises(InvalidMemoryError):
        run(repo, "console.log(1)", sha="no-such-branch")
    with pytest.raises(InvalidFlagError):
        run(repo, "console.log(1)", sha="--output=/tmp/x")


def test_gitignored_databases_do_not_exist_in_the_pinned_tree(repo: Path, run: Run) -> None:
    commit(repo, {"areas/one.html": memory_html("One.")})
    state = repo / ".memhtml"
    (state / "index.db").write_bytes(b"SQLite format 3\x00 a ranked-plane row")
    (state / "state.db").write_bytes(b"SQLite format 3\x00")
    ignored = subprocess.run(
        ["git", "check-ignore", ".memhtml/index.db"], cwd=repo, capture_output=True, check=False
    )
    assert ignored.returncode == 0  # init ignores it: a checkout of any commit omits it
    seen = answer(
        run(
            repo,
            """import * as fs from "node:fs"
console.log(JSON.stringify({
  index: fs.existsSync("/mnt/memhtml/.memhtml/index.db"),
  state: fs.existsSync("/mnt/memhtml/.memhtml/state.db"),
  read: (() => { try { return fs.readFileSync("/mnt/memhtml/.memhtml/index.db").length }
                 catch (e) { return e.code } })() }))""",
        )
    )
    assert seen == {"index": False, "state": False, "read": "ENOENT"}
