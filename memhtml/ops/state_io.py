"""The state plane's durable rows as committed sidecars: export, and import into a clone.

`.memhtml/state.db` is gitignored, so a clone starts with no salience. Two
committed sidecars carry what it holds:

* ``.memhtml/state/access.jsonl``: one JSON object per `state.access` row,
  sorted by path, in the original memhtml's format (SLEEP-FACTS 5.2) so
  either tool's import reads the other's export: keys `path`, `accessCount`,
  `reinforcementCount`, `outcomeScore` (4 decimals, never -0),
  `lastAccessedAt`, `lastReinforcedAt`, `updatedAt`, in that order, no
  spaces, a trailing newline.
* ``.memhtml/state/corroboration.jsonl`` (ours; the original keeps these rows
  in its database only): the corroboration counters sleep keeps across runs,
  `{"kind":"entity","entityType","alias","canonical","count","firstSeen",
  "lastSeen","promoted"}` and `{"kind":"edge","srcPath","rel","dstPath",
  "count","firstSeen","lastSeen"}`, sorted.

The bytes are a function of the rows, so an unchanged plane rewrites and
commits nothing. An empty plane never shrinks a committed sidecar to nothing
(the original's export did, losing the only copy a fresh clone has).

`state.session_reads` (which agent session read which memory) is not exported
on purpose: it joins memories to the trace plane, and transcripts and
`traces.db` are per machine, so in a clone the session ids would name nothing.

`state export` and sleep's `state-export` phase both call `plan_sidecars`.
`state import` merges a sidecar without ever lowering what is newer: counts
and last-seen times take the maximum, first-seen the minimum, and the
outcome EWMA and `updated_at` are taken from the sidecar only when its row is
newer (by `updatedAt`) than the plane's. So an import is idempotent, and an
old sidecar imported over a newer plane changes nothing. A committed sidecar
arrives by sync, so it is read as hostile input (memhtml.ops.sidecar_rows:
bounded sizes, no timestamp from the future, counts clamped) and only rows
naming a memory of the tree are imported; the others are skipped and
counted. Where we differ from the original's import: a malformed line is
refused by its number with nothing imported (ERR_INVALID_SIDECAR), where the
original skipped it and imported the rest.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import InvalidPathError, InvalidSidecarError, PathNotFoundError
from memhtml.contracts.paths import is_memory_path
from memhtml.ops.sidecar_rows import (
    MAX_SIDECAR_BYTES,
    AccessRow,
    CorroborationRows,
    access_rows,
    corroboration_rows,
    sidecar_lines,
    text_lines,
)
from memhtml.store.files import is_file_inside

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

ACCESS_SIDECAR: Final = ".memhtml/state/access.jsonl"
CORROBORATION_SIDECAR: Final = ".memhtml/state/corroboration.jsonl"
SIDECARS: Final = (ACCESS_SIDECAR, CORROBORATION_SIDECAR)
MAX_LISTED: Final = 20  # paths listed in a report (the count is always full)
MEMORY_PREFIXES: Final = ("projects/", "areas/", "resources/", "archive/")

_ACCESS_SQL: Final = (
    "SELECT path, access_count, reinforcement_count, outcome_score,"
    " last_accessed_at, last_reinforced_at, updated_at FROM state.access ORDER BY path"
)
_ENTITY_SQL: Final = (
    "SELECT entity_type, alias, canonical, count, first_seen, last_seen, promoted"
    " FROM state.entity_corroboration ORDER BY entity_type, alias, canonical"
)
_EDGE_SQL: Final = (
    "SELECT src_path, rel, dst_path, count, first_seen, last_seen"
    " FROM state.edge_corroboration ORDER BY src_path, rel, dst_path"
)


# -- rendering (pure) --------------------------------------------------------------------
def _score(value: Any) -> float:
    rounded = round(float(value or 0.0), 4)
    return 0.0 if rounded == 0 else rounded


def _score_json(value: Any) -> float | int:
    """The score as the original writes it: a whole number without a fraction (JSON `1`,
    not `1.0`), so both tools' exports of one plane are the same bytes."""
    score = _score(value)
    return int(score) if score.is_integer() else score


def _line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _join(lines: Sequence[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def render_access(rows: Sequence[Sequence[Any]]) -> bytes:
    """The access sidecar's bytes for `state.access` rows (path order is the caller's)."""
    return _join(
        [
            _line(
                {
                    "path": path,
                    "accessCount": int(access or 0),
                    "reinforcementCount": int(reinforced or 0),
                    "outcomeScore": _score_json(outcome),
                    "lastAccessedAt": last_access,
                    "lastReinforcedAt": last_reinforced,
                    "updatedAt": updated or "",
                }
            )
            for path, access, reinforced, outcome, last_access, last_reinforced, updated in rows
        ]
    )


def render_corroboration(
    entities: Sequence[Sequence[Any]], edges: Sequence[Sequence[Any]]
) -> bytes:
    """The corroboration sidecar's bytes: entity rows, then edge rows, each in key order."""
    lines = [
        _line(
            {
                "kind": "entity",
                "entityType": etype,
                "alias": alias,
                "canonical": canonical,
                "count": int(count),
                "firstSeen": first,
                "lastSeen": last,
                "promoted": bool(promoted),
            }
        )
        for etype, alias, canonical, count, first, last, promoted in entities
    ]
    lines += [
        _line(
            {
                "kind": "edge",
                "srcPath": src,
                "rel": rel,
                "dstPath": dst,
                "count": int(count),
                "firstSeen": first,
                "lastSeen": last,
            }
        )
        for src, rel, dst, count, first, last in edges
    ]
    return _join(lines)


# -- export ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SidecarPlan:
    """What one sidecar should become: `data` to write, or None to leave it as it is."""

    path: str
    rows: int
    data: bytes
    write: bool
    kept: bool  # the plane is empty and the committed sidecar is kept

    def to_data(self) -> dict[str, Any]:
        """The sidecar's line in a report."""
        return {
            "path": self.path,
            "rows": self.rows,
            "bytes": len(self.data),
            "written": self.write,
            "kept": self.kept,
        }


def _plan_one(path: str, rows: int, data: bytes, current: bytes | None) -> SidecarPlan:
    if rows == 0 and current:
        return SidecarPlan(path, 0, data, write=False, kept=True)
    unchanged = data == (current or b"") or (rows == 0 and current is None)
    return SidecarPlan(path, rows, data, write=not unchanged, kept=False)


def plan_sidecars(
    conn: sqlite3.Connection, current: Callable[[str], bytes | None]
) -> list[SidecarPlan]:
    """Both sidecars rendered from the attached state plane, each compared with `current`.

    Raises sqlite3.OperationalError when no state plane is attached.
    """
    access = conn.execute(_ACCESS_SQL).fetchall()
    entities = conn.execute(_ENTITY_SQL).fetchall()
    edges = conn.execute(_EDGE_SQL).fetchall()
    return [
        _plan_one(ACCESS_SIDECAR, len(access), render_access(access), current(ACCESS_SIDECAR)),
        _plan_one(
            CORROBORATION_SIDECAR,
            len(entities) + len(edges),
            render_corroboration(entities, edges),
            current(CORROBORATION_SIDECAR),
        ),
    ]


def export_state(corpus: Corpus) -> dict[str, Any]:
    """`state export`: write the sidecars whose bytes changed, as one commit (`state.export`)."""
    from memhtml.store.git import commit_subject

    holder: dict[str, list[SidecarPlan]] = {}

    def plan(planner: Any) -> dict[str, Any]:
        view = planner.view
        plans = plan_sidecars(corpus.conn, lambda p: view.read(p) if view.exists(p) else None)
        for item in plans:
            if item.write:
                view.write(item.path, item.data)
        holder["plans"] = plans
        return {}

    def message(_payload: dict[str, Any]) -> str:
        access = holder["plans"][0]
        subject = commit_subject(
            "state", f"export {access.rows} access rows to the committed sidecar"
        )
        return subject + "\n"

    done = corpus.plan_commit(plan, message, embed=False)
    plans = holder["plans"]
    access = plans[0]
    return {
        "path": access.path,
        "rows": access.rows,
        "bytes": len(access.data),
        "written": any(p.write for p in plans),
        "commit_sha": done["commit_sha"],
        "sidecars": [p.to_data() for p in plans],
        **({"warnings": done["warnings"]} if done.get("warnings") else {}),
    }


# -- import ------------------------------------------------------------------------------
def parse_access(
    text: str, source: str = ACCESS_SIDECAR, now: str | None = None
) -> list[AccessRow]:
    """Every row of an access sidecar, validated (memhtml.ops.sidecar_rows); the first bad
    line raises InvalidSidecarError. `now` bounds the timestamps (default: the clock)."""
    return access_rows(text_lines(text), source, now)


def parse_corroboration(
    text: str, source: str = CORROBORATION_SIDECAR, now: str | None = None
) -> CorroborationRows:
    """(entity rows, edge rows, clamped) of a corroboration sidecar, validated likewise."""
    return corroboration_rows(text_lines(text), source, now)


_UPSERT_ACCESS: Final = (
    "INSERT INTO state.access (path, access_count, reinforcement_count, outcome_score,"
    " last_accessed_at, last_reinforced_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (path) DO UPDATE SET"
    " access_count = max(access_count, excluded.access_count),"
    " reinforcement_count = max(reinforcement_count, excluded.reinforcement_count),"
    " last_accessed_at = CASE WHEN last_accessed_at IS NULL THEN excluded.last_accessed_at"
    "   WHEN excluded.last_accessed_at IS NULL THEN last_accessed_at"
    "   ELSE max(last_accessed_at, excluded.last_accessed_at) END,"
    " last_reinforced_at = CASE WHEN last_reinforced_at IS NULL THEN excluded.last_reinforced_at"
    "   WHEN excluded.last_reinforced_at IS NULL THEN last_reinforced_at"
    "   ELSE max(last_reinforced_at, excluded.last_reinforced_at) END,"
    " outcome_score = CASE WHEN excluded.updated_at > updated_at"
    "   THEN excluded.outcome_score ELSE outcome_score END,"
    " updated_at = max(updated_at, excluded.updated_at)"
)
_UPSERT_ENTITY: Final = (
    "INSERT INTO state.entity_corroboration"
    " (entity_type, alias, canonical, count, first_seen, last_seen, promoted)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (entity_type, alias, canonical) DO UPDATE SET"
    " count = max(count, excluded.count), first_seen = min(first_seen, excluded.first_seen),"
    " last_seen = max(last_seen, excluded.last_seen), promoted = max(promoted, excluded.promoted)"
)
_UPSERT_EDGE: Final = (
    "INSERT INTO state.edge_corroboration"
    " (src_path, rel, dst_path, count, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (src_path, rel, dst_path) DO UPDATE SET"
    " count = max(count, excluded.count), first_seen = min(first_seen, excluded.first_seen),"
    " last_seen = max(last_seen, excluded.last_seen)"
)


def _snapshot(
    conn: sqlite3.Connection, table: str, keys: str, wanted: Sequence[Sequence[Any]]
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The current rows of `table` whose key columns match `wanted` (to count what changed)."""
    if not wanted:
        return {}
    width = len(keys.split(","))
    columns = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(width))
    rows = conn.execute(
        f"SELECT * FROM state.{table} WHERE ({keys}) IN (SELECT {columns} FROM json_each(?))",
        (json.dumps([list(k) for k in wanted]),),
    ).fetchall()
    return {tuple(r[:width]): tuple(r) for r in rows}


def _sources(corpus: Corpus, file: str | None) -> list[tuple[str, Path, bool]]:
    """(name, file, is corroboration) of each sidecar to read, each checked for size.

    A committed sidecar must be a regular file: a symlink committed in its place
    (to `/dev/zero`, or a file outside the repository) is refused, not followed.
    """
    if file is not None:
        given = Path(file).expanduser()
        if not given.is_file():
            raise PathNotFoundError(
                f"no sidecar at {file}", suggestions=["memhtml help state import"]
            )
        found = [(str(file), given, given.name == Path(CORROBORATION_SIDECAR).name)]
    else:
        found = []
        for rel in SIDECARS:
            where = corpus.root / rel
            try:
                mode = where.lstat().st_mode
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(mode):
                raise InvalidSidecarError(
                    f"{rel} is not a regular file (a symlink or a special file); nothing was"
                    " imported",
                    suggestions=[f"git rm {rel}, then memhtml state export"],
                    details={"file": rel},
                )
            found.append((rel, where, rel == CORROBORATION_SIDECAR))
    for name, where, _ in found:
        size = where.stat().st_size
        if size > MAX_SIDECAR_BYTES:
            raise InvalidSidecarError(
                f"{name} is {size} bytes, over the {MAX_SIDECAR_BYTES // 2**20} MiB a sidecar"
                " may hold; nothing was imported",
                suggestions=["memhtml state export writes a sidecar of the plane's own rows"],
                details={"file": name, "bytes": size},
            )
    return found


class _Memories:
    """Which sidecar paths name a memory now: a valid memory path with a regular file (not a
    symlink) in the working tree, or a path history moved to one (`git mv`, archive)."""

    def __init__(self, corpus: Corpus) -> None:
        self._root = corpus.root
        self._git = corpus.git
        self._dirs: dict[str, str] = {}
        self._known: dict[str, str | None] = {}
        self._moves: dict[str, str] | None = None

    def _is_memory(self, path: str) -> bool:
        if not is_memory_path(path):
            return False
        try:
            inside = is_file_inside(self._root, path, self._dirs)
        except InvalidPathError:
            return False
        return inside and not os.path.islink(self._root / path)

    def current(self, path: str) -> str | None:
        """The memory path `path` names now, or None (the row is skipped)."""
        if path not in self._known:
            self._known[path] = self._resolve(path)
        return self._known[path]

    def _resolve(self, path: str) -> str | None:
        if self._is_memory(path):
            return path
        if not is_memory_path(path):
            return None  # never a memory: .memhtml/..., index.html, outside the buckets
        if self._moves is None:
            from memhtml.store.history import renames

            self._moves = renames(self._git, MEMORY_PREFIXES)
        seen = {path}
        while path in self._moves and self._moves[path] not in seen:
            path = self._moves[path]
            seen.add(path)
            if self._is_memory(path):
                return path
        return None


def import_state(corpus: Corpus, file: str | None = None) -> dict[str, Any]:
    """`state import [FILE]`: merge a sidecar (default: both committed ones) into the plane.

    Every line of every file is validated before anything is written
    (memhtml.ops.sidecar_rows: bounded sizes, no timestamp from the future,
    counts clamped), and the merge is one transaction. A row whose path is
    not a memory now is skipped and counted (one history moved is imported
    at the memory's new path). `restored` counts the rows the merge changed,
    so a second import of the same file restores 0.
    """
    from memhtml.index.db import write_transaction

    now = corpus.clock()
    access: list[AccessRow] = []
    entities: list[tuple[Any, ...]] = []
    edges: list[tuple[Any, ...]] = []
    clamped = 0
    sources = _sources(corpus, file)
    for name, where, corroboration in sources:
        with where.open("rb") as stream:
            lines = sidecar_lines(stream, name)
            if corroboration:
                rows = corroboration_rows(lines, name, now)
                entities += rows.entities
                edges += rows.edges
                clamped += rows.clamped
            else:
                more = access_rows(lines, name, now)
                access += more
                clamped += sum(r.clamped for r in more)
    memories = _Memories(corpus)
    skipped: list[str] = []
    followed: dict[str, str] = {}

    def keep(path: str) -> str | None:
        current = memories.current(path)
        if current is None:
            skipped.append(path)
        elif current != path:
            followed[path] = current
        return current

    given = len(access)
    access = [replace(r, path=current) for r in access if (current := keep(r.path)) is not None]
    kept_edges = []
    for src, rel, dst, *rest in edges:
        now_src, now_dst = keep(src), keep(dst)
        if now_src is not None and now_dst is not None and now_src != now_dst:
            kept_edges.append((now_src, rel, now_dst, *rest))
    edge_skipped = len(edges) - len(kept_edges)
    conn = corpus.conn
    access_keys = sorted({(r.path,) for r in access})
    entity_keys = sorted({tuple(e[:3]) for e in entities})
    edge_keys = sorted({tuple(e[:3]) for e in kept_edges})
    with write_transaction(conn):
        before = (
            _snapshot(conn, "access", "path", access_keys),
            _snapshot(conn, "entity_corroboration", "entity_type, alias, canonical", entity_keys),
            _snapshot(conn, "edge_corroboration", "src_path, rel, dst_path", edge_keys),
        )
        conn.executemany(
            _UPSERT_ACCESS,
            [
                (
                    r.path,
                    r.access_count,
                    r.reinforcement_count,
                    r.outcome_score,
                    r.last_accessed_at,
                    r.last_reinforced_at,
                    r.updated_at,
                )
                for r in access
            ],
        )
        conn.executemany(_UPSERT_ENTITY, entities)
        conn.executemany(_UPSERT_EDGE, kept_edges)
        after = (
            _snapshot(conn, "access", "path", access_keys),
            _snapshot(conn, "entity_corroboration", "entity_type, alias, canonical", entity_keys),
            _snapshot(conn, "edge_corroboration", "src_path, rel, dst_path", edge_keys),
        )
    changed = [
        sum(1 for k, row in a.items() if b.get(k) != row)
        for b, a in zip(before, after, strict=True)
    ]
    unique_skipped = list(dict.fromkeys(skipped))  # paths, in file order
    return {
        "path": sources[0][0] if sources else ACCESS_SIDECAR,
        "files": [name for name, _, _ in sources],
        "rows": len(access),
        "restored": changed[0],
        "corroboration_rows": len(entities) + len(kept_edges),
        "corroboration_restored": changed[1] + changed[2],
        "has_state": True,
        "skipped": given - len(access) + edge_skipped,
        "skipped_paths": unique_skipped[:MAX_LISTED],
        "followed": [{"from": k, "to": v} for k, v in list(followed.items())[:MAX_LISTED]],
        "clamped": clamped,
        "suggestions": (
            ["rows for paths that are not memories now were not imported (skipped_paths)"]
            if skipped
            else []
        ),
    }
