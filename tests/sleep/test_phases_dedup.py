"""dedup-merge: the twins stay two, true duplicates fold into the older copy, links follow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.eval.merge_safety import MUST_NOT_MERGE, PARAPHRASE, merge_pairs
from tests.sleep.phase_harness import (
    WRITTEN,
    commit_files,
    doc_of,
    links_of,
    memory_bytes,
    run_phase,
)

CLAIM = "Drain the checkout-api VIP before reverting a prod deploy."


def merged(corpus: Any) -> dict[str, str]:
    """Merged-away path -> survivor, read from the archive copies' superseded-by."""
    return {
        str(origin): str(survivor)
        for origin, survivor in corpus.conn.execute(
            "SELECT origin_path, superseded_by FROM files"
            " WHERE archived = 1 AND superseded_by IS NOT NULL"
        )
    }


def embedder_available(name: str) -> bool:
    from memhtml.embed.registry import get_embedder

    try:
        return get_embedder(name) is not None
    except Exception:
        return False


@pytest.mark.parametrize("embedder", ["fake", "local"])
def test_no_must_not_merge_twin_is_merged(repo: Path, embedder: str) -> None:
    if not embedder_available(embedder):
        pytest.skip(f"the {embedder} embedder is not installed")
    corpus = memhtml.open(repo, embedder=embedder, now=WRITTEN)
    pairs = merge_pairs()
    claims = sorted({t for p in pairs for t in (p.left, p.right)})
    out = corpus.apply(
        [
            {"op": "write", "title": f"claim {i}", "type": "semantic", "claim": c}
            for i, c in enumerate(claims)
        ]
    )
    claim_of = {r["path"]: c for r, c in zip(out.results, claims, strict=True)}
    ran = run_phase(corpus, "dedup-merge")
    folded = {frozenset((claim_of[a], claim_of[b])) for a, b in merged(corpus).items()}
    twins = {frozenset((p.left, p.right)) for p in pairs if p.kind == MUST_NOT_MERGE}
    paraphrases = {frozenset((p.left, p.right)) for p in pairs if p.kind == PARAPHRASE}
    assert folded & twins == set()  # 0 false merges
    assert folded <= paraphrases  # every merge is a rewrite that keeps every fact
    # Every paraphrase here has a twin that says the opposite (the set is built that way), so
    # almost all are contested and stay two: folding one would let a query in its words find
    # the negation first. Measured: fake folds 1 of 54, local a few; both contest the rest.
    counts = ran.outcome.counts
    assert counts["contested"] >= (20 if embedder == "local" else 3)
    assert counts["merged"] == len(folded) and counts["vetoed"] >= len(twins) // 2
    assert any(line.startswith("veto ") for line in ran.outcome.body)
    # idempotent: the next run finds nothing more to fold
    assert run_phase(corpus, "dedup-merge").commit_sha is None
    corpus.close()


def test_fixture_corpus_probe_twins_stay_apart(tmp_path: Path) -> None:
    from memhtml.eval.fixture import generate_fixture, write_fixture

    plan = generate_fixture(size=200)
    write_fixture(plan, tmp_path / "fx")
    corpus = memhtml.open(tmp_path / "fx", embedder="fake")
    corpus.index.rebuild()
    ran = run_phase(corpus, "dedup-merge", date="2026-02-01")
    folded = merged(corpus)
    for probe in plan.probes:
        family = {probe.target, *probe.controls}
        assert not any(a in family and b in family for a, b in folded.items()), probe.probe_id
    assert ran.outcome.counts["candidates"] > 0 and ran.outcome.counts["vetoed"] > 0
    corpus.close()


def test_planted_duplicates_fold_into_the_older_copy(fixed: Any) -> None:
    keep = fixed.write(title="Drain first", claim=CLAIM)["path"]
    cited = fixed.write(title="Rollback policy", claim="Rollbacks need a ticket.")["path"]
    other = fixed.write(title="Deploy notes", claim="Deploys happen on weekdays.")["path"]
    later = memhtml.open(fixed.root, embedder="fake", now="2026-03-01T11:00:00Z")
    near = later.write(
        title="Drain the VIP", claim="drain the checkout-api VIP before reverting a prod deploy!"
    )["path"]
    later.link(near, "supports", cited)
    later.link(other, "relates_to", near)
    later.close()
    # an exact copy (same article, another title) written by hand, later still
    exact = "areas/ops/drain-copy.html"
    commit_files(fixed, {exact: memory_bytes("Copy", CLAIM, created="2026-03-01T12:00:00Z")})
    skipped = fixed.conn.execute("SELECT reason FROM skipped_files WHERE path = ?", (exact,))
    assert skipped.fetchone()[0] == f"duplicate content of {keep}"
    hash_before = doc_of(fixed, keep).content_hash

    ran = run_phase(fixed, "dedup-merge")
    counts = ran.outcome.counts
    assert (counts["exact"], counts["near"], counts["merged"]) == (1, 1, 2)
    assert merged(fixed) == {near: keep, exact: keep}
    assert not (fixed.root / near).exists() and not (fixed.root / exact).exists()
    near_archive, exact_archive = f"archive/2026/{near}", f"archive/2026/{exact}"
    archived = doc_of(fixed, near_archive)
    assert archived.ok and archived.status == "archived" and archived.superseded_by == keep
    survivor = doc_of(fixed, keep)
    assert survivor.ok and survivor.content_hash == hash_before  # head-only edits
    assert set(links_of(fixed, keep)) == {
        ("supersedes", near_archive),
        ("supersedes", exact_archive),
        ("supports", cited),  # the copy's own link came along
    }
    assert links_of(fixed, other) == [("relates_to", keep)]  # citations name the survivor
    assert fixed.health()["dangling"] == []
    kinds = {(t.path, t.kind) for t in ran.outcome.touched}
    assert {(near_archive, "merged"), (exact_archive, "merged"), (keep, "rewritten")} <= kinds
    assert (other, "rewritten") in kinds
    assert ran.outcome.subject == "fold 2 duplicates into older copies (1 exact, 1 near)"
    # idempotent
    again = run_phase(fixed, "dedup-merge")
    assert again.commit_sha is None and again.outcome.counts["merged"] == 0


def test_the_older_copy_survives_even_when_the_index_holds_the_other(fixed: Any) -> None:
    newer = fixed.write(title="Rotate keys", claim="Rotate the signing keys every 90 days.")["path"]
    older = "areas/aaa/rotate-keys.html"  # sorts first: the index holds this one
    commit_files(
        fixed,
        {
            older: memory_bytes(
                "Keys", "Rotate the signing keys every 90 days.", created="2026-02-01"
            )
        },
    )
    assert fixed.conn.execute("SELECT 1 FROM files WHERE path = ?", (older,)).fetchone()
    run_phase(fixed, "dedup-merge")
    assert merged(fixed) == {newer: older}


def test_dry_run_counts_and_stages_nothing(fixed: Any) -> None:
    fixed.write(title="a", claim=CLAIM)
    later = memhtml.open(fixed.root, embedder="fake", now="2026-03-01T11:00:00Z")
    later.write(title="b", claim="Drain the checkout-api VIP before reverting a prod deploy!")
    later.close()
    dry = run_phase(fixed, "dedup-merge", dry_run=True)
    assert dry.outcome.counts["merged"] == 1 and dry.commit_sha is None
    assert merged(fixed) == {}
    assert run_phase(fixed, "dedup-merge").outcome.counts["merged"] == 1


def test_unparseable_files_are_reported_and_never_rewritten(fixed: Any) -> None:
    fixed.write(title="a", claim=CLAIM)
    broken = b"<!doctype html><html><head><title>x</title></head><body><article><p>no claim"
    commit_files(fixed, {"areas/inbox/broken.html": broken})
    ran = run_phase(fixed, "dedup-merge")
    assert ran.outcome.counts["unparseable"] == 1
    assert (fixed.root / "areas/inbox/broken.html").read_bytes() == broken


def test_vetoed_twins_are_counted_by_guard(fixed: Any) -> None:
    fixed.write(title="a", claim="The ledger-db pgbouncer listens on port 6432.")
    fixed.write(title="b", claim="The ledger-db pgbouncer listens on port 7432.")
    fixed.write(title="c", claim=CLAIM)
    fixed.write(
        title="d", claim="Do not drain the checkout-api VIP before reverting a prod deploy."
    )
    ran = run_phase(fixed, "dedup-merge")
    counts = ran.outcome.counts
    assert counts["merged"] == 0 and counts["vetoed"] == 2
    assert counts["vetoed_number"] == 1 and counts["vetoed_negation"] == 1
    assert ran.commit_sha is None


def test_deep_lowers_the_band_for_memories_sharing_an_entity(fixed: Any) -> None:
    base = "The checkout-api cache warms up in about ten minutes after a deploy."
    same = "The checkout-api cache warms up in roughly ten minutes after a deploy."  # cos 0.913
    keep = fixed.write(title="a", claim=base, entity=["service:checkout-api"])["path"]
    later = memhtml.open(fixed.root, embedder="fake", now="2026-03-01T11:00:00Z")
    twin = later.write(title="b", claim=same, entity=["service:checkout-api"])["path"]
    # as close (0.881), as harmless, but it declares no entity: not in the lowered band
    loose = later.write(
        title="c", claim="The checkout-api cache warms in about ten minutes after a release."
    )["path"]
    later.close()
    night = run_phase(fixed, "dedup-merge", dry_run=True)
    assert night.outcome.counts["merged"] == 0  # 0.913 is under the 0.92 band
    deep = run_phase(fixed, "dedup-merge", deep=True)
    assert merged(fixed) == {twin: keep}
    assert (fixed.root / loose).exists()
    assert deep.outcome.counts["outside_entity_groups"] >= 1
