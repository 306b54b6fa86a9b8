"""Sleep is idempotent: right after a merge, a second night commits nothing but its report.

This runs the real phases (whatever `memhtml.sleep.phases` holds), so a phase
that is not idempotent shows up here: the second night's commits must all be
the report's. Model phases are skipped (MEMHTML_LLM=off), so every phase that
runs is deterministic.
"""

from __future__ import annotations

from typing import Any

from memhtml.index.identity import follow
from memhtml.sleep import engine
from memhtml.sleep.merge import branch_gate, branch_index, merge
from memhtml.sleep.runs import find_run
from memhtml.store.branch import BlobReader, log_range

from .engine_helpers import git, seed
from .test_engine_merge import passing_fixture_gate


def _corpus(corpus: Any) -> None:
    seed(corpus)
    corpus.write(
        title="Deploy window",
        type="procedural",
        claim="Deploys to checkout-api happen on Tuesdays.",
        entity=["service:checkout-api", "person:Ana Ruiz"],
    )
    corpus.write(
        title="Deploy window again",
        type="procedural",
        claim="Deploys to checkout-api happen on Tuesdays.",
        body=["Ana said so in the retro."],
        entity=["service:Checkout-API"],
    )
    corpus.write(
        title="Not on Fridays",
        type="procedural",
        claim="Deploys to checkout-api never happen on Fridays.",
        entity=["person:Ana Ruiz"],
    )


def test_a_second_night_after_a_merge_commits_only_its_report(corpus: Any) -> None:
    _corpus(corpus)
    first = engine.run(corpus, date="2026-03-02", progress=False)
    assert first["failed_phases"] == [], first["phases"]
    assert len(first["commits"]) > 1  # the first night did curate something
    merge(corpus, first["run_id"], fixture_gate=passing_fixture_gate)
    second = engine.run(corpus, date="2026-03-02", progress=False)
    assert second["failed_phases"] == [], second["phases"]
    phases = [
        e.trailers.get("Memhtml-Phase", ["?"])[0]
        for e in log_range(corpus.git, f"{second['base_sha']}..{second['head_sha']}")
    ]
    assert phases == ["report"], {
        p["phase"]: p["counts"] for p in second["phases"] if p["commit_sha"]
    }


def test_a_night_over_the_merge_safety_probes_merges_no_twin(corpus: Any) -> None:
    """Must-not-merge pairs stay apart (the corpus gate at merge agrees); planted copies fold."""
    from memhtml.eval.merge_safety import merge_pairs

    claims = sorted({c for p in merge_pairs() for c in (p.left, p.right)})
    ops = [
        {"op": "write", "title": f"probe {i}", "type": "semantic", "claim": claim}
        for i, claim in enumerate(claims)
    ]
    outcome = corpus.apply(ops)
    assert outcome.failure is None
    # Plant a true duplicate by hand (the write doors would refuse it): same article, new path.
    first = outcome.results[0]["path"]
    copy = corpus.root / "areas/inbox/probe-copy.html"
    copy.write_bytes((corpus.root / first).read_bytes().replace(b"probe 0", b"probe copy"))
    git(corpus.root, "add", "-A")
    git(corpus.root, "commit", "-qm", "a hand-made copy")
    night = engine.run(corpus, date="2026-03-02", progress=False)
    assert night["failed_phases"] == [], night["phases"]
    record, tip = find_run(corpus.git, corpus.root, night["run_id"])
    with BlobReader(corpus.git) as reader:
        gate = branch_gate(corpus, record, tip, reader)
    merged = [r for r in gate.regressions if "merged" in r["why"] or "vanished" in r["why"]]
    assert gate.twins >= 50 and merged == []  # 0 false merges
    # Nor does any twin now lose to its opposite in search: `sleep merge` would accept the night
    # (dedup-merge leaves contested memories alone, so no folded wording finds the negation first).
    assert gate.passed, gate.regressions[:3]
    with BlobReader(corpus.git) as reader:
        index = branch_index(corpus, night["run_id"], tip, reader)
        try:
            ends = {follow(index.conn, p).resolved for p in (first, "areas/inbox/probe-copy.html")}
        finally:
            index.close()
    assert len(ends) == 1  # the planted copy folded into its original (or the reverse)
