"""`init` runs on git's own commands (no GitPython), and makes what it made before.

The scaffold's tree id was recorded from the GitPython implementation (8fb8e7f:
a6004ac5d38e64ca93718b3743d7bb5c7ef27d80), and re-recorded once since, when the
scaffold's README.html took an `article mark` for guest scripts (its only
change; tests/codemode/test_compat.py): a tree id is a hash of every path, mode
and byte, so equal ids mean an equal scaffold. The repository config is
compared byte for byte as well.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memhtml.contracts.errors import GitError
from memhtml.store.attributes import BLOCK
from memhtml.store.layout import init_repo, merge_driver_command

SCAFFOLD_TREE = "8a6e8845de207ef1fab3cc455143f5729e82ced1"
CREATED = [
    "projects/.gitkeep",
    "areas/.gitkeep",
    "areas/arcs/.gitkeep",
    "areas/inbox/.gitkeep",
    "resources/.gitkeep",
    "resources/people/.gitkeep",
    "archive/.gitkeep",
    ".memhtml/state/.gitkeep",
    ".memhtml/sleep/.gitkeep",
    ".gitignore",
    ".gitattributes",
    "README.html",
]


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_fresh_root_gets_the_scaffold_it_always_got(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    report = init_repo(root)
    assert report.created_repo and report.created == CREATED
    assert report.commit_sha == git(root, "rev-parse", "HEAD")
    assert git(root, "rev-parse", "HEAD^{tree}") == SCAFFOLD_TREE
    assert git(root, "log", "--format=%s") == "memhtml(init): scaffold the memory root"
    assert git(root, "symbolic-ref", "--short", "HEAD") == "main"
    assert git(root, "status", "--porcelain") == ""
    assert (root / ".git" / "info" / "attributes").read_text() == BLOCK
    # What GitPython's config writer wrote, byte for byte (git writes the same layout).
    assert (root / ".git" / "config").read_text() == (
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
        "\tlogallrefupdates = true\n"
        '[merge "memhtml"]\n\tname = memhtml head-aware merge\n'
        f"\tdriver = {merge_driver_command()}\n"
        '[merge "ours"]\n\tdriver = true\n'
    )


def test_a_second_init_adds_nothing_and_rewrites_nothing(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    init_repo(root)
    config = root / ".git" / "config"
    config.write_text(config.read_text() + "# the user's own comment\n")
    head = git(root, "rev-parse", "HEAD")
    report = init_repo(root)
    assert (report.created_repo, report.created, report.commit_sha) == (False, [], None)
    assert git(root, "rev-parse", "HEAD") == head
    assert config.read_text().endswith("# the user's own comment\n")  # not re-serialized


def test_an_existing_repository_keeps_its_branch_and_its_files(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(root)], check=True)
    (root / "mine.txt").write_text("the user's")
    report = init_repo(root)
    assert not report.created_repo and report.created == CREATED
    assert git(root, "symbolic-ref", "--short", "HEAD") == "trunk"
    assert git(root, "rev-parse", "HEAD^{tree}") == SCAFFOLD_TREE  # mine.txt not committed
    assert git(root, "status", "--porcelain") == "?? mine.txt"


def test_a_folder_inside_another_repository_gets_its_own(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    outer.mkdir()
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    root = outer / "memory"
    report = init_repo(root)
    assert report.created_repo
    assert Path(git(root, "rev-parse", "--show-toplevel")).resolve() == root.resolve()
    assert git(root, "rev-parse", "HEAD^{tree}") == SCAFFOLD_TREE


def test_a_machine_without_an_identity_still_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("EMAIL", "")
    root = tmp_path / "memory"
    report = init_repo(root)
    assert report.commit_sha is not None
    assert git(root, "log", "--format=%an <%ae>") == "memhtml <memhtml@localhost>"
    assert git(root, "config", "--local", "user.email") == "memhtml@localhost"


def test_a_repository_git_cannot_read_is_refused_not_reinitialized(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    (root / ".git").write_text("gitdir: /nonexistent/elsewhere\n")
    with pytest.raises(GitError, match="init failed"):
        init_repo(root)
    assert (root / ".git").read_text() == "gitdir: /nonexistent/elsewhere\n"
    assert sorted(p.name for p in root.iterdir()) == [".git"]


def test_init_does_not_import_gitpython(tmp_path: Path) -> None:
    code = (
        "import sys, memhtml; memhtml.init(sys.argv[1]);"
        "print('git' in sys.modules, 'git.repo' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["False", "False"]
