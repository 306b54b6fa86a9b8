"""A whole night with a scripted model over the fixture corpus: reviewed, merged, gated."""

from __future__ import annotations

from pathlib import Path

import pytest

import memhtml
from memhtml.eval.fixture import generate_fixture, write_fixture
from memhtml.llm.fake import FakeModel
from memhtml.sleep import engine
from memhtml.sleep.merge import merge
from memhtml.sleep.review import review
from tests.sleep.model_script import caller
from tests.sleep.night_script import SCRIPT

MODEL_PHASES = ("edge-typing", "arc-synthesis", "compress", "task-detection")


@pytest.fixture
def fixture_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMHTML_NOW", "2026-03-02T10:00:00Z")
    monkeypatch.delenv("MEMHTML_LLM", raising=False)
    root = tmp_path / "fixture"
    write_fixture(generate_fixture(7, 120, "2026-01-01T00:00:00Z"), root)
    return root


def test_a_scripted_night_types_edges_writes_an_arc_folds_and_opens_tasks(
    fixture_root: Path,
) -> None:
    with memhtml.open(fixture_root, embedder="fake") as corpus:
        night = engine.run(corpus, progress=False, llm=caller(SCRIPT))
        phases = {p["phase"]: p for p in night["phases"]}
        assert night["failed_phases"] == []
        edge, arc, fold, tasks = (phases[n] for n in MODEL_PHASES)
        assert edge["counts"]["typed"] >= 2 and edge["counts"]["tasks_minted"] >= 1
        assert arc["counts"]["created"] == 1
        assert fold["counts"]["canonicals"] == 1 and fold["counts"]["archived"] == 2
        assert tasks["counts"]["tasks_minted"] >= 1
        minted = sum(p["counts"].get("tasks_minted", 0) for p in night["phases"])
        assert minted <= 10  # ten a night across every detector
        shas = [phases[n]["commit_sha"] for n in MODEL_PHASES]
        assert all(shas) and len(set(shas)) == 4  # each in its own phase commit
        assert night["llm_calls"] == sum(phases[n]["llm_calls"] for n in MODEL_PHASES)

        seen = review(corpus, night["run_id"])
        by_phase = {p["phase"]: p for p in seen["phases"]}
        kinds = {f["path"]: f["kind"] for f in seen["files"]}
        assert "areas/arcs/check-before-changing-prod.html" in kinds
        assert sum(1 for p, k in kinds.items() if k == "created" and "/tasks/det-" in p) == minted
        assert sum(1 for k in kinds.values() if k == "merged") >= 2
        for name in MODEL_PHASES:
            assert by_phase[name]["commit_sha"] == phases[name]["commit_sha"], name
            assert by_phase[name]["files"], name
        # the arc is one change: the arc file and its members' part_of links, with the
        # model's rationale and what it cited
        (arc_change,) = [c for c in seen["changes"] if c["kind"] == "arc"]
        assert "areas/arcs/check-before-changing-prod.html" in {
            f["path"] for f in arc_change["files"]
        }
        assert arc_change["reason"]["cited"] and arc_change["reason"]["claim"]
        # a typed edge is a change with the model's judgement as its reason
        edges = [c for c in seen["changes"] if c["kind"] == "edge"]
        assert len(edges) == edge["counts"]["typed"]
        assert all(c["reason"]["model"] and float(c["reason"]["confidence"]) >= 0.7 for c in edges)
        assert all(
            any(ln.startswith("+link ") for f in c["files"] for ln in f["diff"]) for c in edges
        )

        merged = merge(corpus, night["run_id"])
        assert merged["merged"] is True, merged.get("refusal")
        gate = merged["gate"]
        assert gate["fixture"]["passed"] and gate["corpus"]["passed"]
        assert gate["corpus"]["regression_count"] == 0
        arc_doc = corpus.read("areas/arcs/check-before-changing-prod.html")
        assert arc_doc["memory_type"] == "arc"


def test_the_call_budget_holds_across_the_night(fixture_root: Path) -> None:
    with memhtml.open(fixture_root, embedder="fake") as corpus:
        model = FakeModel(SCRIPT)
        night = engine.run(corpus, progress=False, llm=model, max_llm_calls=3)
        assert len(model.calls) == 3 and night["llm_calls"] == 3
        assert night["llm_capped"] >= 1
        phases = {p["phase"]: p for p in night["phases"]}
        # the budget ran out part-way: later model phases were skipped or capped, saying so
        later = [phases[n] for n in MODEL_PHASES if phases[n]["llm_calls"] == 0]
        assert later
        for p in later:
            assert p["status"] == "skipped" or p["llm_capped"] or "budget" in (p["detail"] or "")


def test_refusing_the_arc_of_a_model_night_replays_the_model_and_lands_the_rest(
    fixture_root: Path,
) -> None:
    with memhtml.open(fixture_root, embedder="fake") as corpus:
        model = caller(SCRIPT)
        night = engine.run(corpus, progress=False, llm=model)
        asked = model.answered
        seen = review(corpus, night["run_id"])
        (arc,) = [c for c in seen["changes"] if c["kind"] == "arc"]
        edges = {c["id"] for c in seen["changes"] if c["kind"] == "edge"}
        out = merge(corpus, night["run_id"], refuse=arc["id"])
        assert model.answered == asked  # the merge asked the model nothing
        assert out["replayed"]["asked"] > 0
        assert not (fixture_root / "areas/arcs/check-before-changing-prod.html").exists()
        landed = {c["id"] for c in review(corpus, night["run_id"])["changes"]}
        assert arc["id"] not in landed and edges <= landed  # the typed edges landed
        assert out["gate"]["corpus"]["passed"]
