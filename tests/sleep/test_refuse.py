"""The human gate: a night's changes with stable ids, refused one by one at merge, and the
refusals standing for later nights until a person lifts them (issue 30 items 1-2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.contracts.errors import UnknownChangeError, WriteConflictError
from memhtml.sleep import engine
from memhtml.sleep.merge import merge
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.refusals import lift
from memhtml.sleep.review import review

from .engine_helpers import git, registry, worktree_digest
from .test_engine_merge import passing_fixture_gate

DRAIN = "Drain the checkout-api VIP before reverting a prod deploy."
KEYS = "Rotate the ledger signing keys every ninety days."


def _two_pairs(root: Path) -> dict[str, str]:
    """Two true-duplicate pairs, the agent reading and reinforcing members of both."""
    with memhtml.open(root, embedder="fake", now="2026-03-01T10:00:00Z") as c:
        a1 = c.write(title="Drain first", claim=DRAIN)["path"]
        b1 = c.write(title="Rotate keys", claim=KEYS)["path"]
    with memhtml.open(root, embedder="fake", now="2026-03-01T11:00:00Z") as c:
        a2 = c.write(title="Drain the VIP", claim=DRAIN.lower().replace(".", "!"))["path"]
        b2 = c.write(title="Key rotation", claim=KEYS.lower().replace(".", "!"))["path"]
        c.read(a1)
        c.read(b2)
        c.reinforce([a1, a2, b1, b2], "positive")
    return {"a1": a1, "a2": a2, "b1": b1, "b2": b2}


def _main(root: Path) -> tuple[str, dict[str, str]]:
    return git(root, "rev-parse", "HEAD"), worktree_digest(root)


def _folds(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in data["changes"] if c["kind"] == "fold"]


def test_refusing_one_of_two_folds_lands_the_other_and_the_refusal_stands(repo: Path) -> None:
    paths = _two_pairs(repo)
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        night = engine.run(c, date="2026-03-02", progress=False)
        assert night["failed_phases"] == []
        seen = review(c, night["run_id"])
        folds = _folds(seen)
        assert {f["summary"] for f in folds} == {
            f"fold {paths['a2']} into {paths['a1']}",
            f"fold {paths['b2']} into {paths['b1']}",
        }
        # stable: the same ids on a second look
        assert [f["id"] for f in _folds(review(c, night["run_id"]))] == [f["id"] for f in folds]
        for fold in folds:
            assert fold["reason"]["match"] in ("exact", "near") and "cosine" in fold["reason"]
            moved = [f for f in fold["files"] if f["status"] == "moved"]
            assert moved and moved[0]["path"].startswith("archive/")
            survivor = [f for f in fold["files"] if f["status"] == "modified"]
            # the diff is of the text a person reads, not the markup
            assert survivor and any(
                line.startswith("+link supersedes") for line in survivor[0]["diff"]
            )
            assert not any("<meta" in line for line in survivor[0]["diff"])
        refused = next(f for f in folds if paths["a2"] in f["summary"])
        kept = next(f for f in folds if paths["b2"] in f["summary"])

        out = merge(c, night["run_id"], fixture_gate=passing_fixture_gate, refuse=refused["id"])
        assert [r["id"] for r in out["refused"]] == [refused["id"]]
        assert out["rebuilt"] is True and out["gate"]["corpus"] is not None
        assert out["left_out"] == []
        # main holds the other fold, and not the refused one
        assert (repo / paths["a2"]).exists() and (repo / paths["a1"]).exists()
        assert not (repo / paths["b2"]).exists()
        assert (repo / f"archive/2026/{paths['b2']}").exists()
        assert (repo / f".memhtml/sleep/refused/{refused['id']}.json").exists()
        assert git(repo, "status", "--porcelain") == ""
        assert git(repo, "branch", "--list", "sleep/*") == ""
        after = review(c, night["run_id"])  # a merged run still reviews (from its record)
        assert [f["id"] for f in _folds(after)] == [kept["id"]]
        assert after["refused"] == [refused["id"]]
        assert [r["id"] for r in after["standing_refusals"]] == [refused["id"]]

    with memhtml.open(repo, embedder="fake", now="2026-03-03T03:00:00Z") as c:
        second = engine.run(c, date="2026-03-03", progress=False)
        seen = review(c, second["run_id"])
        assert _folds(seen) == []  # the refused fold is not proposed again
        held = [v for v in seen["vetoed"] if v["id"] == refused["id"]]
        assert held and "refused by a person" in held[0]["reason"]["why"]
        merge(c, second["run_id"], fixture_gate=passing_fixture_gate)

        lifted = lift(c, [refused["id"]])
        assert [r["id"] for r in lifted["lifted"]] == [refused["id"]]
        with pytest.raises(UnknownChangeError, match="lifted in"):
            lift(c, [refused["id"]])  # lifted twice: typed, nothing changes
        third = engine.run(c, date="2026-03-04", progress=False)
        # same pair, same contents: the same change, proposed again
        assert [f["id"] for f in _folds(review(c, third["run_id"]))] == [refused["id"]]


def test_bad_refusals_are_typed_and_leave_main_unchanged(repo: Path) -> None:
    _two_pairs(repo)
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        night = engine.run(c, date="2026-03-02", progress=False)
        ids = [f["id"] for f in _folds(review(c, night["run_id"]))]
        before = _main(repo)
        with pytest.raises(UnknownChangeError, match="not a change of sleep run"):
            merge(c, night["run_id"], fixture_gate=passing_fixture_gate, refuse="c0123456789ab")
        with pytest.raises(UnknownChangeError):
            merge(c, night["run_id"], fixture_gate=passing_fixture_gate, refuse="not-an-id")
        # a page served before the branch moved
        with pytest.raises(WriteConflictError, match="moved since"):
            merge(
                c,
                night["run_id"],
                fixture_gate=passing_fixture_gate,
                refuse=ids[0],
                expect_tip=night["base_sha"],
            )
        with pytest.raises(UnknownChangeError):
            lift(c, [ids[0]])  # never refused
        assert _main(repo) == before
        assert git(repo, "rev-parse", f"sleep/{night['run_id']}") == night["head_sha"]

        # another run's change: named as such
        other = engine.run(c, date="2026-03-05", phases="state-export", progress=False)
        with pytest.raises(UnknownChangeError, match=f"change of run {night['run_id']}"):
            merge(c, other["run_id"], fixture_gate=passing_fixture_gate, refuse=ids[0])
        assert _main(repo) == before


X = "areas/people/ana-ruiz.html"


def _create_person(ctx: SleepContext) -> PhaseOutcome:
    change = ctx.changes.propose("person", {"path": X}, summary=f"create {X}")
    if change is None:
        return PhaseOutcome()
    ctx.view.write(X, _memory("Ana Ruiz", "Ana Ruiz runs the payments team."))
    ctx.changes.done(change)
    return PhaseOutcome(counts={"created": 1}, touched=[Touched(X, "created")])


def _link_and_stamp(paths: dict[str, str]) -> Any:
    def body(ctx: SleepContext) -> PhaseOutcome:
        from memhtml.html import add_link, set_meta

        touched = []
        if ctx.view.exists(X):
            change = ctx.changes.propose(
                "link",
                {"from": paths["c"], "to": X},
                summary=f"link {paths['c']} to {X}",
                reads=(X,),
            )
            if change is not None:
                text = ctx.view.read(paths["c"]).decode()
                ctx.view.write(paths["c"], add_link(text, "relates_to", X).encode())
                ctx.changes.done(change)
                touched.append(Touched(paths["c"], "rewritten"))
        change = ctx.changes.propose("stamp", {"path": paths["d"]}, summary="stamp d")
        if change is not None:
            text = ctx.view.read(paths["d"]).decode()
            ctx.view.write(paths["d"], set_meta(text, "memhtml-confidence", "0.5").encode())
            ctx.changes.done(change)
            touched.append(Touched(paths["d"], "rewritten"))
        return PhaseOutcome(counts={"edited": len(touched)}, touched=touched)

    return body


def _memory(title: str, claim: str) -> bytes:
    from tests.sleep.phase_harness import memory_bytes

    return memory_bytes(title, claim)


def test_a_change_resting_on_a_refused_one_is_left_out_too_and_said_so(corpus: Any) -> None:
    from .engine_helpers import seed

    paths = seed(corpus)
    phases = registry(entity_resolution=_create_person, edge_typing=_link_and_stamp(paths))
    night = engine.run(corpus, date="2026-03-02", registry=phases, progress=False)
    seen = {c["kind"]: c for c in review(corpus, night["run_id"])["changes"]}
    person, link, stamp = seen["person"], seen["link"], seen["stamp"]
    assert link["depends_on"] == [person["id"]] and stamp["depends_on"] == []

    out = merge(
        corpus,
        night["run_id"],
        fixture_gate=passing_fixture_gate,
        refuse=[person["id"]],
        registry=phases,
    )
    assert [r["id"] for r in out["left_out"]] == [link["id"]]
    assert out["left_out"][0]["because"] == [person["id"]]
    assert "rests on" in out["left_out"][0]["why"]
    root = corpus.root
    assert not (root / X).exists()
    assert X not in (root / paths["c"]).read_text()
    assert 'content="0.5"' in (root / paths["d"]).read_text()  # the independent change landed
    assert git(root, "status", "--porcelain") == ""


def test_change_ids_hold_across_a_resume(repo: Path) -> None:
    from memhtml.sleep.phases.dedup_merge import PHASE as DEDUP

    paths = _two_pairs(repo)

    def boom(_ctx: SleepContext) -> PhaseOutcome:
        raise RuntimeError("the disk is a lie")

    def stamp_b1(ctx: SleepContext) -> PhaseOutcome:
        from memhtml.html import set_meta

        text = ctx.view.read(paths["b1"]).decode()
        ctx.view.write(paths["b1"], set_meta(text, "memhtml-confidence", "0.9").encode())
        return PhaseOutcome(counts={"stamped": 1}, touched=[Touched(paths["b1"], "rewritten")])

    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        first = engine.run(
            c,
            date="2026-03-02",
            registry={**registry(integrity=boom), "dedup-merge": DEDUP},
            progress=False,
        )
        assert first["failed_phases"] == ["integrity"]
        before = [x["id"] for x in review(c, first["run_id"])["changes"]]
        engine.resume(
            c,
            first["run_id"],
            registry={**registry(integrity=stamp_b1), "dedup-merge": DEDUP},
            progress=False,
        )
        after = review(c, first["run_id"])["changes"]
    assert [x["id"] for x in after][: len(before)] == before  # earlier changes keep their ids
    assert any(x["phase"] == "integrity" for x in after)  # and the resumed phase adds its own
