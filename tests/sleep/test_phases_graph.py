"""relationship-mining, placement-triage, integrity and state-export."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memhtml.sleep.phases import relationship_mining
from memhtml.sleep.phases.state_export import SIDECAR
from tests.sleep.phase_harness import commit_files, git, links_of, run_phase


def derived(corpus: Any) -> list[tuple[str, str, str, int, str]]:
    return [
        tuple(r)
        for r in corpus.conn.execute(
            "SELECT src_path, dst_path, rel, derived, provenance FROM edges WHERE derived = 1"
            " ORDER BY src_path, dst_path"
        )
    ]


def test_mining_writes_derived_edges_to_the_index_only(fixed: Any) -> None:
    a = fixed.write(title="a", claim="The ledger-db replica lags during the nightly batch.")["path"]
    b = fixed.write(title="b", claim="The ledger-db replica lags during the nightly batch window.")[
        "path"
    ]
    fixed.write(title="c", claim="Tea is served at four.")
    head = git(fixed.root, "rev-parse", "HEAD")
    ran = run_phase(fixed, "relationship-mining")
    assert ran.commit_sha is None and ran.outcome.marks == []
    assert git(fixed.root, "rev-parse", "HEAD") == head  # nothing committed
    assert derived(fixed) == [(a, b, "relates_to", 1, "sleep")]
    assert ran.outcome.counts == {"candidates": 1, "mined": 1, "replaced": 0}
    # a second pass replaces the set with the same set
    assert run_phase(fixed, "relationship-mining").outcome.counts["replaced"] == 1
    assert derived(fixed) == [(a, b, "relates_to", 1, "sleep")]
    # what `sleep merge` calls on main's index reproduces the same edges
    fixed.conn.execute("DELETE FROM edges WHERE derived = 1")
    assert relationship_mining.derive(fixed.conn, at="2026-03-02T00:00:00Z") == 1
    assert derived(fixed) == [(a, b, "relates_to", 1, "sleep")]


def test_mining_dry_run_writes_nothing(fixed: Any) -> None:
    fixed.write(title="a", claim="The ledger-db replica lags during the nightly batch.")
    fixed.write(title="b", claim="The ledger-db replica lags during the nightly batch window.")
    ran = run_phase(fixed, "relationship-mining", dry_run=True)
    assert ran.outcome.counts["candidates"] == 1 and derived(fixed) == []


def test_placement_files_an_inbox_memory_next_to_its_neighbours(fixed: Any) -> None:
    ops = [
        fixed.write(
            title=f"db{i}",
            claim=f"The orders-db replica lags behind the primary by {n} seconds at night.",
            path=f"areas/databases/db{i}.html",
        )["path"]
        for i, n in enumerate(("five", "six", "seven"))
    ]
    assert all(p.startswith("areas/databases/") for p in ops)
    inbox = fixed.write(
        title="lag", claim="The orders-db replica lags behind the primary at night."
    )["path"]
    lonely = fixed.write(title="tea", claim="Tea is served at four.")["path"]
    citing = fixed.write(title="cite", claim="See the lag note.", tag=["notes"])["path"]
    fixed.link(citing, "relates_to", inbox)
    assert inbox.startswith("areas/inbox/")
    skipped = run_phase(fixed, "placement-triage")
    assert skipped.outcome.status == "skipped"  # --deep only
    ran = run_phase(fixed, "placement-triage", deep=True)
    moved = "areas/databases/lag.html"
    assert ran.outcome.counts["moved"] == 1 and ran.outcome.counts["undecided"] >= 1
    assert not (fixed.root / inbox).exists() and (fixed.root / moved).exists()
    assert (fixed.root / lonely).exists()
    assert links_of(fixed, citing) == [("relates_to", moved)]
    assert {(t.path, t.kind, t.from_path) for t in ran.outcome.touched} >= {(moved, "moved", inbox)}
    assert git(fixed.root, "log", "--follow", "--format=%s", "--", moved).count("\n") >= 1
    assert run_phase(fixed, "placement-triage", deep=True).commit_sha is None


def test_integrity_rewrites_along_the_chain_or_drops(fixed: Any) -> None:
    a = fixed.write(title="a", claim="Fact a.")["path"]
    b = fixed.write(title="b", claim="Fact b.")["path"]
    fixed.link(a, "relates_to", b)
    # by hand: b archived with git mv (nothing relinked), and a link to nothing
    (fixed.root / "archive/2025/areas/inbox").mkdir(parents=True)
    git(fixed.root, "mv", b, f"archive/2025/{b}")
    git(fixed.root, "commit", "-qm", "archived by hand")
    text = (fixed.root / a).read_text()
    (fixed.root / a).write_text(
        text.replace(
            "</head>", '<link rel="memhtml-supports" href="/areas/inbox/nope.html">\n</head>'
        )
    )
    git(fixed.root, "commit", "-qam", "bad link by hand")
    fixed.index.rebuild()
    assert {d["dst_path"] for d in fixed.health()["dangling"]} == {b, "areas/inbox/nope.html"}
    ran = run_phase(fixed, "integrity")
    counts = ran.outcome.counts
    assert (counts["dangling"], counts["rewritten"], counts["dropped"]) == (2, 1, 1)
    assert links_of(fixed, a) == [("relates_to", f"archive/2025/{b}")]
    assert fixed.health()["dangling"] == []
    assert run_phase(fixed, "integrity").commit_sha is None


def test_integrity_leaves_links_to_unparseable_files(fixed: Any) -> None:
    a = fixed.write(title="a", claim="Fact a.")["path"]
    broken = b"<!doctype html><html><head><title>x</title></head><body>no article"
    commit_files(fixed, {"areas/inbox/broken.html": broken})
    text = (fixed.root / a).read_text()
    commit_files(
        fixed,
        {
            a: text.replace(
                "</head>", '<link rel="memhtml-supports" href="/areas/inbox/broken.html">\n</head>'
            ).encode()
        },
    )
    ran = run_phase(fixed, "integrity")
    assert ran.outcome.counts["left"] == 1 and ran.outcome.counts["unparseable"] == 1
    assert ran.commit_sha is None
    assert (fixed.root / "areas/inbox/broken.html").read_bytes() == broken
    assert "unparseable areas/inbox/broken.html" in " ".join(ran.outcome.body)


def test_state_export_writes_sorted_diffable_rows(fixed: Any) -> None:
    a = fixed.write(title="a", claim="Fact a.")["path"]
    b = fixed.write(title="b", claim="Fact b.")["path"]
    empty = run_phase(fixed, "state-export")
    assert empty.commit_sha is None and not (fixed.root / SIDECAR).exists()
    fixed.read(b)
    fixed.reinforce([a], "negative")
    ran = run_phase(fixed, "state-export")
    assert ran.commit_sha is not None
    lines = (fixed.root / SIDECAR).read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["path"] for r in rows] == [a, b]
    assert list(rows[0]) == [
        "path",
        "accessCount",
        "reinforcementCount",
        "outcomeScore",
        "lastAccessedAt",
        "lastReinforcedAt",
        "updatedAt",
    ]
    assert rows[0]["outcomeScore"] == -1.0 and rows[1]["lastReinforcedAt"] is None
    assert lines[0].startswith('{"path":') and (fixed.root / SIDECAR).read_text().endswith("\n")
    assert run_phase(fixed, "state-export").commit_sha is None  # same rows, same bytes
    # an emptied state plane never wipes the committed sidecar
    fixed.conn.execute("DELETE FROM state.access")
    kept = run_phase(fixed, "state-export")
    assert kept.commit_sha is None and (fixed.root / SIDECAR).read_text().count("\n") == 2


@pytest.mark.parametrize(
    "name", ["edge-typing", "arc-synthesis", "compress", "trace-consolidation", "task-detection"]
)
def test_model_phases_skip_honestly_without_a_model(fixed: Any, name: str) -> None:
    from memhtml.sleep.phases import load

    phase = load(name)
    assert phase.needs_model and phase.commits
    ran = run_phase(fixed, name)
    assert ran.outcome.status == "skipped"
    assert ran.outcome.detail == "no model: MEMHTML_LLM=off"
    assert ran.commit_sha is None
