"""The corpus gate: twins (a claim and its one-fact flip) found by frame, checked on the branch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memhtml.eval.merge_safety import merge_pairs
from memhtml.sleep.gate import find_twins, tokens, twin_kind


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        ("Drain the VIP before the deploy.", "Do not drain the VIP before the deploy.", "negation"),
        ("The api must verify the token.", "The api must not verify the token.", "negation"),
        ("Deploys can run on Fridays.", "Deploys can't run on Fridays.", "negation"),
        ("The api listens on port 8080.", "The api listens on port 9090.", "number"),
        ("Run the backfill on db-03 first.", "Run the backfill on db-04 first.", "number"),
        (
            "Write to the primary before the replica.",
            "Write to the replica before the primary.",
            "role",
        ),
        ("Enable the flag in staging.", "Disable the flag in staging.", "qualifier"),
        ("Ana reports to Ben on Mondays.", "Ben reports to Ana on Mondays.", "role"),
    ],
)
def test_twins_by_kind(a: str, b: str, kind: str) -> None:
    assert twin_kind(tokens(a), tokens(b)) == kind


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The api listens on port 8080.", "The api listens on port 8080."),  # the same claim
        ("Restart the worker after the deploy.", "Reboot the worker after the release."),
        ("The cache keeps entries for a day.", "The queue keeps messages for a week."),
        ("Before the deploy, drain the VIP.", "Drain the VIP before the deploy."),  # reordered
    ],
)
def test_not_twins(a: str, b: str) -> None:
    assert twin_kind(tokens(a), tokens(b)) is None


def test_every_must_not_merge_probe_is_a_twin_and_no_paraphrase_is() -> None:
    pairs = merge_pairs()
    missed = [
        p.pair_id
        for p in pairs
        if p.kind == "must_not_merge" and twin_kind(tokens(p.left), tokens(p.right)) is None
    ]
    paraphrases = [
        p.pair_id
        for p in pairs
        if p.kind == "paraphrase" and twin_kind(tokens(p.left), tokens(p.right)) is not None
    ]
    assert missed == [] and paraphrases == []


def test_twins_are_found_among_many_claims() -> None:
    names = [a + b for a in "abcdefghijklmnopq" for b in "rstuvwxyz"][:150]
    claims = [f"The {n} pool must drain at {i * 7 + 3} ms." for i, n in enumerate(names)]
    # One frame holding claims two facts apart (different service and number): no twins.
    claims += [f"The svc-{i} queue keeps {i + 1000} messages." for i in range(150)]
    members = [(f"areas/inbox/m{i:03d}.html", c) for i, c in enumerate(claims)]
    members.append(("areas/inbox/neg.html", f"The {names[99]} pool must not drain at 696 ms."))
    members.append(("areas/inbox/num.html", f"The {names[7]} pool must drain at 99 ms."))
    twins = find_twins(members)
    assert sorted((t.a, t.b, t.kind) for t in twins) == [
        ("areas/inbox/m007.html", "areas/inbox/num.html", "number"),
        ("areas/inbox/m099.html", "areas/inbox/neg.html", "negation"),
    ]


def test_a_night_over_the_fixture_corpus_merges_no_twin(tmp_path: Path, monkeypatch: Any) -> None:
    import memhtml
    from memhtml.eval.fixture import generate_fixture, write_fixture
    from memhtml.sleep import engine
    from memhtml.sleep.merge import branch_gate
    from memhtml.sleep.runs import find_run
    from memhtml.store.branch import BlobReader

    monkeypatch.setenv("MEMHTML_NOW", "2026-03-02T10:00:00Z")
    root = tmp_path / "fixture"
    write_fixture(generate_fixture(7, 120, "2026-01-01T00:00:00Z"), root)
    with memhtml.open(root, embedder="fake") as corpus:
        night = engine.run(corpus, progress=False)
        assert night["failed_phases"] == [], night["phases"]
        record, tip = find_run(corpus.git, corpus.root, night["run_id"])
        with BlobReader(corpus.git) as reader:
            gate = branch_gate(corpus, record, tip, reader)
    assert gate.twins > 10
    assert gate.passed, gate.regressions[:3]
