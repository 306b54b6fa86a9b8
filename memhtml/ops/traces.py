"""The trace plane's operations: where transcripts are, index them, search them, link them.

The composition root for memhtml.trace: the transcript root comes from
`--root`, else $MEMHTML_TRACE_ROOT, else `~/.claude/projects` (the original's
`~/.claude` works too: memhtml.trace.discover looks under its `projects/`);
the plane lives beside the index, in `.memhtml/traces/traces.db`. A search
or a listing never creates the plane: before the first `trace index` it
answers an empty result that says so (`indexed: false`).
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.dates import normalize_datetime
from memhtml.contracts.errors import (
    AmbiguousIdError,
    InvalidFlagError,
    InvalidMemoryError,
    PathNotFoundError,
)

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus
    from memhtml.trace.store import TraceStore

DEFAULT_TRACE_ROOT: Final = "~/.claude/projects"
NOT_INDEXED: Final = "no transcripts indexed yet: run `memhtml trace index`"
# A session id may be given by a unique prefix of at least this many characters (git's
# shortest abbreviation); terminals show ids cut to 12 and AGENTS.md's examples use 8.
MIN_SESSION_PREFIX: Final = 4
CANDIDATES_SHOWN: Final = 10


class SessionNotFoundError(PathNotFoundError):
    """No session id is, or starts with, what was given (ERR_PATH_NOT_FOUND)."""


def trace_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """--root, else $MEMHTML_TRACE_ROOT, else ~/.claude/projects (absolute, user-expanded)."""
    raw = os.fspath(explicit) if explicit else os.environ.get("MEMHTML_TRACE_ROOT")
    return Path(raw or DEFAULT_TRACE_ROOT).expanduser().absolute()


def plane_path(corpus: Corpus) -> Path:
    """Where this memory root keeps its trace plane."""
    from memhtml.trace.store import plane_path as path_of

    return path_of(corpus.root)


def open_traces(corpus: Corpus) -> TraceStore | None:
    """The corpus's trace plane, or None when no `trace index` ever built it."""
    from memhtml.trace.store import TraceStore

    return TraceStore.open_existing(plane_path(corpus))


def index_traces(
    corpus: Corpus,
    *,
    root: str | os.PathLike[str] | None = None,
    progress: bool = True,
    lock_wait: float | None = None,
) -> dict[str, Any]:
    """`trace index`: one pass over the transcripts (memhtml.trace.scan); one pass at a time.

    `lock_wait`: seconds to wait for another pass (default MEMHTML_LOCK_TIMEOUT); a hook
    waits briefly, since a pass already running is indexing the same transcripts.
    """
    from memhtml.progress import Progress
    from memhtml.store.lock import RepoLock, lock_timeout
    from memhtml.trace.scan import scan
    from memhtml.trace.store import TraceStore

    where = trace_root(root)
    path = plane_path(corpus)
    path.parent.mkdir(parents=True, exist_ok=True)
    bar: list[Progress] = []

    def on_file(done: int, total: int) -> None:
        if not bar:
            bar.append(Progress(total, "trace index"))
        bar[0].advance()

    lock = RepoLock(path.parent / "scan.lock")
    wait = lock_timeout() if lock_wait is None else lock_wait
    with lock.hold(timeout=wait), TraceStore.open(path) as store:
        try:
            report = scan(store, where, now=corpus.clock(), on_file=on_file if progress else None)
        finally:
            if bar:
                bar[0].close()
        data = report.to_data()
        data["plane"] = {"path": str(store.path), **store.counts()}
    return data


def _since(since: str | None) -> str | None:
    if since is None:
        return None
    value = normalize_datetime(since)
    if value is None:
        raise InvalidFlagError(
            f"--since: {since!r} is not a date (YYYY-MM-DD) or an ISO instant",
            suggestions=["use 2026-07-28 or 2026-07-28T14:00:00Z"],
        )
    return value


def resolve_session_id(
    corpus: Corpus, given: str, store: TraceStore | None = None, *, field: str = "session_id"
) -> str:
    """The full session id `given` names: itself when some source knows it exactly, else
    the one id it is a prefix of (like git's short hashes).

    The sources are every session the memories were written under (archived ones
    included), the reads `read --session-id` recorded, and the indexed transcripts.
    A prefix of several ids is AmbiguousIdError listing them (capped); one of none is
    SessionNotFoundError; a prefix under MIN_SESSION_PREFIX characters that is not
    itself an id is InvalidFlagError. Only the doors that look sessions up take a
    prefix: a door that records one (write, correct, apply, read --session-id) keeps
    the id verbatim, since the session doing the work is usually not known anywhere yet.
    """
    from memhtml.trace.links import session_ids

    def known(prefix: str) -> set[str]:
        found = session_ids(corpus.conn, prefix)
        if store is not None:
            found |= store.session_ids(prefix)
        return found

    candidates = known(given) if given else set()
    if given in candidates:
        return given
    if len(given) < MIN_SESSION_PREFIX:
        raise InvalidFlagError(
            f"{field}: {given!r} is too short to stand for a session id; give its first"
            f" {MIN_SESSION_PREFIX} characters or more, or the whole id",
            details={"field": field},
            suggestions=['memhtml trace search "" lists recent sessions'],
        )
    if len(candidates) == 1:
        return candidates.pop()
    if not candidates:
        raise SessionNotFoundError(
            f"{field}: no session id is or starts with {given!r}: no memory was written or"
            " read under it, and no indexed transcript holds it",
            details={"field": field, "prefix": given},
            suggestions=[
                'memhtml trace search "" lists recent sessions',
                "memhtml trace index reads transcripts written since the last pass",
            ],
        )
    ordered = sorted(candidates)
    shown = ordered[:CANDIDATES_SHOWN]
    more = f" and {len(ordered) - len(shown)} more" if len(ordered) > len(shown) else ""
    raise AmbiguousIdError(
        f"{field}: {given!r} starts {len(ordered)} session ids: {', '.join(shown)}{more};"
        " give more characters",
        details={"field": field, "prefix": given, "candidates": shown, "count": len(ordered)},
        suggestions=[f"memhtml trace links --session-id {sid}" for sid in shown[:3]],
    )


def search_traces(
    corpus: Corpus,
    query: str,
    *,
    session_id: str | None = None,
    since: str | None = None,
    cwd: str | None = None,
    limit: int = 20,
) -> dict[str, Any]:
    """`trace search`: BM25 over turn text (memhtml.trace.search), filtered and capped."""
    from memhtml.index.retrieval import check_query

    check_query(query)
    since_value = _since(since)
    store = open_traces(corpus)
    base: dict[str, Any] = {"query": query, "session_id": session_id}
    if store is None:
        return {
            **base,
            "hits": [],
            "sessions": [],
            "match": None,
            "degraded": False,
            "indexed": False,
            "note": NOT_INDEXED,
        }
    from memhtml.trace.search import search_turns

    with store:
        if session_id:
            session_id = resolve_session_id(corpus, session_id, store)
        found = search_turns(
            store, query, session_id=session_id, since=since_value, cwd=cwd, limit=limit
        )
        scanned_at = store.meta().get("scanned_at")
    base["session_id"] = session_id  # the full id a prefix stood for
    return {**base, **found, "indexed": True, "indexed_at": scanned_at}


def trace_links(
    corpus: Corpus, *, session_id: str | None = None, path: str | None = None
) -> dict[str, Any]:
    """`trace links`: the memories a session wrote, corrected or read, or a memory's sessions."""
    from memhtml.contracts.paths import memory_path
    from memhtml.trace.links import memory_links

    path = path.lstrip("/") if path else None
    if not session_id and not path:
        raise InvalidMemoryError(
            "trace links needs a session_id or a path",
            suggestions=["memhtml trace links --session-id ID", "memhtml trace links --path P"],
        )
    if path:
        memory_path(path)
    corpus.catch_up()
    store = open_traces(corpus)
    sessions: list[dict[str, Any]] = []
    with store if store is not None else nullcontext():
        if session_id:
            session_id = resolve_session_id(corpus, session_id, store)
        links = memory_links(corpus.conn, session_id=session_id, path=path)
        if store is not None:
            from memhtml.trace.search import SESSION_FIELDS

            for sid in dict.fromkeys(link["session_id"] for link in links):
                row = store.session(sid)
                if row is not None:
                    sessions.append({k: row[k] for k in SESSION_FIELDS})
    known = {s["session_id"] for s in sessions}
    for link in links:
        link["session_indexed"] = link["session_id"] in known
    return {
        "links": links,
        "sessions": sessions,
        "session_id": session_id,
        "path": path,
        "indexed": store is not None,
    }


def record_read(corpus: Corpus, path: str, session_id: str) -> bool:
    """Link a read to the session that made it (`read --session-id`); True when new."""
    from memhtml.index.db import write_transaction
    from memhtml.trace.links import record_read as record

    with write_transaction(corpus.conn):
        return record(corpus.conn, path, session_id, corpus.clock())
