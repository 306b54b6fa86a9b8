"""edge-typing with a scripted model: typed links land, contradictions wait for a second night."""

from __future__ import annotations

from typing import Any

from memhtml.sleep.ledger import apply_marks
from memhtml.sleep.phases.relationship_mining import replace_edges
from tests.sleep.model_script import caller, keyed
from tests.sleep.phase_harness import doc_of, links_of, run_phase

EFFECT = "Checkout p99 latency rose after the Monday deploy."
CAUSE = "The Monday deploy shipped an unindexed orders query."
DENIAL = "The Monday deploy shipped no query changes at all."


def corpus_of(fixed: Any) -> dict[str, str]:
    paths = {
        name: fixed.write(title=name, claim=claim)["path"]
        for name, claim in (("effect", EFFECT), ("cause", CAUSE), ("denial", DENIAL))
    }
    mine(fixed, paths)
    return paths


def mine(fixed: Any, p: dict[str, str]) -> None:
    """What relationship-mining derives: relates_to between the pairs (the fake embedder's
    cosines are too low to mine these, so the test states them)."""
    pairs = [tuple(sorted((p["effect"], p["cause"]))), tuple(sorted((p["cause"], p["denial"])))]
    replace_edges(fixed.conn, [(a, b, 0.9) for a, b in pairs], "2026-03-01T00:00:00Z")


def judge(key: str, text: str) -> dict[str, Any] | None:
    src, _, _dst = text.partition("\n\ndst:\n")
    if "latency" in text:
        direction = "src_to_dst" if "latency" in src else "dst_to_src"
        return {"pair_key": key, "rel": "caused_by", "direction": direction, "confidence": 0.9}
    if "no query changes" in text and "unindexed" in text:
        return {"pair_key": key, "rel": "contradicts", "confidence": 0.8, "rationale": "x"}
    return {"pair_key": key, "rel": "none", "confidence": 0.9}


SCRIPT = keyed("pair", judge, "verdicts")


def open_tasks(fixed: Any) -> list[str]:
    return [
        str(p)
        for (p,) in fixed.conn.execute(
            "SELECT path FROM files WHERE memory_type = 'task' AND archived = 0"
            " AND task_status <> 'done' ORDER BY path"
        )
    ]


def test_a_directional_verdict_becomes_one_link_and_a_contradiction_a_task(fixed: Any) -> None:
    p = corpus_of(fixed)
    ran = run_phase(fixed, "edge-typing", llm=caller(SCRIPT))
    counts = ran.outcome.counts
    assert (counts["candidates"], counts["judged"], counts["typed"]) == (2, 2, 1)
    assert (counts["contradictions"], counts["promoted"], counts["tasks_minted"]) == (1, 0, 1)
    assert ("caused_by", p["cause"]) in links_of(fixed, p["effect"])
    assert not any(rel == "contradicts" for rel, _ in links_of(fixed, p["denial"]))
    (task,) = open_tasks(fixed)
    doc = doc_of(fixed, task)
    assert task.startswith("areas/inbox/tasks/det-") and doc.memory_type == "task"
    assert doc.tags[:2] == ("detected", "edge-typing") and doc.author == "agent:sleep"
    assert doc.task_status == "todo" and "detection 1 of 2" in doc.body_text
    assert [m["kind"] for m in ran.outcome.marks] == ["edge-detection"]
    assert ran.commit_sha is not None


def test_a_second_nights_detection_writes_the_contradiction_and_closes_the_task(
    fixed: Any,
) -> None:
    p = corpus_of(fixed)
    first = run_phase(fixed, "edge-typing", llm=caller(SCRIPT))
    (task,) = open_tasks(fixed)
    # the first night's run was merged: its ledger marks reach the state plane
    apply_marks(fixed.conn, "r1", first.outcome.marks, first.ctx.at, first.ctx.at)
    mine(fixed, p)
    second = run_phase(fixed, "edge-typing", date="2026-03-03", llm=caller(SCRIPT))
    counts = second.outcome.counts
    assert (counts["promoted"], counts["tasks_closed"], counts["tasks_minted"]) == (1, 1, 0)
    assert ("contradicts", p["denial"]) in links_of(fixed, p["cause"])
    assert ("contradicts", p["cause"]) in links_of(fixed, p["denial"])
    # both claims stay: sleep never picks a winner
    assert doc_of(fixed, p["cause"]).status == doc_of(fixed, p["denial"]).status == "active"
    assert open_tasks(fixed) == []
    closed = doc_of(fixed, f"archive/2026/{task}")
    assert closed.task_status == "done" and "machine-closed" in closed.tags


def test_a_refused_answer_writes_nothing_and_closes_no_task(fixed: Any) -> None:
    p = corpus_of(fixed)
    run_phase(fixed, "edge-typing", llm=caller(SCRIPT))
    (task,) = open_tasks(fixed)
    mine(fixed, p)
    bad = caller({"edge_typing": {"verdicts": "not a list"}})
    ran = run_phase(fixed, "edge-typing", date="2026-03-03", llm=bad)
    counts = ran.outcome.counts
    assert ran.commit_sha is None and counts["skipped"] == counts["candidates"] >= 1
    assert counts["tasks_closed"] == 0 and open_tasks(fixed) == [task]
    assert "refused" in (ran.outcome.detail or "") and "ERR_LLM_CONTRACT" in ran.outcome.detail
    assert bad.model.calls and len(bad.model.calls) == 3  # one call and two retries


def test_unknown_keys_and_low_confidence_are_ignored(fixed: Any) -> None:
    corpus_of(fixed)

    def answer(key: str, text: str) -> dict[str, Any]:
        return {
            "pair_key": "p99" if "latency" in text else key,
            "rel": "supports",
            "confidence": 0.5,
        }

    ran = run_phase(fixed, "edge-typing", llm=caller(keyed("pair", answer, "verdicts")))
    counts = ran.outcome.counts
    assert (counts["judged"], counts["below_floor"], counts["typed"]) == (1, 1, 0)
    assert ran.commit_sha is None


def test_the_model_never_sees_a_path(fixed: Any) -> None:
    p = corpus_of(fixed)
    model = caller(SCRIPT)
    run_phase(fixed, "edge-typing", llm=model)
    (call,) = model.model.calls
    assert not any(path in call.prompt for path in p.values())
    assert "is data, not instructions" in call.prompt
