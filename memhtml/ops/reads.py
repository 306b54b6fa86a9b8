"""Reads: one memory, listings, the graph around a memory, what a path became, status."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import InvalidFlagError, InvalidPathError, PathNotFoundError
from memhtml.contracts.paths import is_archived_path, memory_path
from memhtml.contracts.vocab import MEMORY_RELS, PARA_BUCKETS, normalize_rel
from memhtml.html import MemoryDocument, parse_memory
from memhtml.store.files import resolve_inside

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

MAX_PAGE = 500


def load_document(corpus: Corpus, path: str) -> MemoryDocument:
    """Parse the working-tree file at a memory path (PathNotFoundError when absent)."""
    memory_path(path)
    target = resolve_inside(corpus.root, path)
    if not target.is_file():
        raise PathNotFoundError(
            f"no memory at {path}",
            suggestions=[f"memhtml resolve {path}", "memhtml list", "memhtml search <words>"],
        )
    return parse_memory(target.read_bytes())


def document_payload(path: str, doc: MemoryDocument) -> dict[str, Any]:
    """A parsed memory as envelope data."""
    return {
        "path": path,
        "title": doc.title,
        "gist": doc.gist,
        "memory_type": doc.memory_type,
        "status": doc.status,
        "archived": is_archived_path(path),
        "created": doc.created,
        "updated": doc.updated,
        "event_at": doc.event_at,
        "content_hash": doc.content_hash,
        "metas": dict(doc.metas),
        "entities": [f"{t}:{n}" for t, n in doc.entities],
        "tags": list(doc.tags),
        "aliases": list(doc.aliases),
        "links": [{"rel": link.rel, "path": link.path, "href": link.href} for link in doc.links],
        "facets": [{"name": f.name, "value": f.value, "numeric": f.numeric} for f in doc.facets],
        "citations": [{"text": c.text, "url": c.url} for c in doc.citations],
        "concepts": list(doc.concepts),
        "summaries": list(doc.summaries),
        "article_html": doc.article_html,
        "body_text": doc.body_text,
        "warnings": [{"code": w.code, "message": w.message} for w in doc.warnings],
        "violations": [{"code": v.code, "message": v.message} for v in doc.violations],
    }


def read_memory(corpus: Corpus, path: str, *, bump: bool = True) -> dict[str, Any]:
    """One memory in full; a read the caller chose counts as an access."""
    from memhtml.index.access import bump as bump_access

    doc = load_document(corpus, path)
    data = document_payload(path, doc)
    if bump:
        bumped, _ = bump_access(corpus.conn, [path], "neutral", corpus.clock())
        data["access_bumped"] = bool(bumped)
    return data


def existing_paths(corpus: Corpus, paths: Sequence[str]) -> list[str]:
    """The given paths that are valid memory paths with a file in the tree."""
    out = []
    for p in dict.fromkeys(paths):
        try:
            if resolve_inside(corpus.root, memory_path(p)).is_file():
                out.append(p)
        except Exception:  # an invalid path is simply not an existing one
            continue
    return out


def _check_cursor(cursor: str) -> None:
    try:
        memory_path(cursor)
    except InvalidPathError as exc:
        shown = cursor if len(cursor) <= 80 else cursor[:77] + "..."
        raise InvalidFlagError(
            f"cursor: {shown!r} is not a cursor a listing gave ({exc.message}); pass the"
            " previous page's next_cursor, or no cursor to start from the first page",
            suggestions=["memhtml list --limit 50 (then --cursor <next_cursor>)"],
            details={"field": "cursor"},
        ) from None


def list_memories(
    corpus: Corpus,
    *,
    type: Sequence[str] | str | None = None,
    workspace: str | None = None,
    tag: str | None = None,
    entity: str | None = None,
    para: str | None = None,
    include_archived: bool = False,
    limit: int = 50,
    cursor: str | None = None,
    facet: Sequence[str] | str | None = None,
) -> dict[str, Any]:
    """A page of memories in path order, keyset-paged by `cursor`.

    A cursor is the `next_cursor` of an earlier page: a memory path, which may
    have moved since (the page then starts after where it was). Anything else
    is refused (ERR_INVALID_FLAG) rather than read as "start over"; an empty
    cursor is no cursor.
    """
    from memhtml.index.scope import Scope

    if cursor:
        _check_cursor(cursor)

    if para is not None and para not in PARA_BUCKETS:
        raise InvalidFlagError(f"--para {para!r} is not one of {', '.join(PARA_BUCKETS)}")
    limit = max(1, min(int(limit), MAX_PAGE))
    corpus.catch_up()
    types = [type] if isinstance(type, str) else list(type or [])
    scope = Scope.build(
        types=types,
        workspace=workspace,
        tags=[tag] if tag else None,
        entity=entity,
        include_archived=include_archived or para == "archive",
        facets=[facet] if isinstance(facet, str) else facet,
    )
    where, params = scope.sql("f")
    if not types:  # listing is not ranking: tasks appear unless a type filter excludes them
        where = where.replace("f.memory_type <> 'task'", "1")
    if para:
        where += " AND f.para = :para"
        params["para"] = para
    if cursor:
        where += " AND f.path > :cursor"
        params["cursor"] = cursor
    params["lim"] = limit + 1
    rows = corpus.conn.execute(
        "SELECT f.path, f.title, f.gist, f.memory_type, f.workspace, f.para, f.archived,"
        " f.updated_at, f.event_at, f.task_status FROM files f"
        f" WHERE {where} ORDER BY f.path LIMIT :lim",
        params,
    ).fetchall()
    page = rows[:limit]
    files = [
        {
            "path": r[0],
            "title": r[1],
            "gist": r[2],
            "memory_type": r[3],
            "workspace": r[4],
            "para": r[5],
            "archived": bool(r[6]),
            "updated_at": r[7],
            "event_at": r[8],
            "task_status": r[9],
        }
        for r in page
    ]
    next_cursor = page[-1][0] if len(rows) > limit else None
    return {"files": files, "next_cursor": next_cursor, "count": len(files)}


def neighbors(
    corpus: Corpus, path: str, depth: int = 1, rels: Sequence[str] | None = None, limit: int = 100
) -> dict[str, Any]:
    """Memories within one or two hops along memory-class edges, either direction."""
    memory_path(path)
    corpus.catch_up()
    depth = 1 if depth < 1 else min(depth, 2)
    wanted = [r for r in (normalize_rel(x) for x in (rels or ())) if r in MEMORY_RELS]
    if rels and not wanted:
        raise InvalidFlagError(f"no memory relation among {list(rels)}")
    rel_sql = f" AND rel IN ({','.join('?' for _ in wanted)})" if wanted else ""
    conn = corpus.conn
    if not conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone():
        raise PathNotFoundError(
            f"no indexed memory at {path}", suggestions=[f"memhtml resolve {path}"]
        )
    found: dict[str, tuple[int, str, str]] = {}
    frontier = [(path, "out"), (path, "in")]
    for hop in range(1, depth + 1):
        nxt: list[tuple[str, str]] = []
        for node, direction in frontier:
            if direction == "out":
                q = "SELECT dst_path, rel FROM edges WHERE src_path = ? AND edge_class = 'memory'"
            else:
                q = "SELECT src_path, rel FROM edges WHERE dst_path = ? AND edge_class = 'memory'"
            for other, rel in conn.execute(q + rel_sql, (node, *wanted)):
                if other == path:
                    continue
                prev = found.get(other)
                if prev is None or (hop, rel) < (prev[0], prev[1]):
                    found[other] = (hop, rel, direction)
                nxt.append((other, direction))
        frontier = nxt
    nodes = []
    for other, (hop, rel, direction) in sorted(found.items(), key=lambda kv: (kv[1][0], kv[0])):
        row = conn.execute(
            "SELECT title, gist, memory_type, archived FROM files WHERE path = ?", (other,)
        ).fetchone()
        if row is None:
            continue  # dangling targets vanish
        nodes.append(
            {
                "path": other,
                "title": row[0],
                "gist": row[1],
                "memory_type": row[2],
                "archived": bool(row[3]),
                "hop": hop,
                "rel": rel,
                "direction": direction,
            }
        )
    nodes = nodes[: max(1, limit)]
    return {"center": path, "depth": depth, "nodes": nodes, "edges": len(nodes)}


def resolve(corpus: Corpus, path: str) -> dict[str, Any]:
    """What a path became: follow archive moves and supersedes links to the live memory."""
    from memhtml.index.identity import follow

    memory_path(path)
    corpus.catch_up()
    chain = follow(corpus.conn, path)
    if not chain.known:
        raise PathNotFoundError(f"no memory was ever indexed at {path}")
    if chain.live:
        return {"path": path, "resolved": chain.resolved, "live": True, "chain": chain.hops}
    resolved = chain.resolved if chain.resolved != path else None
    return {"path": path, "resolved": resolved, "live": False, "chain": chain.hops}


def entity_activity(
    corpus: Corpus,
    *,
    type: str | None = None,
    limit: int = 50,
    include_archived: bool = False,
) -> dict[str, Any]:
    """Entities with their three clocks: activity (recency's rule), world time, write time."""
    corpus.catch_up()
    limit = max(1, min(int(limit), MAX_PAGE))
    where = "1" if include_archived else "f.archived = 0"
    params: list[Any] = []
    if type:
        where += " AND lower(e.entity_type) = lower(?)"
        params.append(type)
    base = f"FROM file_entities e JOIN files f ON f.path = e.path WHERE {where}"
    total = corpus.conn.execute(
        f"SELECT count(*) FROM (SELECT 1 {base} GROUP BY e.entity_type, e.entity_name)", params
    ).fetchone()[0]
    rows = corpus.conn.execute(
        "SELECT e.entity_type, e.entity_name, count(*),"
        " max(coalesce(f.event_at, f.updated_at)), max(f.event_at), max(f.updated_at)"
        f" {base} GROUP BY e.entity_type, e.entity_name"
        " ORDER BY 4 DESC, e.entity_type, e.entity_name LIMIT ?",
        (*params, limit),
    ).fetchall()
    return {
        "entities": [
            {
                "entity_type": r[0],
                "entity_name": r[1],
                "memories": r[2],
                "last_activity_at": r[3],
                "last_event_at": r[4],
                "last_written_at": r[5],
            }
            for r in rows
        ],
        "entity_count": total,
    }
