"""Handlers for the trace group: thin calls into memhtml.ops.traces."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation


def index(inv: Invocation, root: str | None = None) -> dict[str, Any]:
    """One indexing pass over the transcripts."""
    from memhtml.ops.traces import index_traces

    return index_traces(inv.corpus(), root=root)


def search(
    inv: Invocation,
    query: str,
    *,
    session_id: str | None = None,
    since: str | None = None,
    cwd: str | None = None,
    limit: int = 20,
) -> dict[str, Any]:
    """BM25 over transcript turns."""
    from memhtml.ops.traces import search_traces

    return search_traces(
        inv.corpus(), query, session_id=session_id, since=since, cwd=cwd, limit=limit
    )


def links(
    inv: Invocation, session_id: str | None = None, path: str | None = None
) -> dict[str, Any]:
    """Sessions <-> memories."""
    from memhtml.ops.traces import trace_links

    return trace_links(inv.corpus(), session_id=session_id, path=path)


def human_index(data: dict[str, Any]) -> str:
    """A summary for a person at a terminal."""
    if not data["root_exists"]:
        return f"trace index: {data['trace_root']} does not exist; nothing indexed"
    reasons = ", ".join(f"{k} {v}" for k, v in data["rescan_reasons"].items())
    lines = [
        f"trace index {data['projects_dir']}: {data['files_seen']} file(s),"
        f" {data['skipped']} unchanged, {data['tailed']} appended to,"
        f" {data['rescanned']} read whole{f' ({reasons})' if reasons else ''},"
        f" {data['removed']} removed, {data['failed']} failed",
        f"  {data['bytes_read']:,} bytes read in {data['elapsed_ms']:.0f} ms;"
        f" {data['turns_written']:,} turns written; plane: {data['plane']['sessions']} sessions,"
        f" {data['plane']['turns']:,} turns",
    ]
    for reason, n in data["problem_counts"].items():
        lines.append(f"  skipped {n} x {reason}")
    return "\n".join(lines)


def human_search(data: dict[str, Any]) -> str:
    """One line per hit."""
    if not data.get("indexed"):
        return data.get("note", "no transcripts indexed")
    if data["degraded"]:
        return (
            "\n".join(
                f"{s['started_at'] or '-':20s} {s['session_id']}  {s['first_prompt'][:80]}"
                for s in data["sessions"]
            )
            or "no sessions"
        )
    return (
        "\n".join(
            f"{h['timestamp'] or '-':20s} {h['session_id'][:12]:12s} {h['role']:11s} {h['snippet']}"
            for h in data["hits"]
        )
        or "no hits"
    )
