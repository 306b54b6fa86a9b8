"""integrity keeps a published corpus published; an unpublished one gets no site."""

from __future__ import annotations

from typing import Any

from memhtml.sleep import engine
from tests.sleep.phase_harness import run_phase


def test_a_published_corpus_is_republished_by_integrity(fixed: Any) -> None:
    fixed.write(title="Drain first", claim="Drain the VIP before a deploy.")
    fixed.publish()
    assert (fixed.root / "index.html").exists()
    later = fixed.write(title="Cache", claim="The cache keeps entries for a day.")["path"]
    ran = run_phase(fixed, "integrity")
    counts = ran.outcome.counts
    assert counts["regenerated"] >= 2 and ran.commit_sha is not None  # the folder listing, sitemap
    assert later.rsplit("/", 1)[-1] in (fixed.root / "sitemap.xml").read_text()
    again = run_phase(fixed, "integrity")
    assert again.outcome.counts["regenerated"] == 0 and again.commit_sha is None


def test_an_unpublished_corpus_gets_no_site(fixed: Any) -> None:
    fixed.write(title="Drain first", claim="Drain the VIP before a deploy.")
    ran = run_phase(fixed, "integrity")
    assert ran.outcome.counts["artifacts"] == 0 and not (fixed.root / "index.html").exists()


def test_a_night_republishes_on_its_branch_and_merges(fixed: Any, monkeypatch: Any) -> None:
    from memhtml.sleep.merge import merge

    monkeypatch.delenv("MEMHTML_LLM", raising=False)
    fixed.write(title="Drain first", claim="Drain the VIP before a deploy.")
    fixed.publish()
    fixed.write(title="Cache", claim="The cache keeps entries for a day.")
    night = engine.run(fixed, date="2026-03-02", progress=False)
    phase = next(p for p in night["phases"] if p["phase"] == "integrity")
    assert phase["status"] == "ok" and phase["counts"]["regenerated"] >= 1
    assert phase["commit_sha"] is not None
    assert merge(fixed, night["run_id"])["merged"] is True
    assert "cache.html" in (fixed.root / "sitemap.xml").read_text()
