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
old sidecar imported over a newer plane changes nothing. Where we differ from
the original's import: a malformed line is refused by its number with
nothing imported (ERR_INVALID_SIDECAR), where the original skipped it and
imported the rest; rows for paths that are no longer memories are imported
(nothing lost; `doctor --fix` moves them along renames) and listed.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.dates import is_strict_datetime
from memhtml.contracts.errors import InvalidSidecarError, PathNotFoundError
from memhtml.contracts.paths import is_memory_path

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

ACCESS_SIDECAR: Final = ".memhtml/state/access.jsonl"
CORROBORATION_SIDECAR: Final = ".memhtml/state/corroboration.jsonl"
SIDECARS: Final = (ACCESS_SIDECAR, CORROBORATION_SIDECAR)
MAX_LISTED: Final = 20  # paths listed in a report (the count is always full)

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
    }


# -- import ------------------------------------------------------------------------------
@dataclass(frozen=True)
class AccessRow:
    """One validated access sidecar row."""

    path: str
    access_count: int
    reinforcement_count: int
    outcome_score: float
    last_accessed_at: str | None
    last_reinforced_at: str | None
    updated_at: str


def _bad(source: str, n: int, why: str) -> InvalidSidecarError:
    return InvalidSidecarError(
        f"{source} line {n}: {why}; nothing was imported",
        suggestions=[f"fix or delete line {n}, then run memhtml state import again"],
        details={"file": source, "line": n},
    )


def _count(obj: Mapping[str, Any], key: str, fail: Callable[[str], Exception]) -> int:
    value = obj.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(f"{key} must be a whole number >= 0, not {value!r}")
    return value


def _instant(obj: Mapping[str, Any], key: str, fail: Callable[[str], Exception]) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not is_strict_datetime(value):
        raise fail(f"{key} must be null or a date / YYYY-MM-DDThh:mm:ssZ, not {value!r}")
    return value


def _objects(text: str, source: str) -> list[tuple[int, dict[str, Any]]]:
    out: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad(source, n, f"not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise _bad(source, n, "not a JSON object")
        out.append((n, obj))
    return out


def parse_access(text: str, source: str = ACCESS_SIDECAR) -> list[AccessRow]:
    """Every row of an access sidecar, validated; the first bad line raises InvalidSidecarError."""
    rows: list[AccessRow] = []
    for n, obj in _objects(text, source):

        def fail(why: str, n: int = n) -> InvalidSidecarError:
            return _bad(source, n, why)

        path = obj.get("path")
        if not isinstance(path, str) or not is_memory_path(path):
            raise fail(f"path must be a memory path, not {path!r}")
        score = obj.get("outcomeScore", 0)
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
            or not -1 <= score <= 1
        ):
            raise fail(f"outcomeScore must be a number in [-1, 1], not {score!r}")
        updated = obj.get("updatedAt", "")
        if not isinstance(updated, str) or (updated and not is_strict_datetime(updated)):
            raise fail(f"updatedAt must be a date / YYYY-MM-DDThh:mm:ssZ, not {updated!r}")
        rows.append(
            AccessRow(
                path=path,
                access_count=_count(obj, "accessCount", fail),
                reinforcement_count=_count(obj, "reinforcementCount", fail),
                outcome_score=_score(score),
                last_accessed_at=_instant(obj, "lastAccessedAt", fail),
                last_reinforced_at=_instant(obj, "lastReinforcedAt", fail),
                updated_at=updated,
            )
        )
    return rows


def parse_corroboration(
    text: str, source: str = CORROBORATION_SIDECAR
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(entity rows, edge rows) of a corroboration sidecar, validated like `parse_access`."""
    entities: list[tuple[Any, ...]] = []
    edges: list[tuple[Any, ...]] = []
    for n, obj in _objects(text, source):

        def fail(why: str, n: int = n) -> InvalidSidecarError:
            return _bad(source, n, why)

        kind = obj.get("kind")
        count = _count(obj, "count", fail)
        first, last = _instant(obj, "firstSeen", fail), _instant(obj, "lastSeen", fail)
        if count < 1 or first is None or last is None:
            raise fail("count must be >= 1 and firstSeen / lastSeen must be given")
        names = (
            ("entityType", "alias", "canonical")
            if kind == "entity"
            else ("srcPath", "rel", "dstPath")
        )
        if kind not in ("entity", "edge"):
            raise fail(f"kind must be entity or edge, not {kind!r}")
        keys = [obj.get(k) for k in names]
        if not all(isinstance(k, str) and k for k in keys):
            raise fail(f"{', '.join(names)} must be non-empty strings")
        if kind == "entity":
            entities.append((*keys, count, first, last, 1 if obj.get("promoted") else 0))
        else:
            edges.append((*keys, count, first, last))
    return entities, edges


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


def import_state(corpus: Corpus, file: str | None = None) -> dict[str, Any]:
    """`state import [FILE]`: merge a sidecar (default: both committed ones) into the plane.

    Every line of every file is validated before anything is written, and the
    merge is one transaction. `restored` counts the rows the merge changed, so
    a second import of the same file restores 0.
    """
    from memhtml.index.db import write_transaction

    if file is not None:
        given = Path(file).expanduser()
        if not given.is_file():
            raise PathNotFoundError(
                f"no sidecar at {file}", suggestions=["memhtml help state import"]
            )
        sources = [(str(file), given, given.name == Path(CORROBORATION_SIDECAR).name)]
    else:
        sources = [
            (rel, corpus.root / rel, rel == CORROBORATION_SIDECAR)
            for rel in SIDECARS
            if (corpus.root / rel).is_file()
        ]
    access: list[AccessRow] = []
    entities: list[tuple[Any, ...]] = []
    edges: list[tuple[Any, ...]] = []
    for name, where, corroboration in sources:
        try:
            text = where.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidSidecarError(f"{name} is not UTF-8 text; nothing was imported") from exc
        if corroboration:
            more_entities, more_edges = parse_corroboration(text, name)
            entities += more_entities
            edges += more_edges
        else:
            access += parse_access(text, name)
    conn = corpus.conn
    access_keys = sorted({(r.path,) for r in access})
    entity_keys = sorted({tuple(e[:3]) for e in entities})
    edge_keys = sorted({tuple(e[:3]) for e in edges})
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
        conn.executemany(_UPSERT_EDGE, edges)
        after = (
            _snapshot(conn, "access", "path", access_keys),
            _snapshot(conn, "entity_corroboration", "entity_type, alias, canonical", entity_keys),
            _snapshot(conn, "edge_corroboration", "src_path, rel, dst_path", edge_keys),
        )
    changed = [
        sum(1 for k, row in a.items() if b.get(k) != row)
        for b, a in zip(before, after, strict=True)
    ]
    # The tree, not the index, says which paths are memories now: an import must not
    # make a fresh clone's first index pass (which would then skip its vectors).
    missing = [k[0] for k in access_keys if not (corpus.root / k[0]).is_file()]
    return {
        "path": sources[0][0] if sources else ACCESS_SIDECAR,
        "files": [name for name, _, _ in sources],
        "rows": len(access),
        "restored": changed[0],
        "corroboration_rows": len(entities) + len(edges),
        "corroboration_restored": changed[1] + changed[2],
        "has_state": True,
        "missing_paths": len(missing),
        "missing": missing[:MAX_LISTED],
        "suggestions": ["memhtml doctor --fix moves usage rows along renames"] if missing else [],
    }
