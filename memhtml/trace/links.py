"""Sessions <-> memories: which memories a session wrote, corrected or read.

Two sources, neither of them the trace plane (a projection that may be
deleted at any time):

- **wrote / corrected** come from the memories themselves: the write doors
  stamp `memhtml-session`, `memhtml-prompt` and `memhtml-turn` in the head
  when provenance is given, and the index projects them to
  `files.session_id / prompt_id / turn_uuid`. A memory with a `supersedes`
  link is a correction's replacement (`corrected`); any other is `wrote`.
  `at` is the memory's `memhtml-created`. They follow a memory through
  `archive` (the archived copy keeps its head) and survive an index rebuild.
- **read** rows are recorded by `read --session-id` (MCP `memory_read` with
  `session_id`) in the state plane's `session_reads`: usage git cannot
  reproduce, kept beside the access counts.

`--path` matches the path as given, the copy an archive move made of it
(`files.origin_path`), and the corrections that superseded either, so a
memory's links are found from either spelling and include who corrected it.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

LINK_KINDS: Final = ("wrote", "read", "corrected", "reinforced")


def record_read(
    conn: sqlite3.Connection,
    path: str,
    session_id: str,
    at: str,
    *,
    prompt_id: str | None = None,
    turn_uuid: str | None = None,
) -> bool:
    """Remember that a session read a memory; False when that exact read was already recorded."""
    cur = conn.execute(
        "INSERT INTO state.session_reads (path, session_id, prompt_id, turn_uuid, at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (path, session_id, prompt_id, turn_uuid, at),
    )
    return cur.rowcount > 0


def memory_links(
    conn: sqlite3.Connection, *, session_id: str | None = None, path: str | None = None
) -> list[dict[str, Any]]:
    """Links of a session and/or a memory, newest first, then by path (the original's order)."""
    if not session_id and not path:
        raise ValueError("memory_links needs a session_id or a path")
    where = ["f.session_id IS NOT NULL"]
    params: list[Any] = []
    if session_id:
        where.append("f.session_id = ?")
        params.append(session_id)
    if path:
        # the memory, its archived copy, and the corrections that superseded either
        where.append(
            "(f.path = ? OR f.origin_path = ? OR f.path IN (SELECT e.src_path FROM edges e"
            " WHERE e.rel = 'supersedes' AND e.derived = 0 AND (e.dst_path = ?"
            " OR e.dst_path IN (SELECT o.path FROM files o WHERE o.origin_path = ?))))"
        )
        params += [path, path, path, path]
    written = conn.execute(
        "SELECT f.path, f.session_id, f.prompt_id, f.turn_uuid,"
        " CASE WHEN EXISTS (SELECT 1 FROM edges e WHERE e.src_path = f.path"
        "   AND e.rel = 'supersedes' AND e.derived = 0) THEN 'corrected' ELSE 'wrote' END,"
        " f.created_at, f.title, f.archived, f.origin_path"
        f" FROM files f WHERE {' AND '.join(where)}",
        params,
    ).fetchall()
    where, params = [], []
    if session_id:
        where.append("r.session_id = ?")
        params.append(session_id)
    if path:
        where.append("(r.path = ? OR r.path IN (SELECT origin_path FROM files WHERE path = ?))")
        params += [path, path]
    read = conn.execute(
        "SELECT r.path, r.session_id, r.prompt_id, r.turn_uuid, 'read', r.at, f.title,"
        " f.archived, f.origin_path"
        " FROM state.session_reads r LEFT JOIN files f ON f.path = r.path"
        f" WHERE {' AND '.join(where)}",
        params,
    ).fetchall()
    links = [
        {
            "path": r[0],
            "session_id": r[1],
            "prompt_id": r[2],
            "turn_uuid": r[3],
            "link_kind": r[4],
            "at": r[5],
            "title": r[6],
            "archived": bool(r[7]) if r[7] is not None else None,
            "origin_path": r[8] if r[8] and r[8] != r[0] else None,
        }
        for r in [*written, *read]
    ]
    links.sort(key=lambda link: (link["path"], link["link_kind"], link["session_id"]))
    links.sort(key=lambda link: link["at"] or "", reverse=True)
    return links


# The largest code point: a string starting with `prefix` sorts below prefix + this.
_LAST: Final = "\U0010ffff"


def session_ids(conn: sqlite3.Connection, prefix: str) -> set[str]:
    """The session ids the memories and the recorded reads know that start with `prefix`
    (the written ones include archived memories: a session's links outlive an archive)."""
    rows = conn.execute(
        "SELECT session_id FROM files WHERE session_id >= ?1 AND session_id < ?2"
        " UNION SELECT session_id FROM state.session_reads"
        " WHERE session_id >= ?1 AND session_id < ?2",
        (prefix, prefix + _LAST),
    )
    return {str(sid) for (sid,) in rows if str(sid).startswith(prefix)}
