"""The write doors against a real git repository in tmp_path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import (
    DirtyTreeError,
    InvalidMemoryError,
    InvalidOpError,
    InvalidPathError,
    PathNotFoundError,
    WriteConflictError,
)
from memhtml.html import add_meta, parse_memory
from memhtml.store.layout import init_repo


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def commits(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD"))


def test_write_commits_one_valid_file(corpus: Any, repo: Path) -> None:
    before = commits(repo)
    out = corpus.write(
        title="WAL admits one writer",
        type="semantic",
        claim="A CLI and a server share one index.db.",
        tag=["sqlite"],
        entity=["tool:sqlite"],
        importance=7,
        confidence=0.9,
        event_at="2026-07-28",
    )
    assert out["created"] and not out["deduped"]
    assert out["commit_sha"] == git(repo, "rev-parse", "HEAD")
    assert commits(repo) == before + 1
    doc = parse_memory((repo / out["path"]).read_bytes())
    assert doc.ok and doc.gist == "A CLI and a server share one index.db."
    assert doc.importance == 7 and doc.confidence == 0.9 and doc.event_at == "2026-07-28"
    assert ("tool", "sqlite") in doc.entities and doc.tags == ("sqlite",)
    assert git(repo, "status", "--porcelain") == ""


def test_dedup_returns_existing_path(corpus: Any, repo: Path) -> None:
    first = corpus.write(title="One", type="semantic", claim="Same words here.")
    before = commits(repo)
    again = corpus.write(title="Another title", type="semantic", claim="Same   words here.")
    assert again["deduped"] and again["path"] == first["path"] == again["existing_path"]
    assert again["commit_sha"] is None
    assert commits(repo) == before


def test_collision_gets_a_suffix_never_overwrites(corpus: Any, repo: Path) -> None:
    a = corpus.write(title="Pool size", type="semantic", claim="The pool holds 64.", tag=["db"])
    b = corpus.write(title="Pool size", type="semantic", claim="The pool holds 32.", tag=["db"])
    assert a["path"] == "resources/db/pool-size.html"
    assert b["path"] == "resources/db/pool-size-2.html"
    assert "64" in (repo / a["path"]).read_text()


def test_explicit_path_and_strict(corpus: Any) -> None:
    corpus.write(title="X", type="semantic", claim="Ex one.", path="areas/ops/x.html")
    with pytest.raises(WriteConflictError):
        corpus.write(
            title="X", type="semantic", claim="Ex two.", path="areas/ops/x.html", strict_path=True
        )
    other = corpus.write(title="X", type="semantic", claim="Ex three.", path="areas/ops/x.html")
    assert other["path"] == "areas/ops/x-2.html"


def test_correct_is_one_commit_with_links_both_ways(corpus: Any, repo: Path) -> None:
    orig = corpus.write(
        title="Port", type="semantic", claim="The API listens on 8080.", tag=["api"]
    )
    before = commits(repo)
    out = corpus.correct(orig["path"], claim="The API listens on 9090.", reason="moved")
    assert commits(repo) == before + 1
    assert not (repo / orig["path"]).exists()
    archived = repo / out["archive_path"]
    new = repo / out["path"]
    assert archived.exists() and new.exists()
    old_doc, new_doc = parse_memory(archived.read_bytes()), parse_memory(new.read_bytes())
    assert old_doc.status == "archived" and old_doc.superseded_by == out["path"]
    assert old_doc.valid_until is not None
    assert any(
        link.rel == "supersedes" and link.path == out["archive_path"] for link in new_doc.links
    )
    assert new_doc.title == "Port" and new_doc.tags == ("api",)
    active = corpus.conn.execute(
        "SELECT count(*) FROM files WHERE archived = 0 AND path LIKE 'resources/api/%'"
    ).fetchone()[0]
    assert active == 1
    log = git(repo, "log", "--follow", "--format=%s", "--", out["archive_path"])
    assert "memhtml(write): Port" in log.splitlines()


def test_archive_moves_and_follows(corpus: Any, repo: Path) -> None:
    w = corpus.write(title="Old", type="episodic", claim="Something happened once.")
    out = corpus.archive(w["path"], reason="stale")
    assert out["archive_path"].startswith("archive/") and out["archive_path"].endswith(w["path"])
    doc = parse_memory((repo / out["archive_path"]).read_bytes())
    assert doc.status == "archived" and doc.archived_at is not None
    log = git(repo, "log", "--follow", "--format=%s", "--", out["archive_path"])
    assert len(log.splitlines()) == 2
    with pytest.raises(InvalidMemoryError):
        corpus.archive(out["archive_path"])
    with pytest.raises(PathNotFoundError):
        corpus.archive(w["path"])


def test_link_idempotent_and_refusals(corpus: Any, repo: Path) -> None:
    a = corpus.write(title="A", type="semantic", claim="Alpha fact.")["path"]
    b = corpus.write(title="B", type="semantic", claim="Beta fact.")["path"]
    first = corpus.link(a, "caused_by", b)
    assert first["created"] and first["commit_sha"]
    before_text = (repo / a).read_text()
    assert '<link rel="memhtml-caused-by" href="/' + b + '">' in before_text
    again = corpus.link(a, "caused-by", b)
    assert not again["created"] and again["commit_sha"] is None
    with pytest.raises(InvalidMemoryError):
        corpus.link(a, "caused_by", a)
    with pytest.raises(InvalidMemoryError):
        corpus.link(a, "likes", b)
    with pytest.raises(PathNotFoundError):
        corpus.link(a, "caused_by", "areas/inbox/nope.html")
    edges = corpus.conn.execute("SELECT src_path, rel, dst_path FROM edges").fetchall()
    assert edges == [(a, "caused_by", b)]


def test_apply_500_ops_is_one_commit(corpus: Any, repo: Path) -> None:
    before = commits(repo)
    ops = [
        {
            "op": "write",
            "title": f"Fact {i}",
            "type": "semantic",
            "body": f"Fact number {i} is distinct. Detail {i}.",
        }
        for i in range(500)
    ]
    outcome = corpus.apply(ops)
    assert outcome.commit_sha and commits(repo) == before + 1
    assert outcome.summary()["written"] == 500
    assert [r["index"] for r in outcome.results] == list(range(500))
    assert corpus.conn.execute("SELECT count(*) FROM files").fetchone()[0] == 500


def test_atomic_apply_leaves_everything_unchanged(corpus: Any, repo: Path) -> None:
    corpus.write(title="Seed", type="semantic", claim="Seed fact.")
    head = git(repo, "rev-parse", "HEAD")
    tree = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.html"))
    ops = [
        {"op": "write", "title": "Good", "type": "semantic", "body": "Good one."},
        {"op": "archive", "path": "areas/inbox/missing.html"},
        {"op": "write", "title": "Later", "type": "semantic", "body": "Later one."},
    ]
    outcome = corpus.apply(ops)
    assert outcome.aborted and outcome.commit_sha is None
    assert [r["skipped"] for r in outcome.results] == [True, False, True]
    assert outcome.results[1]["code"] == "ERR_PATH_NOT_FOUND"
    assert git(repo, "rev-parse", "HEAD") == head
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.html")) == tree
    assert git(repo, "status", "--porcelain") == ""


def test_continue_on_error_commits_the_rest(corpus: Any) -> None:
    ops = [
        {"op": "write", "title": "Good", "type": "semantic", "body": "Good one."},
        {"op": "archive", "path": "areas/inbox/missing.html"},
    ]
    outcome = corpus.apply(ops, continue_on_error=True)
    assert outcome.commit_sha and outcome.summary() == {
        "total": 2,
        "written": 1,
        "deduped": 0,
        "corrected": 0,
        "archived": 0,
        "linked": 0,
        "unchanged": 0,
        "failed": 1,
        "skipped": 0,
    }


def test_ops_in_one_batch_see_each_other(corpus: Any, repo: Path) -> None:
    ops = [
        {
            "op": "write",
            "title": "A",
            "type": "semantic",
            "body": "Alpha.",
            "path": "areas/x/a.html",
        },
        {
            "op": "write",
            "title": "B",
            "type": "semantic",
            "body": "Beta.",
            "path": "areas/x/b.html",
        },
        {"op": "link", "src": "areas/x/a.html", "rel": "supports", "dst": "areas/x/b.html"},
        {"op": "write", "title": "dup", "type": "semantic", "body": "Alpha."},
    ]
    outcome = corpus.apply(ops)
    assert outcome.results[3]["deduped"] and outcome.results[3]["path"] == "areas/x/a.html"
    assert "memhtml-supports" in (repo / "areas/x/a.html").read_text()


def test_malformed_ops_are_refused_before_anything_runs(corpus: Any, repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(InvalidOpError) as err:
        corpus.apply(
            [
                {"op": "write", "title": "ok", "type": "semantic", "body": "Fine."},
                {"op": "write", "title": "bad", "type": "nonsense", "body": "x"},
            ]
        )
    assert err.value.details["line"] == 2
    assert git(repo, "rev-parse", "HEAD") == head


@pytest.mark.parametrize(
    "path", ["../escape.html", "/etc/x.html", "areas/../../x.html", "archive/2026/areas/x.html"]
)
def test_bad_paths_refused(corpus: Any, path: str) -> None:
    with pytest.raises(InvalidPathError):
        corpus.write(title="T", type="semantic", claim="Claim here.", path=path)


def test_symlink_escaping_the_root_is_refused(corpus: Any, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "areas" / "link").symlink_to(outside)
    with pytest.raises(InvalidPathError):
        corpus.write(title="T", type="semantic", claim="Claim here.", path="areas/link/x.html")
    assert list(outside.iterdir()) == []


def test_oversized_and_invalid_inputs(corpus: Any) -> None:
    with pytest.raises(InvalidMemoryError):
        corpus.write(title="Big", type="semantic", claim="Big.", body=["x" * 2_000_000])
    with pytest.raises(InvalidOpError):
        corpus.apply([{"title": "T", "type": "episodic_nope", "body": "x"}])
    with pytest.raises(InvalidMemoryError):
        corpus.write(title="T", type="semantic", claim="C.", event_at="July 4")
    with pytest.raises(InvalidMemoryError):
        corpus.write(title="T", type="semantic", claim="C.", entity=["no-colon"])


def test_dirty_target_refused_and_user_edits_untouched(corpus: Any, repo: Path) -> None:
    a = corpus.write(title="A", type="semantic", claim="Alpha.")["path"]
    b = corpus.write(title="B", type="semantic", claim="Beta.")["path"]
    (repo / a).write_text((repo / a).read_text().replace("Alpha.", "Alpha edited."))
    with pytest.raises(DirtyTreeError):
        corpus.archive(a)
    # the user's edit to another file and their staged work survive a write
    (repo / "notes.txt").write_text("mine")
    git(repo, "add", "notes.txt")
    corpus.write(title="C", type="semantic", claim="Gamma.")
    corpus.link(b, "relates_to", "areas/inbox/c.html")
    assert "Alpha edited." in (repo / a).read_text()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert f" M {a}\n" in status and "A  notes.txt\n" in status
    assert "notes.txt" not in git(repo, "show", "--name-only", "--format=", "HEAD")


def test_init_is_idempotent(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    report = init_repo(repo)
    assert report.created == [] and report.commit_sha is None
    assert git(repo, "rev-parse", "HEAD") == head
    attrs = (repo / ".gitattributes").read_text()
    assert "*.html merge=memhtml" in attrs
    assert ".memhtml/index.db" in (repo / ".gitignore").read_text()


WRITER = """
import sys, memhtml
c = memhtml.open(sys.argv[1], embedder="off")
for i in range(50):
    c.write(title=f"{sys.argv[2]} {i}", type="semantic", claim=f"Writer {sys.argv[2]} fact {i}.")
"""


def test_two_concurrent_writers_lose_nothing(repo: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(repo), name], stderr=subprocess.PIPE)
        for name in ("alpha", "beta")
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    files = [p for p in (repo / "areas" / "inbox").glob("*.html")]
    assert len(files) == 100
    assert commits(repo) == 101
    assert git(repo, "status", "--porcelain") == ""


def test_merge_driver_merges_head_only_divergence(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="M", type="semantic", claim="Merge me.")["path"]
    corpus.write(title="N", type="semantic", claim="Other.")
    git(repo, "checkout", "-q", "-b", "side")
    corpus.link(path, "relates_to", "areas/inbox/n.html")
    git(repo, "checkout", "-q", "main")
    (repo / path).write_text(add_meta((repo / path).read_text(), "memhtml-tag", "extra"))
    git(repo, "commit", "-qam", "tag on main")
    merged = subprocess.run(
        ["git", "merge", "-q", "--no-edit", "side"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert merged.returncode == 0, merged.stderr
    final = (repo / path).read_text()
    assert "<<<<<<<" not in final
    doc = parse_memory(final)
    assert doc.ok and "extra" in doc.tags
    assert any(link.rel == "relates_to" for link in doc.links)


def test_merge_driver_leaves_a_real_conflict(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="M", type="semantic", claim="Merge me.")["path"]
    git(repo, "checkout", "-q", "-b", "side")
    (repo / path).write_text((repo / path).read_text().replace("Merge me.", "Side says this."))
    git(repo, "commit", "-qam", "side edit")
    git(repo, "checkout", "-q", "main")
    (repo / path).write_text((repo / path).read_text().replace("Merge me.", "Main says that."))
    git(repo, "commit", "-qam", "main edit")
    merged = subprocess.run(
        ["git", "merge", "-q", "--no-edit", "side"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert merged.returncode != 0
    assert "<<<<<<<" in (repo / path).read_text()


def test_cli_apply_bad_json_line_is_usage_error(repo: Path, tmp_path: Path) -> None:
    ops = tmp_path / "ops.jsonl"
    ops.write_text('{"op":"write","title":"A","type":"semantic","body":"A."}\nnot json\n')
    out = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", "apply", "--file", str(ops), "--repo", str(repo)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    env = json.loads(out.stdout)
    assert env["code"] == "ERR_INVALID_OP" and "line 2" in env["error"]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"op":"write","title":"\xff","type":"semantic","body":"x"}\n')
    out = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", "apply", "--file", str(bad), "--repo", str(repo)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2 and json.loads(out.stdout)["code"] == "ERR_INVALID_OP"
