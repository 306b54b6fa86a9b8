"""A generic scripted model for a whole night: every model phase has something to do."""

from __future__ import annotations

from typing import Any

from tests.sleep.model_script import blocks


def _edge(call: Any) -> dict[str, Any]:
    keys = sorted(blocks(call.prompt, "pair"), key=lambda k: int(k[1:]))
    rels = ["supports", "contradicts", "example_of"]
    return {
        "verdicts": [
            {"pair_key": k, "rel": rels[i] if i < len(rels) else "none", "confidence": 0.9}
            for i, k in enumerate(keys)
        ]
    }


def _arc_plan(call: Any) -> dict[str, Any]:
    keys = sorted(blocks(call.prompt, "evidence"), key=lambda k: int(k[1:]))[:3]
    entry = {"title": "Check before changing prod", "action": "create", "evidence_keys": keys}
    return {"entries": [entry]}


ARC = {
    "title": "Check before changing prod",
    "claim": "IF a change reaches production, THEN check its preconditions first.",
    "paragraphs": ["Most incidents in these notes began with a skipped check."],
}


def _compress(call: Any) -> dict[str, Any]:
    members = blocks(call.prompt, "member")
    keys = sorted(members, key=lambda k: int(k[1:]))[:2]
    texts = [members[k].splitlines()[-1] for k in keys]
    return {
        "title": "Folded: " + " / ".join(t[:30] for t in texts),
        "claim": "These practices belong together.",
        "paragraphs": texts,
        "absorbed_keys": keys,
    }


def _tasks(call: Any) -> dict[str, Any]:
    members = blocks(call.prompt, "memory")
    key = sorted(members, key=lambda k: int(k[1:]))[0]
    sentence = members[key].splitlines()[-1]
    return {
        "findings": [
            {"member_key": key, "sentence": sentence, "kind": "followup", "confidence": 0.8}
        ]
    }


SCRIPT: dict[str, Any] = {
    "edge_typing": _edge,
    "arc_plan": _arc_plan,
    "arc_content": ARC,
    "compress_synthesis": _compress,
    "task_detection": _tasks,
}
