"""A write's commit tree is built from HEAD's trees, not by `write-tree` over git's index.

`Git.commit_paths` stages the paths, names their blobs (`hash-object`), reads
HEAD's trees along the way (`cat-file`) and writes the changed trees with
`mktree`. Every case here checks the tree it commits against the one git builds
the old way (a private index read from HEAD, the paths staged, `write-tree`),
and that git's own index ends with the paths staged and the user's other
staged work untouched. Where the build declines (a symlink, `core.filemode`
off), the tree comes from an index and is the same.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memhtml.store.git import Git
from memhtml.store.trees import tree_object_id


def _git(root: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes = b"") -> str:
    return subprocess.run(
        ["git", *args],
        cwd=root,
        input=stdin,
        capture_output=True,
        check=True,
        env={**os.environ, **(env or {})},
    ).stdout.decode()


def _reference_tree(root: Path, parent: str | None, paths: list[str], tmp: Path) -> str:
    """What write-tree makes of `parent` plus `paths` as the working tree has them."""
    env = {"GIT_INDEX_FILE": str(tmp / "ref-index")}
    if parent:
        _git(root, "read-tree", parent, env=env)
    else:
        _git(root, "read-tree", "--empty", env=env)
    listing = b"".join(p.encode() + b"\0" for p in paths)
    _git(root, "update-index", "--add", "--remove", "-z", "--stdin", env=env, stdin=listing)
    return _git(root, "write-tree", env=env).strip()


def _write(root: Path, path: str, text: str, mode: int = 0o644) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    target.chmod(mode)


def _commit(root: Path, paths: list[str], tmp: Path) -> tuple[str, str]:
    """Commit `paths` through `commit_paths`; (the tree it committed, the reference tree)."""
    git = Git(root)
    parent = git.head()
    reference = _reference_tree(root, parent, paths, tmp)
    sha = git.commit_paths(paths, "memhtml(test): commit", parent)
    assert _git(root, "rev-parse", "HEAD").strip() == sha
    assert _git(root, "rev-parse", f"{sha}^").strip() == parent
    return _git(root, "rev-parse", f"{sha}^{{tree}}").strip(), reference


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tree must come from HEAD's trees: the index-built fallback fails the test."""

    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("the tree was written from an index")

    monkeypatch.setattr(Git, "_tree_from_index", refuse)


def _seed(root: Path) -> None:
    for path in ("areas/inbox/old.html", "areas/inbox/keep.html", "areas/solo/only.html"):
        _write(root, path, f"<p>{path}</p>\n")
    paths = ["areas/inbox/old.html", "areas/inbox/keep.html", "areas/solo/only.html"]
    Git(root).commit_paths(paths, "memhtml(test): seed", Git(root).head())


@pytest.mark.usefixtures("built")
def test_new_changed_deleted_and_executable_paths_match_write_tree(
    repo: Path, tmp_path: Path
) -> None:
    _seed(repo)
    _write(repo, "areas/new/deep/fresh.html", "<p>fresh</p>\n")
    _write(repo, "areas/inbox/old.html", "<p>changed</p>\n")
    _write(repo, "areas/inbox/run.html", "<p>executable</p>\n", mode=0o755)
    (repo / "areas/solo/only.html").unlink()  # its directory goes from the tree
    paths = [
        "areas/new/deep/fresh.html",
        "areas/inbox/old.html",
        "areas/inbox/run.html",
        "areas/solo/only.html",
        "areas/never/was.html",  # absent before and after: nothing to do
    ]
    tree, reference = _commit(repo, paths, tmp_path)
    assert tree == reference
    listing = _git(repo, "ls-tree", "-r", "HEAD")
    assert "100755 blob" in next(line for line in listing.splitlines() if "run.html" in line)
    assert "areas/solo" not in listing
    # git's index holds the committed paths: nothing staged, nothing left over.
    assert _git(repo, "diff-index", "--cached", "--name-only", "HEAD") == ""
    _git(repo, "fsck", "--strict")


@pytest.mark.usefixtures("built")
def test_names_sort_as_git_sorts_them(repo: Path, tmp_path: Path) -> None:
    paths = [
        "areas/a/x.html",
        "areas/a.html",
        "areas/a-b.html",
        "areas/a0.html",
        "areas/a.b/y.html",
        "areas/ab.html",
        "areas/é.html",
    ]
    for path in paths:
        _write(repo, path, f"<p>{path}</p>\n")
    tree, reference = _commit(repo, paths, tmp_path)
    assert tree == reference


@pytest.mark.usefixtures("built")
def test_the_users_staged_work_stays_staged_and_out_of_the_commit(
    repo: Path, tmp_path: Path
) -> None:
    _seed(repo)
    _write(repo, "areas/inbox/keep.html", "<p>the user's staged edit</p>\n")
    _git(repo, "add", "areas/inbox/keep.html")
    _write(repo, "areas/inbox/ours.html", "<p>ours</p>\n")
    tree, reference = _commit(repo, ["areas/inbox/ours.html"], tmp_path)
    assert tree == reference
    assert "the user's staged edit" not in _git(repo, "show", "HEAD:areas/inbox/keep.html")
    staged = _git(repo, "diff-index", "--cached", "--name-only", "HEAD").split()
    assert staged == ["areas/inbox/keep.html"]


@pytest.mark.parametrize("case", ["symlink", "filemode-off"])
def test_where_the_build_declines_the_index_builds_the_same_tree(
    repo: Path, tmp_path: Path, case: str
) -> None:
    _seed(repo)
    if case == "symlink":
        (repo / "areas/inbox/link.html").symlink_to("keep.html")
        paths = ["areas/inbox/link.html"]
    else:
        _git(repo, "config", "core.filemode", "false")
        _write(repo, "areas/inbox/plain.html", "<p>plain</p>\n")
        paths = ["areas/inbox/plain.html"]
    git = Git(repo)
    assert git._tree_with(git.head(), paths) is None  # declined: the index builds it
    tree, reference = _commit(repo, paths, tmp_path)
    assert tree == reference
    assert _git(repo, "diff-index", "--cached", "--name-only", "HEAD") == ""


@pytest.mark.usefixtures("built")
def test_a_first_commit_builds_from_nothing(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    _git(root, "init", "-q")
    for path in ("a.html", "areas/b.html", "areas/x/c.html"):
        _write(root, path, f"<p>{path}</p>\n")
    tree, reference = _commit_unborn(root, ["a.html", "areas/b.html", "areas/x/c.html"], tmp_path)
    assert tree == reference


def _commit_unborn(root: Path, paths: list[str], tmp: Path) -> tuple[str, str]:
    git = Git(root)
    assert git.head() is None
    reference = _reference_tree(root, None, paths, tmp)
    sha = git.commit_paths(paths, "memhtml(test): first", None)
    return _git(root, "rev-parse", f"{sha}^{{tree}}").strip(), reference


def test_tree_object_id_is_gits(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    blob = bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")  # the empty blob
    empty_tree = bytes.fromhex("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
    assert tree_object_id({}) == empty_tree
    entries = {b"b": (b"100644", blob), b"a": (b"40000", empty_tree), b"a.x": (b"100644", blob)}
    listing = "".join(
        f"{mode.decode()} {'tree' if mode == b'40000' else 'blob'} {oid.hex()}\t{name.decode()}\n"
        for name, (mode, oid) in entries.items()
    )
    made = _git(tmp_path, "mktree", "--missing", stdin=listing.encode()).strip()
    assert tree_object_id(entries).hex() == made


def test_a_big_batch_writes_its_tree_from_the_index(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past TREE_FROM_HEAD_MAX paths write-tree builds the tree (hashing each path twice would
    cost more than it spares), with the same tree and the user's staged work left out."""
    from memhtml.store.git import TREE_FROM_HEAD_MAX

    _seed(repo)
    _write(repo, "areas/inbox/keep.html", "<p>the user's staged edit</p>\n")
    _git(repo, "add", "areas/inbox/keep.html")

    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("a big batch built its tree from HEAD's trees")

    monkeypatch.setattr(Git, "_tree_with", refuse)
    paths = [f"areas/batch/m{i:03d}.html" for i in range(TREE_FROM_HEAD_MAX + 1)]
    for path in paths:
        _write(repo, path, f"<p>{path}</p>\n")
    tree, reference = _commit(repo, paths, tmp_path)
    assert tree == reference
    assert "the user's staged edit" not in _git(repo, "show", "HEAD:areas/inbox/keep.html")
    staged = _git(repo, "diff-index", "--cached", "--name-only", "HEAD").split()
    assert staged == ["areas/inbox/keep.html"]
