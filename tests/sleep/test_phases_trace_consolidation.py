"""trace-consolidation with a scripted model over synthetic transcripts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memhtml.ops.traces import index_traces
from memhtml.sleep import engine
from memhtml.sleep.merge import merge
from memhtml.trace.synth import write_corpus
from tests.sleep.model_script import blocks, caller
from tests.sleep.phase_harness import doc_of, git

DATE = "2027-01-01"  # the transcripts are written now: the run is well after they settled


def lines_of(prompt: str) -> list[str]:
    (text,) = blocks(prompt, "session").values()
    return [ln.strip() for ln in text.splitlines() if len(ln.strip()) > 40]


def distil(call: Any) -> dict[str, Any]:
    said = lines_of(call.prompt)
    good = {
        "kind": "procedural",
        "claim": f"Sessions keep recording this: {said[0][:60]}.",
        "gist": "Seen twice in one session.",
        "entities": ["service:checkout-api"],
        "quotes": [said[0][:60], said[1][:60]],
    }
    made_up = {
        **good,
        "claim": "A claim with an invented quote.",
        "quotes": [said[0][:60], "nobody ever said this sentence in the transcript"],
    }
    promise = {
        "statement": "Rotate the staging keys.",
        "actor": "agent",
        "quote": said[2][:50],
        "confidence": 0.9,
    }
    return {"candidates": [good, made_up], "commitments": [promise]}


@pytest.fixture
def traced(fixed: Any, tmp_path: Path) -> Any:
    projects = tmp_path / "claude" / "projects"
    projects.mkdir(parents=True)
    write_corpus(projects, sessions=3, seed=3, session_bytes=12_000)
    index_traces(fixed, root=projects, progress=False)
    return fixed


def test_each_accepted_memory_is_its_own_commit_and_merged_sessions_are_not_reread(
    traced: Any,
) -> None:
    night = engine.run(
        traced, date=DATE, phases="trace-consolidation", llm=caller(distil), progress=False
    )
    phase = next(p for p in night["phases"] if p["phase"] == "trace-consolidation")
    counts = phase["counts"]
    assert (counts["batch"], counts["consolidated"]) == (3, 3)
    assert counts["refused"] == 3  # the invented quote, once per session
    assert counts["written"] + counts["duplicates"] == 3 and counts["written"] >= 1
    assert counts["tasks_minted"] == 1  # one commitment statement, one task
    log = git(traced.root, "log", "--format=%s", f"main..sleep/{night['run_id']}")
    distilled = [s for s in log.splitlines() if "distill" in s]
    assert len(distilled) == counts["written"]
    assert merge(traced, night["run_id"])["merged"] is True
    path = next(
        p
        for (p,) in traced.conn.execute(
            "SELECT path FROM files WHERE session_id IS NOT NULL AND memory_type <> 'task'"
        )
    )
    doc = doc_of(traced, path)
    assert doc.author == "agent:sleep" and "trace-consolidation" in doc.tags
    assert doc.session_id and "nobody ever said" not in doc.body_text
    # the memory keeps the session's own words that back it, verbatim
    assert doc.body_text.count(f"Said in session {doc.session_id}:") == 2
    again = engine.run(
        traced, date="2027-01-02", phases="trace-consolidation", llm=caller(distil), progress=False
    )
    phase = next(p for p in again["phases"] if p["phase"] == "trace-consolidation")
    assert phase["counts"]["batch"] == 0


def test_a_discarded_run_leaves_its_sessions_to_be_read_again(traced: Any) -> None:
    night = engine.run(
        traced, date=DATE, phases="trace-consolidation", llm=caller(distil), progress=False
    )
    git(traced.root, "branch", "-D", f"sleep/{night['run_id']}")
    again = engine.run(
        traced, date="2027-01-02", phases="trace-consolidation", llm=caller(distil), progress=False
    )
    phase = next(p for p in again["phases"] if p["phase"] == "trace-consolidation")
    assert phase["counts"]["batch"] == 3


def test_a_refused_session_is_not_watermarked(traced: Any) -> None:
    bad = caller(lambda _call: {"candidates": "no"})
    night = engine.run(traced, date=DATE, phases="trace-consolidation", llm=bad, progress=False)
    phase = next(p for p in night["phases"] if p["phase"] == "trace-consolidation")
    assert phase["counts"]["skipped"] == 3 and phase["counts"]["consolidated"] == 0
    assert re.search(r"refused", phase["detail"] or "")
