"""Roots, odd paths, leftovers and contract gaps found by using the CLI as people do (§4, §5)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import InvalidMemoryError, InvalidPathError

from .conftest import git, run_cli


def test_cli_refuses_a_code_repository_as_memory_root(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    git(code, "init", "-q")
    exit_code, env = run_cli(code, "write", "--type", "semantic", "--title", "x", "--claim", "X.")
    assert exit_code == 1 and env["code"] == "ERR_REPO_REQUIRED"
    assert any("memhtml init" in s for s in env["suggestions"])
    assert git(code, "status", "--porcelain", "--untracked-files=all") == ""


def test_doctor_path_is_taken_from_the_memory_root(corpus: Any, repo: Path, tmp_path: Path) -> None:
    path = corpus.write(title="x", claim="X is a fact.")["path"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", "doctor", path, "--dense"],
        cwd=elsewhere,
        env={**os.environ, "MEMHTML_ROOT": str(repo)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout
    assert '"ok":true' in proc.stdout.replace(" ", "")


def test_doctor_fix_on_the_command_line(corpus: Any, repo: Path) -> None:
    a = corpus.write(title="a", claim="Fact a.")["path"]
    b = corpus.write(title="b", claim="Fact b.")["path"]
    corpus.link(a, "relates_to", b)
    git(repo, "mv", b, "areas/inbox/b-moved.html")
    git(repo, "commit", "-qm", "moved by hand")
    corpus.close()
    code, env = run_cli(repo, "doctor")
    assert code == 0 and env["data"]["healthy"] is False and env["data"]["repairable"]
    code, env = run_cli(repo, "doctor", "--fix")
    assert code == 0
    assert env["data"]["healthy"] is True
    assert [r["to"] for r in env["data"]["repairs"]["relinked"]] == ["areas/inbox/b-moved.html"]


def test_from_session_links_are_never_authored(corpus: Any) -> None:
    a = corpus.write(title="a", claim="Fact a.")["path"]
    b = corpus.write(title="b", claim="Fact b.")["path"]
    with pytest.raises(InvalidMemoryError, match="from_session"):
        corpus.link(a, "from_session", b)
    outcome = corpus.apply([{"op": "link", "src": a, "rel": "from_session", "dst": b}])
    assert outcome.aborted and outcome.failure is not None
    assert "from_session" in outcome.failure.message


def test_new_memory_files_get_ordinary_permissions(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="mode", claim="Files are world-readable like a checkout.")["path"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((repo / path).stat().st_mode) == 0o666 & ~mask


def test_read_refuses_an_in_tree_symlink_to_a_non_memory_file(corpus: Any, repo: Path) -> None:
    link = repo / "areas" / "inbox" / "sneaky.html"
    link.symlink_to(repo / ".git" / "config")
    with pytest.raises(InvalidPathError):
        corpus.read("areas/inbox/sneaky.html")


def test_stale_git_index_lock_is_reported_and_cleared(corpus: Any, repo: Path) -> None:
    corpus.write(title="one", claim="One fact.")
    (repo / ".git" / "index.lock").write_text("")  # left by a killed git
    health = corpus.health()
    assert health["stale_git_lock"] == ".git/index.lock" and not health["healthy"]
    assert "memhtml doctor --fix" in health["suggestions"]
    # The next write door settles it by itself (no git process holds it).
    assert corpus.write(title="two", claim="Two facts.")["path"]
    assert not (repo / ".git" / "index.lock").exists()


def test_interrupted_batch_is_reported_then_settled(corpus: Any, repo: Path) -> None:
    from memhtml.store import recovery
    from memhtml.store.files import FileChange

    leftover = b"<!doctype html><title>half</title>"
    recovery.begin(repo, None, [FileChange("areas/inbox/half.html", leftover)])
    (repo / "areas" / "inbox" / "half.html").write_bytes(leftover)
    (repo / "areas" / "inbox" / ".memhtml-abc.tmp").write_bytes(b"torn")
    # The journal names a pid that is not running any more.
    text = recovery.journal_path(repo).read_text().replace(str(os.getpid()), "999999999")
    recovery.journal_path(repo).write_text(text)
    assert corpus.health()["interrupted_batch"]["paths"] == ["areas/inbox/half.html"]
    repairs = corpus.fix()
    assert repairs["rolled_back"] == ["areas/inbox/half.html"]
    assert repairs["temp_files_removed"] == ["areas/inbox/.memhtml-abc.tmp"]
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert corpus.health()["interrupted_batch"] is None
