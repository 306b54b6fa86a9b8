"""ERR_DIRTY_TREE suggests what cleans the tree (commit or stash the named files), and the
suggested commands, run as given, do clean it."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.cli.main import run
from memhtml.ops.dirty import clean_tree_suggestions, dirty_tree_error


def call(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run([*argv, "--json"], stdout=out)
    return code, json.loads(out.getvalue())


@pytest.fixture
def dirty(repo: Path, tmp_path: Path) -> Path:
    """A store with a remote, one committed memory edited by hand and one stray new file."""
    with memhtml.open(repo, embedder="fake") as c:
        c.write(title="Pool", type="semantic", claim="The pool size is 64.", path="areas/db/p.html")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    assert call("remote", "add", "origin", str(bare), "--repo", str(repo))[0] == 0
    assert call("sync", "--repo", str(repo))[0] == 0
    page = repo / "areas/db/p.html"
    page.write_text(page.read_text().replace("64", "96"))
    (repo / "areas/db/new note.html").write_text("<p>draft</p>\n")
    return repo


def _command(suggestion: str) -> str:
    """A suggestion's command: what follows `label: `, without the trailing note."""
    return suggestion.split(": ", 1)[1].split("  (", 1)[0]


@pytest.mark.parametrize("how", ["keep them", "set them aside"])
def test_sync_on_a_dirty_tree_suggests_commands_that_clean_it(dirty: Path, how: str) -> None:
    code, out = call("sync", "--repo", str(dirty))
    assert (code, out["code"]) == (1, "ERR_DIRTY_TREE")
    assert "areas/db/p.html" in out["error"] and out["details"]["count"] == 2
    assert not any("doctor --fix" in s for s in out["suggestions"]), "nothing a killed command left"
    (suggestion,) = [s for s in out["suggestions"] if s.startswith(how)]
    assert "'areas/db/new note.html'" in suggestion  # the names, quoted for a shell
    subprocess.run(_command(suggestion), shell=True, check=True, capture_output=True)
    code, out = call("sync", "--repo", str(dirty))
    assert code == 0, out


def test_a_killed_batch_is_the_one_case_for_doctor_fix(repo: Path) -> None:
    from memhtml.store.recovery import journal_path

    journal = journal_path(repo)
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text(json.dumps({"pid": 2**22 + 17, "paths": ["areas/inbox/half.html"]}))
    (repo / "areas/inbox/half.html").write_text("<p>half</p>\n")
    tips = clean_tree_suggestions(repo, ["areas/inbox/half.html"])
    assert tips[0].startswith("memhtml doctor --fix")


def test_many_paths_are_counted_and_the_commands_take_every_change(repo: Path) -> None:
    paths = [f"areas/inbox/n{i}.html" for i in range(30)]
    err = dirty_tree_error(repo, paths, needs="sync needs a clean tree")
    assert err.details["count"] == 30 and len(err.details["paths"]) == 20
    assert "and 27 more" in err.message
    assert all(" -- " not in s for s in err.suggestions)  # no list cut short: all changes


def test_correct_of_an_edited_memory_names_the_file_and_the_cleaning_commands(
    repo: Path,
) -> None:
    with memhtml.open(repo, embedder="fake") as c:
        c.write(title="Pool", type="semantic", claim="The pool size is 64.", path="areas/db/p.html")
    page = repo / "areas/db/p.html"
    page.write_text(page.read_text().replace("64", "65"))
    code, out = call(
        "correct", "areas/db/p.html", "--claim", "The pool is 96.", "--repo", str(repo)
    )
    assert (code, out["code"]) == (1, "ERR_DIRTY_TREE")
    assert any(s.startswith("set them aside: git -C") for s in out["suggestions"])
    assert not any("<root>" in s for s in out["suggestions"])


def test_sleep_run_on_a_dirty_tree_suggests_the_cleaning_commands_not_doctor(
    dirty: Path,
) -> None:
    code, out = call("sleep", "run", "--llm", "off", "--repo", str(dirty))
    assert (code, out["code"]) == (1, "ERR_DIRTY_TREE")
    assert "sleep runs on a clean tree" in out["error"] and out["details"]["count"] == 2
    assert not any("doctor --fix" in s for s in out["suggestions"])
    (suggestion,) = [s for s in out["suggestions"] if s.startswith("set them aside")]
    subprocess.run(_command(suggestion), shell=True, check=True, capture_output=True)
    code, out = call("sleep", "run", "--llm", "off", "--repo", str(dirty))
    assert code == 0, out
