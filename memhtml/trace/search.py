"""`trace search`: BM25 over turn text, with the session, time, role and a snippet of each hit.

The query's words must all occur in a turn (FTS5's implicit AND, as the
original's session search); a "double-quoted" run of words must occur as a
phrase. Only when no turn holds every word does the search fall back to any
of them, ranked by BM25, and the answer says which it did (`match`). A query
with no word at all is not an error: it lists the most recent sessions and
says `degraded: true`, as the original does.
"""

from __future__ import annotations

import re
from typing import Any, Final

from memhtml.trace.store import TraceStore

_WORD: Final = re.compile(r"[^\W_]+", re.UNICODE)
_PHRASE: Final = re.compile(r'"([^"]*)"')
SNIPPET_TOKENS: Final = 24
MARK_OPEN: Final = "«"
MARK_CLOSE: Final = "»"
SESSION_FIELDS: Final = (
    "session_id",
    "slug",
    "cwd",
    "started_at",
    "ended_at",
    "prompt_count",
    "turn_count",
    "first_prompt",
    "ai_title",
    "file_path",
)


def match_terms(query: str) -> list[str]:
    """The query as FTS5 phrases: each quoted run one phrase, every other word its own."""
    terms: list[str] = []
    for phrase in _PHRASE.findall(query):
        words = _WORD.findall(phrase.lower())
        if words:
            terms.append('"' + " ".join(words) + '"')
    for word in _WORD.findall(_PHRASE.sub(" ", query).lower()):
        terms.append(f'"{word}"')
    return list(dict.fromkeys(terms))


def _session(row: dict[str, Any] | None, session_id: str) -> dict[str, Any]:
    if row is None:
        return {"session_id": session_id}
    return {k: row[k] for k in SESSION_FIELDS}


def search_turns(
    store: TraceStore,
    query: str,
    *,
    session_id: str | None = None,
    since: str | None = None,
    cwd: str | None = None,
    limit: int = 20,
) -> dict[str, Any]:
    """Turns matching `query`, best first, and the sessions they belong to (first hit first)."""
    terms = match_terms(query)
    if not terms:
        sessions = store.sessions(since=since, cwd=cwd, limit=None if session_id else limit)
        if session_id:
            sessions = [s for s in sessions if s["session_id"] == session_id]
        sessions.sort(key=lambda s: (s["started_at"] or "", s["session_id"]), reverse=True)
        return {
            "hits": [],
            "sessions": [_session(s, s["session_id"]) for s in sessions[:limit]],
            "match": None,
            "degraded": True,
        }
    match = "all"
    scope: dict[str, Any] = {"session_id": session_id, "since": since, "cwd": cwd, "limit": limit}
    hits = _query(store, " AND ".join(terms), **scope)
    if not hits and len(terms) > 1:
        match = "any"
        hits = _query(store, " OR ".join(terms), **scope)
    seen: dict[str, dict[str, Any]] = {}
    for hit in hits:
        sid = hit["session_id"]
        if sid not in seen:
            seen[sid] = _session(store.session(sid), sid)
    return {"hits": hits, "sessions": list(seen.values()), "match": match, "degraded": False}


def _query(
    store: TraceStore,
    expression: str,
    *,
    session_id: str | None,
    since: str | None,
    cwd: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    where = ["turns_fts MATCH ?"]
    params: list[Any] = [expression]
    if session_id:
        where.append("t.session_id = ?")
        params.append(session_id)
    if since:
        where.append("t.timestamp >= ?")
        params.append(since)
    if cwd:
        where.append("t.session_id IN (SELECT session_id FROM sessions WHERE cwd = ?)")
        params.append(cwd)
    params.append(limit)
    cur = store.conn.execute(
        "SELECT t.session_id, t.timestamp, t.role, t.kind, t.uuid, t.agent_id, t.sidechain,"
        f" snippet(turns_fts, 0, '{MARK_OPEN}', '{MARK_CLOSE}', '…', {SNIPPET_TOKENS}),"
        " bm25(turns_fts) AS score, t.file_path, t.line_no, t.byte_at"
        " FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
        f" WHERE {' AND '.join(where)}"
        " ORDER BY score, t.file_path, t.line_no LIMIT ?",
        params,
    )
    return [
        {
            "session_id": r[0],
            "timestamp": r[1],
            "role": r[2],
            "kind": r[3],
            "uuid": r[4],
            "agent_id": r[5],
            "sidechain": bool(r[6]),
            "snippet": r[7],
            "score": round(-float(r[8]), 4),  # bm25() is lower-is-better; ours higher-is-better
            "file_path": r[9],
            "line_no": r[10],
            "byte_at": r[11],
        }
        for r in cur
    ]
