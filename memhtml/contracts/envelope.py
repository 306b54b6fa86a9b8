"""The envelope every CLI command prints and every MCP tool returns.

Top-level shape matches the original memhtml's (which has no ``ok``; we add
it) so an agent integrated with one works with the other:

    {"ok": true,  "apiVersion": "1", "type": "memory.hits", "data": {...}}
    {"ok": false, "apiVersion": "1", "error": "...", "code": "ERR_...", "suggestions": [...]}

Response types and error codes are append-only. The pydantic models of both
envelopes live in :mod:`memhtml.contracts.schemas` (imported lazily here), so
printing an envelope never pays pydantic's import on a cold CLI start.
"""

from __future__ import annotations

import json
from typing import Any, Final

API_VERSION: Final = "1"

# Append-only. The first block is the original's; ours follow.
RESPONSE_TYPES: Final[dict[str, str]] = {
    "cli.manifest": "the full command contract",
    "cli.help": "one command's entry",
    "repo.init": "a scaffolded or verified repository",
    "memory.written": "one memory written (or deduped onto an existing one)",
    "batch.applied": "per-op results of a JSONL batch, one commit",
    "memory.detail": "one memory: metas, links, article, warnings",
    "memory.hits": "ranked search hits",
    "recall.pack": "a disclosure pack under a character budget",
    "memory.corrected": "a replacement written and the original archived",
    "memory.linked": "an authored link added (or already present)",
    "memory.neighbors": "the graph around a memory",
    "memory.resolved": "what a path became",
    "memory.archived": "a memory moved into archive/",
    "memory.reinforced": "salience bumped by an explicit outcome",
    "memory.list": "a page of memories",
    "entity.activity": "entities with their three activity clocks",
    "task.written": "a task written",
    "task.updated": "a task's status changed",
    "task.list": "a page of tasks",
    "index.report": "an index rebuild, update, embed or status",
    "trace.report": "a transcript indexing pass",
    "trace.sessions": "transcript sessions matching a query",
    "trace.links": "links between sessions and memories",
    "sleep.report": "a curation run",
    "sleep.review": "a curation branch classified for review",
    "sleep.merge": "a curation branch merged (or refused)",
    "sleep.plan": "the phases a run would execute",
    "sync.report": "what a sync received, sent, merged and folded (or an aborted sync)",
    "remote.added": "a remote added to share the memory through",
    "status.health": "a one-screen summary of the store",
    "publish.report": "generated listings written",
    "doctor.report": "format and corpus health findings",
    "eval.discrimination": "the discrimination gate's result",
    "exec.report": "a code-mode script's result",
    "state.export": "the state plane written to its sidecar",
    "state.import": "the state plane restored from its sidecar",
    "agents.doc": "AGENTS.md generated or checked",
    "serve.exit": "a server that stopped",
    # ours
    "eval.fixture": "a fixture corpus generated",
    "eval.merge_safety": "a duplicate detector scored on must-not-merge pairs",
    "export.report": "index projections exported for analysis",
    "quickstart.report": "the bundled demo corpus indexed and searched",
    "index.migration": "an embedding-model migration started, resumed, reported or switched",
    "eval.embedders": "two embedders compared: gate, benchmark recall, throughput, latency",
    "integrations.report": "a coding agent wired (or unwired): each file and entry, per host",
    "integrations.list": "each coding agent's integration state, per scope",
    "integrations.doctor": "a coding agent's wiring checked end to end",
    "integrations.shell": "shell profile lines (and whether they were written)",
    "hook.output": "a hook's answer in the host's own protocol (printed raw, never enveloped)",
    "sleep.lift": "standing sleep refusals lifted",
}


def success(response_type: str, data: dict[str, Any]) -> dict[str, Any]:
    """A success envelope as a plain dict (validated only at the boundary tests)."""
    return {"ok": True, "apiVersion": API_VERSION, "type": response_type, "data": data}


def failure(
    code: str,
    message: str,
    suggestions: list[str] | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A failure envelope as a plain dict."""
    out: dict[str, Any] = {
        "ok": False,
        "apiVersion": API_VERSION,
        "error": message,
        "code": code,
        "suggestions": list(suggestions or []),
    }
    if details:
        out["details"] = details
    return out


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def render(payload: dict[str, Any], *, dense: bool = False) -> str:
    """Serialize an envelope: pretty by default, minified with nulls dropped when dense."""
    if dense:
        return json.dumps(_drop_nulls(payload), ensure_ascii=False, separators=(",", ":"))
    return json.dumps(payload, ensure_ascii=False, indent=2)


def __getattr__(name: str) -> Any:
    """The pydantic envelope models, loaded on first use."""
    if name in ("SuccessEnvelope", "ErrorEnvelope", "validate_envelope"):
        from memhtml.contracts import schemas

        return getattr(schemas, name)
    raise AttributeError(name)
