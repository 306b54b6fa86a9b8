"""sync through the CLI on a terminal: what came and went; a conflict with git's own words (in the
envelope too), the conflicted file, both claims, then what to do (issue 32 items 1 and 6)."""

from __future__ import annotations

import io
import json
from typing import Any

from memhtml.cli.main import run
from memhtml.ops.sync import sync
from tests.cli.conftest import run_on_pty
from tests.sync.conftest import git


def test_a_conflict_reads_with_git_words_on_a_terminal_and_in_the_envelope(clones: Any) -> None:
    a, b = clones("a"), clones("b")
    x = a.write(title="Port", claim="The api listens on port 8080.")["path"]
    sync(a)
    sync(b)
    for c, port in ((a, "9090"), (b, "7070")):
        path = c.root / x
        path.write_text(path.read_text().replace("8080", port))
        git(c.root, "commit", "-qam", f"port {port}")
    sync(a)
    code, text = run_on_pty(["sync", "--repo", str(b.root)])
    lines = text.splitlines()
    assert code == 1, text
    assert lines[0].startswith("error: ") and "  code: ERR_SYNC_CONFLICT" in lines
    assert "1 conflicted file:" in lines and f"  {x}" in lines
    assert any(line.strip().startswith("ours:") and "7070" in line for line in lines)
    assert any(line.strip().startswith("theirs:") and "9090" in line for line in lines)
    assert f"    git: CONFLICT (content): Merge conflict in {x}" in lines
    assert any(line.startswith("  try: ") for line in lines)
    code, text = run_on_pty(["sync", "--repo", str(b.root)])  # again, while it is unresolved
    assert code == 1 and "resolve the conflicted files" in text and "sync --abort" in text
    assert run(["sync", "--abort", "--repo", str(b.root)], stdout=io.StringIO()) == 0
    out = io.StringIO()  # piped, the same conflict is the envelope, git's words included
    assert run(["sync", "--repo", str(b.root)], stdout=out) == 1
    envelope = json.loads(out.getvalue())
    assert envelope["code"] == "ERR_SYNC_CONFLICT"
    (conflict,) = envelope["details"]["conflicts"]
    assert conflict["git"] == f"CONFLICT (content): Merge conflict in {x}"


def test_a_sync_that_brings_commits_says_what_came_and_went(clones: Any) -> None:
    a, b = clones("a"), clones("b")
    a.write(title="Drain first", claim="Drain the VIP before a deploy.")
    sync(a)
    b.write(title="Cache", claim="The cache keeps entries for a day.")
    code, text = run_on_pty(["sync", "--repo", str(b.root)])
    lines = text.splitlines()
    assert code == 0, text
    assert lines[0].startswith("origin/main: received 1 commit (merge), sent ")
    assert f"HEAD {b.git.head()[:12]}" in lines[0]
    assert "  files: 1 added" in lines
    code, text = run_on_pty(["sync", "--repo", str(b.root)])
    assert code == 0 and text.startswith("origin/main: already up to date; HEAD ")
