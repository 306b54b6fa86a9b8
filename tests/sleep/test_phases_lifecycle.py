"""confidence-decay, retention-triage and reprieve: what ages, what goes, what is spared."""

from __future__ import annotations

from typing import Any

from tests.sleep.phase_harness import (
    WRITTEN,
    commit_files,
    doc_of,
    links_of,
    memory_bytes,
    run_phase,
)


def accessed(corpus: Any, path: str, count: int, *, reinforced: int = 0, at: str = WRITTEN) -> None:
    """Usage rows as reads and `reinforce` leave them (the state plane, set up by hand)."""
    corpus.conn.execute(
        "INSERT INTO state.access (path, access_count, reinforcement_count, outcome_score,"
        " last_accessed_at, last_reinforced_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (path, count, reinforced, 0.5 if reinforced else 0.0, at, at if reinforced else None, at),
    )


def hub(corpus: Any) -> None:
    """A memory more memories cite than any other, so a single citation is no top PageRank."""
    center = corpus.write(title="hub", claim="The incident process.")["path"]
    for i in range(3):
        step = corpus.write(title=f"s{i}", claim=f"Step {i} of the process.")["path"]
        corpus.link(step, "part_of", center)


def test_decay_one_step_a_night(fixed: Any) -> None:
    plain = fixed.write(title="plain", claim="The cache warms in ten minutes.")["path"]
    sure = fixed.write(title="sure", claim="The queue drains hourly.", confidence=0.5)["path"]
    used = fixed.write(title="used", claim="The API is behind the gateway.")["path"]
    task = fixed.write(title="todo", claim="Rotate the keys.", type="task")["path"]
    accessed(fixed, used, 2, reinforced=1)
    hashes = {p: doc_of(fixed, p).content_hash for p in (plain, sure)}
    ran = run_phase(fixed, "confidence-decay", date="2026-03-02")
    counts = ran.outcome.counts
    assert (counts["decayed"], counts["reinforced"], counts["skipped_type"]) == (2, 1, 1)
    assert doc_of(fixed, plain).metas["memhtml-confidence"] == "0.92"
    assert doc_of(fixed, sure).metas["memhtml-confidence"] == "0.47"  # 0.02 + 0.9 x 0.5
    assert doc_of(fixed, plain).updated == "2026-03-02T00:00:00Z"
    assert all(doc_of(fixed, p).content_hash == h for p, h in hashes.items())
    assert "memhtml-confidence" not in doc_of(fixed, used).metas
    assert "memhtml-confidence" not in doc_of(fixed, task).metas
    # once a night: the same night again decays nothing
    again = run_phase(fixed, "confidence-decay", date="2026-03-02")
    assert again.commit_sha is None and again.outcome.counts["not_due"] == 2
    # the next night, one more step
    run_phase(fixed, "confidence-decay", date="2026-03-03")
    assert doc_of(fixed, plain).metas["memhtml-confidence"] == "0.848"


def test_retention_evicts_the_old_unused_and_keeps_the_rest(fixed: Any) -> None:
    old = "areas/notes/old-outage.html"
    old_used = "areas/procedures/old-runbook.html"
    person = "resources/people/ada.html"
    commit_files(
        fixed,
        {
            old: memory_bytes(
                "Old outage",
                "The 2024 outage came from a full disk.",
                created="2025-01-01",
                memory_type="episodic",
            ),
            old_used: memory_bytes(
                "Runbook",
                "Restart the worker after a full disk.",
                created="2025-01-01",
                memory_type="procedural",
            ),
            person: memory_bytes(
                "Ada", "Ada runs the rota.", created="2024-01-01", entities=(("person", "Ada"),)
            ),
        },
    )
    accessed(fixed, old_used, 10)
    fresh = fixed.write(title="fresh", claim="Yesterday's deploy went fine.", type="episodic")[
        "path"
    ]
    citing = fixed.write(title="citing", claim="See the old outage.")["path"]
    fixed.link(citing, "relates_to", old)
    hub(fixed)
    ran = run_phase(fixed, "retention-triage", date="2026-03-02")
    counts = ran.outcome.counts
    assert counts["evicted"] == 1 and counts["failed"] == 0
    archived = f"archive/2026/{old}"
    assert not (fixed.root / old).exists()
    doc = doc_of(fixed, archived)
    assert doc.ok and doc.status == "archived" and doc.archived_at == "2026-03-02T00:00:00Z"
    assert links_of(fixed, citing) == [("relates_to", archived)]  # the graph stays whole
    for kept in (old_used, person, fresh, citing):
        assert (fixed.root / kept).exists(), kept
    assert {(t.path, t.kind) for t in ran.outcome.touched} == {
        (archived, "archived"),
        (citing, "rewritten"),
    }
    assert fixed.health()["dangling"] == []
    assert run_phase(fixed, "retention-triage", date="2026-03-02").commit_sha is None


def test_a_young_memory_is_never_evicted(fixed: Any) -> None:
    young = fixed.write(title="y", claim="Run the backfill on db-03 first.", type="procedural")[
        "path"
    ]
    ran = run_phase(fixed, "retention-triage", date="2026-03-02")
    assert ran.outcome.counts["evict"] == 1 and ran.outcome.counts["in_grace"] == 1
    assert (fixed.root / young).exists() and ran.commit_sha is None


def test_evicting_linked_memories_in_one_night_leaves_no_dangling_link(
    fixed: Any, monkeypatch: Any
) -> None:
    from memhtml.sleep.phases import retention_triage

    monkeypatch.setattr(retention_triage, "EVICT_SHARE", 1.0)
    a, b = "areas/notes/a.html", "areas/notes/b.html"
    old = {"created": "2025-01-01", "memory_type": "episodic"}
    commit_files(
        fixed,
        {
            a: memory_bytes("a", "Fact a happened.", links=(("relates_to", b),), **old),  # type: ignore[arg-type]
            b: memory_bytes("b", "Fact b happened.", **old),  # type: ignore[arg-type]
        },
    )
    hub(fixed)
    accessed(fixed, "areas/notes/somewhere-else.html", 1)  # usage has been recorded
    ran = run_phase(fixed, "retention-triage", date="2026-03-02")
    assert ran.outcome.counts["evicted"] == 2
    # a was archived first, then b: the link a carries into the archive follows b there
    assert links_of(fixed, f"archive/2026/{a}") == [("relates_to", f"archive/2026/{b}")]
    assert fixed.health()["dangling"] == []


def test_reprieve_spares_the_used_and_expires_the_rest(fixed: Any) -> None:
    until = {"memhtml-valid-until": "2026-03-01", "memhtml-importance": "9"}
    spared, expired, spent = (
        "areas/notes/spared.html",
        "areas/notes/expired.html",
        "areas/notes/spent.html",
    )
    commit_files(
        fixed,
        {
            spared: memory_bytes("s", "The freeze lasts a week.", metas=until),
            expired: memory_bytes("e", "The promo code is SPRING.", metas=until),
            spent: memory_bytes(
                "x", "The banner shows on Fridays.", metas={**until, "memhtml-reprieves": "3"}
            ),
        },
    )
    accessed(fixed, spared, 3)
    accessed(fixed, spent, 3)
    valid = fixed.write(title="v", claim="Valid for a while.")["path"]
    ran = run_phase(fixed, "reprieve", date="2026-03-02")
    counts = ran.outcome.counts
    assert (counts["ttl_passed"], counts["reprieved"], counts["expired"]) == (3, 1, 2)
    doc = doc_of(fixed, spared)
    assert doc.valid_until == "2026-03-16T00:00:00Z" and doc.reprieves == 1
    assert not (fixed.root / expired).exists() and (fixed.root / f"archive/2026/{expired}").exists()
    assert not (fixed.root / spent).exists()  # three reprieves are the most it gets
    assert (fixed.root / valid).exists()
    assert run_phase(fixed, "reprieve", date="2026-03-02").commit_sha is None


def test_no_usage_recorded_means_no_eviction(fixed: Any) -> None:
    old = {"created": "2025-01-01", "memory_type": "episodic"}
    commit_files(fixed, {"areas/notes/a.html": memory_bytes("a", "Fact a happened.", **old)})  # type: ignore[arg-type]
    hub(fixed)
    ran = run_phase(fixed, "retention-triage", date="2026-03-02")
    assert ran.outcome.counts["evict"] >= 1 and ran.outcome.counts["evicted"] == 0
    assert "no usage" in (ran.outcome.detail or "") and ran.commit_sha is None


def test_a_night_evicts_a_bounded_share_and_the_next_run_nothing_more(fixed: Any) -> None:
    old = {"created": "2025-01-01", "memory_type": "episodic"}
    files = {
        f"areas/notes/n{i:02d}.html": memory_bytes(f"n{i}", f"Fact {i} happened.", **old)  # type: ignore[arg-type]
        for i in range(30)
    }
    commit_files(fixed, files)
    accessed(fixed, "areas/notes/n00.html", 10)
    ran = run_phase(fixed, "retention-triage", date="2026-03-02")
    counts = ran.outcome.counts
    # 5 % of the 30 scored memories, rounded up: 2 a week; the rest is reported as capped.
    assert counts["evicted"] == 2 and counts["capped"] == counts["evict"] - 2 - counts["in_grace"]
    again = run_phase(fixed, "retention-triage", date="2026-03-02")
    assert again.commit_sha is None and again.outcome.counts["evicted"] == 0
