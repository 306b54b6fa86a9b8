"""arc-synthesis with a scripted model: one arc from cited evidence, its episodes linked to it."""

from __future__ import annotations

from typing import Any

from tests.sleep.model_script import blocks, caller
from tests.sleep.phase_harness import doc_of, links_of, run_phase

EPISODES = {
    "drain": "Draining the VIP first avoided dropped requests in the March deploy.",
    "skip": "Skipping the VIP drain dropped 3% of checkout requests in the April deploy.",
    "lunch": "The team lunch moved to Thursdays.",
}
CONTENT = {
    "title": "Drain before deploying",
    "claim": "IF a deploy touches a service behind a VIP, THEN drain the VIP first.",
    "paragraphs": ["Undrained deploys drop in-flight requests.", "Draining costs minutes."],
}


def planner(action: str = "create") -> Any:
    def plan(call: Any) -> dict[str, Any]:
        keys = [k for k, text in blocks(call.prompt, "evidence").items() if "VIP" in text]
        arcs = [line for line in call.prompt.splitlines() if line.startswith("- [a")]
        entry = {
            "arc_key": "a1" if action == "update" and arcs else "",
            "title": "Drain before deploying",
            "action": action,
            "rationale": "two deploys",
            "evidence_keys": keys,
        }
        return {"entries": [entry]}

    return plan


def test_a_planned_arc_is_written_and_its_episodes_link_to_it(fixed: Any) -> None:
    p = {k: fixed.write(title=k, claim=c, type="episodic")["path"] for k, c in EPISODES.items()}
    model = caller({"arc_plan": planner(), "arc_content": CONTENT})
    ran = run_phase(fixed, "arc-synthesis", llm=model)
    counts = ran.outcome.counts
    assert (counts["evidence"], counts["planned"], counts["created"], counts["linked"]) == (
        3,
        1,
        1,
        2,
    )
    arc = "areas/arcs/drain-before-deploying.html"
    doc = doc_of(fixed, arc)
    assert doc.ok and doc.memory_type == "arc" and doc.author == "agent:sleep"
    assert doc.gist == CONTENT["claim"]
    for name in ("drain", "skip"):
        assert ("part_of", arc) in links_of(fixed, p[name])
    assert links_of(fixed, p["lunch"]) == []
    assert [c.tool_name for c in model.model.calls] == ["arc_plan", "arc_content"]
    # the next night updates the same arc in place
    update = caller(
        {
            "arc_plan": planner("update"),
            "arc_content": {**CONTENT, "claim": "IF in doubt, THEN drain."},
        }
    )
    again = run_phase(fixed, "arc-synthesis", date="2026-03-03", llm=update)
    assert again.outcome.counts["updated"] == 1 and again.outcome.counts["created"] == 0
    updated = doc_of(fixed, arc)
    assert updated.gist == "IF in doubt, THEN drain." and updated.created == doc.created


def test_an_arc_without_evidence_or_with_a_bad_claim_is_refused(fixed: Any) -> None:
    for k, c in EPISODES.items():
        fixed.write(title=k, claim=c, type="episodic")

    def no_evidence(call: Any) -> dict[str, Any]:
        return {"entries": [{"title": "x", "action": "create", "evidence_keys": ["e99"]}]}

    ran = run_phase(
        fixed, "arc-synthesis", llm=caller({"arc_plan": no_evidence, "arc_content": CONTENT})
    )
    assert ran.outcome.counts["refused"] == 1 and ran.commit_sha is None
    two = {**CONTENT, "claim": "Drain first. Always."}
    ran = run_phase(fixed, "arc-synthesis", llm=caller({"arc_plan": planner(), "arc_content": two}))
    assert ran.outcome.counts["refused"] == 1 and ran.commit_sha is None
