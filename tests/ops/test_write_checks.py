"""The write-time checks through the real write door: conflicts, --strict, last-wins,
likely restatements."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import InvalidFlagError
from memhtml.ops.write_checks import WriteChecks

DETECT = WriteChecks(detect_conflicts=True)
LAST_WINS = WriteChecks(detect_conflicts=True, consolidate="last-wins")


def w(claim: str, title: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"title": title or claim[:40], "type": "semantic", "claim": claim, **extra}


def commits(repo: Path) -> int:
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--count", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def active(corpus: Any) -> list[str]:
    return sorted(f["gist"] for f in corpus.list(limit=100)["files"])


def test_a_conflict_names_both_paths_and_is_written_anyway(corpus: Any) -> None:
    old = corpus.write(title="pool", claim="The pool ceiling is 64.")["path"]
    out = corpus.apply(
        [
            w("The pool ceiling is 128."),
            w("The cache TTL is 15 minutes."),
            w("The cache TTL is 60 minutes."),
            w("The pool ceiling is 64 connections per node."),  # refines the stored 64
        ],
        checks=DETECT,
    )
    raised, ttl, ttl2, detail = out.results
    assert raised["conflict"] == {
        "path": old,
        "batch_index": None,
        "claim": "The pool ceiling is 64.",
        "frame_key": "the pool ceiling is",
    }
    assert ttl["conflict"] is None and ttl["conflicts"] == []
    # two ops of one batch: the later one points at the earlier op, by index and path
    assert ttl2["conflict"]["batch_index"] == 1 and ttl2["conflict"]["path"] == ttl["path"]
    assert [c["batch_index"] for c in detail["conflicts"]] == [0]  # 128, not the stored 64
    assert out.summary()["written"] == 4 and out.checks is not None
    assert out.checks["conflicts"] == 3
    assert len(active(corpus)) == 5  # nothing merged, nothing archived


def test_strict_holds_a_conflicting_write(corpus: Any, repo: Path) -> None:
    corpus.write(title="pool", claim="The pool ceiling is 64.")
    before = commits(repo)
    held = corpus.apply(
        [w("The queue limit is 10."), w("The pool ceiling is 128.")],
        checks=WriteChecks(strict=True),
    )
    assert held.aborted and held.commit_sha is None and commits(repo) == before
    err = held.error()
    assert err is not None and err.code == "ERR_CONFLICT"
    assert held.results[1]["details"]["conflict"]["path"] == "areas/inbox/pool.html"
    partial = corpus.apply(
        [w("The queue limit is 10."), w("The pool ceiling is 128.")],
        continue_on_error=True,
        checks=WriteChecks(strict=True),
    )
    assert partial.commit_sha is not None
    assert [r["ok"] for r in partial.results] == [True, False]
    assert partial.results[1]["code"] == "ERR_CONFLICT"
    assert active(corpus) == ["The pool ceiling is 64.", "The queue limit is 10."]


def test_flags_that_contradict_are_refused() -> None:
    with pytest.raises(InvalidFlagError):
        WriteChecks(strict=True, consolidate="last-wins")
    with pytest.raises(InvalidFlagError):
        WriteChecks(consolidate="first-wins")  # type: ignore[arg-type]


def test_last_wins_supersedes_the_older_value_in_the_same_commit(corpus: Any, repo: Path) -> None:
    old = corpus.write(title="capital", claim="The capital of Germany is Bonn.")["path"]
    corpus.write(title="citer", claim="Bonn facts are cited here.", type="semantic")
    corpus.link("areas/inbox/citer.html", "relates_to", old)
    before = commits(repo)
    out = corpus.apply(
        [w("The capital of Germany is Berlin.", "capital now", event_at="1990-10-03")],
        checks=LAST_WINS,
    )
    assert commits(repo) == before + 1
    result = out.results[0]
    archived = result["superseded_path"]
    assert archived.startswith("archive/") and archived.endswith(old)
    assert not (repo / old).exists()
    winner = (repo / result["path"]).read_text()
    loser = (repo / archived).read_text()
    assert f'rel="memhtml-supersedes" href="/{archived}"' in winner
    assert 'name="memhtml-valid-from" content="1990-10-03"' in winner
    assert f'name="memhtml-superseded-by" content="/{result["path"]}"' in loser
    assert 'name="memhtml-valid-until" content="1990-10-03"' in loser
    assert 'name="memhtml-status" content="archived"' in loser
    # the citation follows the fact to its current value
    assert f'href="/{result["path"]}"' in (repo / "areas/inbox/citer.html").read_text()
    assert active(corpus) == ["Bonn facts are cited here.", "The capital of Germany is Berlin."]
    assert corpus.resolve(old)["resolved"] == result["path"]


def test_last_wins_inside_one_batch(corpus: Any) -> None:
    out = corpus.apply(
        [
            w("The pool ceiling is 64.", "first"),
            w("The queue limit is 10.", "other"),
            w("The pool ceiling is 128.", "second"),
            w("The pool ceiling is 64 per node.", "refines nothing current"),
            w("The pool ceiling is 256.", "third"),
        ],
        checks=LAST_WINS,
    )
    first, other, second, refine, third = out.results
    assert first["path"] == "areas/inbox/third.html"  # the slot writes the last value
    assert second == {**second, "consolidated_into": 0, "changed": False}
    assert third["consolidated_into"] == 0
    # "64 per node" refined the slot's 64 when it came, so it was written apart;
    # the 256 that came after contradicts it too, and took its place as well
    assert refine["consolidated_into"] == 0
    assert out.summary()["consolidated"] == 3 and out.summary()["written"] == 2
    assert active(corpus) == ["The pool ceiling is 256.", "The queue limit is 10."]
    assert other["conflict"] is None


def test_a_loser_whose_slot_failed_is_skipped(corpus: Any) -> None:
    taken = corpus.write(title="taken", claim="Some other fact.")["path"]
    out = corpus.apply(
        [
            w("The queue limit is 10.", "fine"),
            w("The pool ceiling is 64.", "slot"),
            # its content takes the slot, and its path is taken: the slot fails
            w("The pool ceiling is 128.", "later", path=taken, strict_path=True),
        ],
        continue_on_error=True,
        checks=LAST_WINS,
    )
    fine, slot, later = out.results
    assert fine["ok"] and slot["code"] == "ERR_WRITE_CONFLICT"
    assert later == {"index": 2, "op": "write", "ok": False, "skipped": True}
    assert "The pool ceiling is 64." not in active(corpus)


def test_a_restatement_onto_the_occupant_itself_supersedes_nothing(corpus: Any) -> None:
    corpus.write(title="pool", claim="The pool ceiling is 64.")
    out = corpus.apply([w("The pool ceiling is 64.", "pool")], checks=LAST_WINS)
    assert out.results[0]["deduped"] and "superseded" not in out.results[0]
    assert active(corpus) == ["The pool ceiling is 64."]


def test_near_duplicates_are_reported_never_merged(corpus: Any) -> None:
    old = corpus.write(title="vip", claim="Drain the VIP before deploys.")["path"]
    pool = corpus.write(title="pool", claim="The pool ceiling is 64.")["path"]
    out = corpus.apply(
        [
            w("Before deploys, drain the VIP.", "vip again"),
            w("Do not drain the VIP before deploys.", "vip flipped"),
            w("The pool ceiling is 64 connections per node.", "pool detail"),
            w("The pool ceiling is 128.", "pool raised"),
        ],
        checks=WriteChecks(detect_near_duplicates=True),
    )
    again, flipped, detail, raised = out.results
    assert [n["path"] for n in again["near_duplicates"]] == [old]
    assert again["near_duplicates"][0]["cosine"] >= 0.92
    assert flipped["near_duplicates"] == []  # a negation is a flip, not a restatement
    assert [n["path"] for n in detail["near_duplicates"]] == [pool]
    assert pool not in [n["path"] for n in raised["near_duplicates"]]
    assert out.checks is not None and out.checks["near_duplicates"] == 2
    assert len(active(corpus)) == 6


def test_near_duplicates_without_vectors_judge_frames_only(repo: Path) -> None:
    import memhtml

    with memhtml.open(repo, embedder="off") as c:
        pool = c.write(title="pool", claim="The pool ceiling is 64.")["path"]
        out = c.apply(
            [
                w("The pool ceiling is 64 connections per node.", "pool detail"),
                w("Before the pool fills, page the DBA.", "page"),
            ],
            checks=WriteChecks(detect_near_duplicates=True),
        )
    assert [n["path"] for n in out.results[0]["near_duplicates"]] == [pool]
    assert out.checks is not None and "frames only" in " ".join(out.checks["warnings"])
