"""A remote must not bring what a memory must not hold; a refused sync changes nothing.

Each test pushes a commit made with plain git from a third clone (what a
careless hand, a tool gone wrong or an attacker with push access does), then
syncs a memhtml clone through the CLI and compares the clone byte for byte:
the working tree (planes included), HEAD, every ref but the remote-tracking
ones, git's index and the repository config.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from memhtml.cli.main import run
from tests.sync.conftest import git


def call(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run([*argv, "--json"], stdout=out)
    return code, json.loads(out.getvalue())


def ok(*argv: str) -> dict[str, Any]:
    code, out = call(*argv)
    assert code == 0 and out["ok"], out
    return dict(out["data"])


def snapshot(root: Path) -> dict[str, bytes]:
    """Everything a refused sync must leave byte-identical."""
    held: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_symlink():
            held[rel] = b"symlink " + os.fsencode(os.readlink(path))
        elif path.is_file():
            held[rel] = path.read_bytes()
    for rel in ("HEAD", "index", "config", "info/attributes", "MERGE_HEAD", "ORIG_HEAD"):
        file = root / ".git" / rel
        held[f".git/{rel}"] = file.read_bytes() if file.exists() else b"(absent)"
    refs = git(root, "for-each-ref", "--format=%(refname) %(objectname)")
    held["refs"] = "\n".join(
        r for r in refs.splitlines() if not r.startswith("refs/remotes/")
    ).encode()
    return held


def usage_rows(root: Path) -> int:
    with closing(sqlite3.connect(root / ".memhtml" / "state.db")) as conn:
        return int(conn.execute("SELECT count(*) FROM access").fetchone()[0])


@pytest.fixture
def env(remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A memhtml clone `a` with two memories read twice (usage rows), synced, and a plain
    git clone `evil` of the same remote, up to date."""
    monkeypatch.setenv("MEMHTML_EMBEDDER", "fake")
    a = tmp_path / "a"
    ok("init", "--clone", str(remote), "--repo", str(a))
    for title, claim in (
        ("Drain", "Drain the VIP before a deploy."),
        ("Pin", "Pin the clock with freezegun."),
    ):
        ok("write", "--repo", str(a), "--title", title, "--type", "semantic", "--claim", claim)
    for rel in ("areas/inbox/drain.html", "areas/inbox/pin.html"):
        ok("read", "--repo", str(a), rel)
    ok("sync", "--repo", str(a))
    assert usage_rows(a) == 2
    evil = tmp_path / "evil"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(remote), str(evil)], check=True)
    return {"a": a, "evil": evil, "remote": remote}


def push(evil: Path, message: str, *, force: bool = False) -> str:
    git(evil, "commit", "-q", "--allow-empty", "-m", message)
    git(evil, "push", "-q", *(["--force"] if force else []), "origin", "HEAD:refs/heads/main")
    return git(evil, "rev-parse", "HEAD")


def refused(a: Path, *flags: str, reason: str = "refused") -> dict[str, Any]:
    """Sync `a`; it must be refused with ERR_REMOTE `reason` and leave `a` byte-identical."""
    before = snapshot(a)
    code, out = call("sync", "--repo", str(a), *flags)
    assert (code, out["code"], out["details"]["reason"]) != (0, None, None), out
    assert out["code"] == "ERR_REMOTE" and out["details"]["reason"] == reason, out
    assert out["suggestions"], out
    after = snapshot(a)
    assert after.keys() == before.keys()
    assert [k for k in before if before[k] != after[k]] == []
    return dict(out)


def why(out: dict[str, Any]) -> dict[str, str]:
    return {p["path"]: p["why"] for p in out["details"]["paths"]}


# -- the three repros ----------------------------------------------------------------


def test_a_remote_committing_the_planes_is_refused_and_usage_stays(env: dict[str, Path]) -> None:
    a, evil = env["a"], env["evil"]
    (evil / ".memhtml").mkdir(exist_ok=True)
    (evil / ".memhtml" / "index.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    (evil / ".memhtml" / "state.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    git(evil, "add", "-f", ".memhtml/index.db", ".memhtml/state.db")
    push(evil, "commit the planes")
    out = refused(a)
    reasons = why(out)
    assert set(reasons) == {".memhtml/index.db", ".memhtml/state.db"}
    assert all("machine-local" in r for r in reasons.values())
    assert ".memhtml/index.db" in out["error"]
    assert usage_rows(a) == 2
    # refused again (nothing wedged), and once the remote is put right, sync works
    refused(a)
    git(evil, "reset", "-q", "--hard", "HEAD~1")
    push(evil, "an ordinary commit", force=True)
    data = ok("sync", "--repo", str(a))
    assert data["received"] == 1 and usage_rows(a) == 2
    assert ok("doctor", "--repo", str(a))["healthy"] is True


def test_doctor_reports_planes_a_hand_committed(env: dict[str, Path]) -> None:
    a = env["a"]
    git(a, "add", "-f", ".memhtml/state.db")
    git(a, "commit", "-qm", "by hand")
    out = ok("doctor", "--repo", str(a))
    assert out["healthy"] is False and out["committed_planes"] == [".memhtml/state.db"]
    assert any("git rm --cached" in s for s in out["suggestions"])


def _edit_claim(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def test_a_remote_gitattributes_merge_union_is_refused(env: dict[str, Path]) -> None:
    a, evil = env["a"], env["evil"]
    rel = "areas/inbox/drain.html"
    _edit_claim(a, rel, "before a deploy", "after the canary")
    git(a, "commit", "-qam", "ours")
    (evil / ".gitattributes").write_text("*.html merge=union\n")
    _edit_claim(evil, rel, "before a deploy", "before every release")
    git(evil, "add", "-A")
    push(evil, "union merges")
    out = refused(a)
    assert set(why(out)) == {".gitattributes"}
    assert "merge=union" in why(out)[".gitattributes"]


def test_a_remote_gitattributes_working_tree_encoding_is_refused(env: dict[str, Path]) -> None:
    a, evil = env["a"], env["evil"]
    with (evil / ".gitattributes").open("a") as f:
        f.write("*.html working-tree-encoding=UTF-16LE-BOM\n")
    git(evil, "add", ".gitattributes")
    push(evil, "utf-16")
    out = refused(a)
    assert "working-tree-encoding" in why(out)[".gitattributes"]
    # the next write commits exactly the UTF-8 bytes it wrote
    data = ok(
        "write",
        "--repo",
        str(a),
        "--title",
        "Cache",
        "--type",
        "semantic",
        "--claim",
        "Cache for a day.",
    )
    blob = subprocess.run(
        ["git", "cat-file", "blob", f"HEAD:{data['path']}"], cwd=a, capture_output=True, check=True
    ).stdout
    assert blob == (a / data["path"]).read_bytes() and b"Cache for a day." in blob


# -- the refusal classes ---------------------------------------------------------------


def _commit_file(evil: Path, rel: str, data: bytes, mode: int = 0o644) -> None:
    path = evil / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    git(evil, "add", "-f", "--", rel)


MEMORY = (
    b'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>X</title></head>'
    b"<body><article><p><mark>A fact.</mark></p></article></body></html>\n"
)


@pytest.mark.parametrize(
    ("rel", "data", "mode", "expect"),
    [
        (".gitmodules", b'[submodule "x"]\n\tpath = x\n\turl = ../x\n', 0o644, "not a memory"),
        (".githooks/pre-commit", b"#!/bin/sh\n", 0o755, "executable"),
        ("notes.md", b"# notes\n", 0o644, "not a memory"),
        ("README.html", b"<p>readme</p>\n", 0o755, "executable"),
        ("areas/inbox/notes.txt", b"text\n", 0o644, "not a memory file"),
        ("areas/inbox/big.html", MEMORY + b" " * (1 << 20), 0o644, "over the limit"),
        ("areas/inbox/a\x01b.html", MEMORY, 0o644, "control character"),
        ("areas/inbox/a\\b.html", MEMORY, 0o644, "backslash"),
        (".memhtml/vectors/v.bin", b"\x00" * 8, 0o644, "machine-local"),
        (".memhtml/state.db-wal", b"\x00" * 8, 0o644, "machine-local"),
        (".memhtml/config.json", b"{not json", 0o644, "not valid JSON"),
        (".memhtml/sleep/run.sh", b"#!/bin/sh\n", 0o644, "not a memory"),
    ],
)
def test_each_refusal_class_names_the_path(
    env: dict[str, Path], rel: str, data: bytes, mode: int, expect: str
) -> None:
    _commit_file(env["evil"], rel, data, mode)
    push(env["evil"], f"bring {rel!r}")
    out = refused(env["a"])
    assert expect in why(out)[rel], out


def test_a_symlink_and_a_submodule_are_refused(env: dict[str, Path]) -> None:
    evil = env["evil"]
    (evil / "areas" / "inbox" / "passwd.html").symlink_to("/etc/passwd")
    sha = git(evil, "rev-parse", "HEAD")
    git(evil, "add", "areas/inbox/passwd.html")
    git(evil, "update-index", "--add", "--cacheinfo", f"160000,{sha},projects/sub")
    push(evil, "a link and a submodule")
    reasons = why(refused(env["a"]))
    assert reasons == {
        "areas/inbox/passwd.html": "a symlink",
        "projects/sub": "a submodule (gitlink)",
    }


def test_git_itself_refuses_a_malformed_tree_at_fetch(env: dict[str, Path]) -> None:
    evil = env["evil"]

    def plumb(*args: str, stdin: str = "") -> str:
        return subprocess.run(
            ["git", *args], cwd=evil, input=stdin, capture_output=True, text=True, check=True
        ).stdout.strip()

    blob = plumb("hash-object", "-w", "--stdin", stdin="[core]\n\thooksPath = /tmp\n")
    dotgit = plumb("mktree", stdin=f"100644 blob {blob}\tconfig\n")
    listing = plumb("ls-tree", "HEAD")
    tree = plumb("mktree", stdin=f"{listing}\n040000 tree {dotgit}\t.git\n")
    commit = plumb("commit-tree", tree, "-p", "HEAD", "-m", "a .git folder")
    git(evil, "push", "-q", "origin", f"{commit}:refs/heads/main")
    out = refused(env["a"])
    assert "contains '.git'" in out["error"]


def test_every_incoming_commit_is_checked_not_only_the_tip(env: dict[str, Path]) -> None:
    evil = env["evil"]
    _commit_file(evil, ".memhtml/index.db", b"x")
    push(evil, "bring the plane")
    git(evil, "rm", "-q", "--cached", ".memhtml/index.db")
    tip = push(evil, "and take it away: the tip's tree is clean")
    assert ".memhtml/index.db" not in git(evil, "ls-tree", "-r", "--name-only", tip)
    assert set(why(refused(env["a"]))) == {".memhtml/index.db"}


def test_a_merge_is_checked_too(env: dict[str, Path]) -> None:
    a = env["a"]
    ok("write", "--repo", str(a), "--title", "Local", "--type", "semantic", "--claim", "A fact.")
    _commit_file(env["evil"], "areas/inbox/x.html", MEMORY, 0o644)
    _commit_file(env["evil"], "hook.sh", b"#!/bin/sh\n", 0o755)
    push(env["evil"], "diverge with a bad file")
    assert set(why(refused(a))) == {"hook.sh"}


def test_a_path_this_clone_ignores_is_refused(env: dict[str, Path]) -> None:
    a = env["a"]
    with (a / ".git" / "info" / "exclude").open("a") as f:
        f.write("areas/private/\n")
    (a / "areas" / "private").mkdir()
    (a / "areas" / "private" / "mine.html").write_bytes(b"local, ignored, precious")
    _commit_file(env["evil"], "areas/private/mine.html", MEMORY)
    push(env["evil"], "clobber an ignored file")
    assert "ignored in this clone" in why(refused(a))["areas/private/mine.html"]
    assert (a / "areas" / "private" / "mine.html").read_bytes() == b"local, ignored, precious"


@pytest.mark.parametrize(
    ("rel", "edit", "expect"),
    [
        (".gitignore", lambda t: t.replace(".memhtml/index.db\n", ""), "drops"),
        (".gitignore", lambda t: t + "*.html\n", "does not write"),
        (".gitattributes", lambda t: t + "* text=auto eol=crlf\n", "does not write"),
        (".gitattributes", lambda t: None, "deletes"),
    ],
)
def test_the_scaffold_is_memhtmls_never_the_remotes(
    env: dict[str, Path], rel: str, edit: Any, expect: str
) -> None:
    path = env["evil"] / rel
    text = edit(path.read_text())
    if text is None:
        git(env["evil"], "rm", "-q", rel)
    else:
        path.write_text(text)
        git(env["evil"], "add", rel)
    push(env["evil"], f"edit {rel}")
    assert expect in why(refused(env["a"]))[rel]


def test_what_memhtml_itself_commits_passes(env: dict[str, Path]) -> None:
    evil = env["evil"]
    _commit_file(evil, "areas/inbox/x.html", MEMORY)
    _commit_file(evil, "projects/demo/.gitkeep", b"")
    _commit_file(evil, "areas/inbox/index.html", b"<p>listing</p>\n")
    _commit_file(evil, "sitemap.xml", b"<urlset/>\n")
    _commit_file(evil, "memhtml.css", b"body{}\n")
    _commit_file(evil, ".memhtml/state/access.jsonl", b'{"path":"areas/inbox/x.html"}\n')
    _commit_file(evil, ".memhtml/sleep/2026-03-01.html", b"<p>report</p>\n")
    _commit_file(evil, ".memhtml/sleep/2026-03-01.pending.jsonl", b"{}\n")
    _commit_file(evil, ".memhtml/config.json", b'{"retrieval": {}}\n')
    with (evil / ".gitignore").open("a") as f:
        f.write("# a comment is inert\n")
    git(evil, "add", ".gitignore")
    (evil / "archive" / "2026" / "areas" / "inbox").mkdir(parents=True)
    git(
        evil, "mv", "areas/inbox/drain.html", "archive/2026/areas/inbox/drain.html"
    )  # a move, not a deletion
    push(evil, "what memhtml writes")
    data = ok("sync", "--repo", str(env["a"]))
    assert data["received"] == 1 and data["checked"]["commits"] == 1
    assert (env["a"] / "areas" / "inbox" / "x.html").exists()


def test_what_memhtmls_doors_commit_reaches_another_clone(
    env: dict[str, Path], remote: Path, tmp_path: Path
) -> None:
    """A night's curation, a published site and the state sidecars from one clone pass the
    other's check (the allowlist is what memhtml writes, found by running it)."""
    a = env["a"]
    ok(
        "write",
        "--repo",
        str(a),
        "--title",
        "Flaky test",
        "--type",
        "semantic",
        "--claim",
        "test_checkout_total fails when the clock crosses midnight UTC.",
    )
    ok("task", "add", "--repo", str(a), "--title", "Check the drain runbook")
    ok("publish", "--repo", str(a))
    ok("state", "export", "--repo", str(a))
    run_id = ok("sleep", "run", "--repo", str(a))["run_id"]
    ok("sleep", "merge", "--repo", str(a), run_id)
    ok("sync", "--repo", str(a))
    b = tmp_path / "b"
    ok("init", "--clone", str(remote), "--repo", str(b))
    tracked = git(a, "ls-tree", "-r", "--name-only", "HEAD")
    assert "sitemap.xml" in tracked and ".memhtml/state/access.jsonl" in tracked
    assert f".memhtml/sleep/{run_id}.html" in tracked, tracked
    assert git(b, "rev-parse", "HEAD") == git(a, "rev-parse", "HEAD")


# -- deletions ---------------------------------------------------------------------


def test_deleting_many_memories_needs_allow_deletions(env: dict[str, Path]) -> None:
    a, evil = env["a"], env["evil"]
    for i in range(12):
        ok(
            "write",
            "--repo",
            str(a),
            "--title",
            f"Fact {i}",
            "--type",
            "semantic",
            "--claim",
            f"Fact {i}.",
        )
    ok("sync", "--repo", str(a))
    git(evil, "pull", "-q", "--ff-only")
    doomed = sorted(p.name for p in (evil / "areas" / "inbox").glob("fact-*.html"))[:11]
    git(evil, "rm", "-q", *(f"areas/inbox/{n}" for n in doomed))
    push(evil, "delete 11")
    out = refused(a, reason="deletions")
    assert out["details"]["count"] == 11 and out["details"]["allowed"] == 10
    assert sorted(out["details"]["paths"]) == [f"areas/inbox/{n}" for n in doomed]
    assert any("--allow-deletions" in s for s in out["suggestions"])
    data = ok("sync", "--repo", str(a), "--allow-deletions")
    assert data["files"]["deleted"] == 11 and data["checked"]["deleted"] == 11
    assert not any((a / "areas" / "inbox" / n).exists() for n in doomed)


def test_a_tenth_of_a_small_memory_is_the_limit(env: dict[str, Path]) -> None:
    a, evil = env["a"], env["evil"]  # two memories: one may go, not both
    git(evil, "rm", "-q", "areas/inbox/drain.html", "areas/inbox/pin.html")
    push(evil, "delete both")
    out = refused(a, reason="deletions")
    assert (out["details"]["count"], out["details"]["allowed"]) == (2, 1)
    git(evil, "reset", "-q", "--hard", "HEAD~1")
    git(evil, "rm", "-q", "areas/inbox/pin.html")
    push(evil, "delete one", force=True)
    assert ok("sync", "--repo", str(a))["files"]["deleted"] == 1


def test_an_unrelated_remote_is_unrelated_not_a_mass_deletion(
    env: dict[str, Path], tmp_path: Path
) -> None:
    other = tmp_path / "other"
    # A root commit of its own: two scaffold commits made in the same second are one commit.
    subprocess.run(["git", "init", "-q", "-b", "main", str(other)], check=True)
    git(other, "commit", "-q", "--allow-empty", "-m", "another history")
    ok("init", "--repo", str(other))
    ok("write", "--repo", str(other), "--title", "Else", "--type", "semantic", "--claim", "Else.")
    git(env["a"], "remote", "set-url", "origin", str(other))
    refused(env["a"], reason="unrelated")


# -- init --clone ---------------------------------------------------------------------


def test_a_clone_of_a_hostile_remote_is_refused_and_leaves_nothing(
    env: dict[str, Path], tmp_path: Path
) -> None:
    _commit_file(env["evil"], "areas/inbox/passwd.html", b"", 0o644)
    (env["evil"] / "areas" / "inbox" / "passwd.html").unlink()
    (env["evil"] / "areas" / "inbox" / "passwd.html").symlink_to("/etc/passwd")
    git(env["evil"], "add", "areas/inbox/passwd.html")
    push(env["evil"], "a symlink")
    fresh = tmp_path / "fresh"
    code, out = call("init", "--clone", str(env["remote"]), "--repo", str(fresh))
    assert out["code"] == "ERR_REMOTE" and out["details"]["reason"] == "refused", out
    assert why(out) == {"areas/inbox/passwd.html": "a symlink"}
    assert not fresh.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = call("init", "--clone", str(env["remote"]), "--repo", str(empty))
    assert code != 0 and out["code"] == "ERR_REMOTE" and list(empty.iterdir()) == []


def test_a_clone_pins_memhtmls_attributes_before_its_checkout(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHTML_EMBEDDER", "fake")
    fresh = tmp_path / "fresh"
    ok("init", "--clone", str(remote), "--repo", str(fresh))
    attrs = (fresh / ".git" / "info" / "attributes").read_text()
    assert "*.html merge=memhtml" in attrs and "-working-tree-encoding" in attrs
    assert git(fresh, "status", "--porcelain") == ""
