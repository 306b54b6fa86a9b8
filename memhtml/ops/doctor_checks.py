"""`doctor`'s checks beyond the files themselves: tasks, entities, vectors, and what `--fix`
would do.

The original memhtml's doctor reports these (REFERENCE.md; its thresholds are
kept): overdue tasks, tasks whose blocker can never close them, entity names
written without a type, the task inbox's depth (more than 10 is crowded), and
a vector plane too sparse for the vector arm. Three are advisory and never
make a store unhealthy, as in the original: an overdue task needs the work
done or the deadline moved, a stale blocker a decision about the plan, an
untyped entity a fix in the producer that wrote it. A crowded task inbox and
low vector coverage count against `healthy`.

`plan_links` and `plan_access_rows` compute exactly what `doctor --fix` would
do (memhtml.ops.repair uses the same `chain_destination`), so plain `doctor`
shows each dangling link's new target before anything is changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Final

from memhtml.ops.repair import DANGLING_SQL, ORPHAN_ACCESS_SQL, chain_destination

if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path

INBOX_WARN_DEPTH: Final = 20  # live memories (tasks aside) in areas/inbox/ (the original's)
INBOX_TASK_WARN_DEPTH: Final = 10  # open tasks in areas/inbox/tasks/ (the original's bound)
UNTYPED_ENTITY_SAMPLE: Final = 20  # names listed; untyped_entity_total counts them all
_ENTITY_META: Final = "memhtml-entity="


def overdue_tasks(conn: sqlite3.Connection, today: str) -> list[dict[str, Any]]:
    """Live tasks not done whose due day is before `today` (YYYY-MM-DD), soonest first."""
    rows = conn.execute(
        "SELECT path, title, task_status, due_at FROM files WHERE memory_type = 'task'"
        " AND archived = 0 AND due_at IS NOT NULL AND substr(due_at, 1, 10) < ?"
        " AND task_status <> 'done' ORDER BY due_at, path",
        (today[:10],),
    ).fetchall()
    return [{"path": p, "title": t, "task_status": s, "due_at": d} for p, t, s, d in rows]


def stale_blockers(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Open tasks blocked by a task that can never close them: archived, or gone."""
    rows = conn.execute(
        "SELECT t.path, e.src_path, CASE WHEN b.path IS NULL THEN 'missing' ELSE 'archived' END"
        " FROM files t JOIN edges e ON e.dst_path = t.path AND e.edge_class = 'task'"
        " AND e.rel = 'blocks' LEFT JOIN files b ON b.path = e.src_path"
        " WHERE t.memory_type = 'task' AND t.archived = 0 AND t.task_status <> 'done'"
        " AND (b.path IS NULL OR b.archived = 1) ORDER BY t.path, e.src_path"
    ).fetchall()
    return [{"path": p, "blocker_path": b, "blocker_state": s} for p, b, s in rows]


def inbox_task_depth(conn: sqlite3.Connection) -> int:
    """Live tasks waiting in areas/inbox/tasks/ for a project."""
    row = conn.execute(
        "SELECT count(*) FROM files WHERE archived = 0 AND memory_type = 'task'"
        " AND path LIKE 'areas/inbox/tasks/%'"
    ).fetchone()
    return int(row[0])


def untyped_entities(
    root: Path, conn: sqlite3.Connection, flagged: Collection[str]
) -> tuple[list[dict[str, Any]], int]:
    """Entity names written without a type (`memhtml-entity="checkout-api"`), most used first:
    a sample and the number of distinct names.

    Such a name is dropped when the file is read (a `dropped-meta` warning on the file), so
    `--entity service:checkout-api` never finds the memory. `flagged` are the live files
    whose warnings name a dropped entity; only their heads are read again. Names an index
    files under the type `unknown` (a corpus the original wrote) are counted too.
    """
    from memhtml.html import head_items
    from memhtml.html.validate import split_entity

    files: dict[str, set[str]] = {}
    for path in flagged:
        try:
            items = head_items((root / path).read_text(encoding="utf-8", errors="replace"))
        except Exception:  # unreadable now: its warning stands on its own
            continue
        for item in items:
            if item.kind == "meta" and item.key.startswith(_ENTITY_META):
                name = item.value.strip()
                if name and split_entity(item.value) is None:
                    files.setdefault(name, set()).add(path)
    for name, path in conn.execute(
        "SELECT e.entity_name, e.path FROM file_entities e JOIN files f ON f.path = e.path"
        " WHERE e.entity_type = 'unknown' AND f.archived = 0"
    ):
        files.setdefault(str(name), set()).add(str(path))
    ranked = sorted(files.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    sample = [{"entity_name": n, "files": len(p)} for n, p in ranked[:UNTYPED_ENTITY_SAMPLE]]
    return sample, len(ranked)


def plan_links(
    conn: sqlite3.Connection,
    destination: Callable[[str], str | None],
    dirty: Collection[str],
) -> list[dict[str, Any]]:
    """Each dangling authored link with what `--fix` would do to it: `rewrite_to` (the target
    it would point at), or null with `fix_leaves` saying why it would be left."""
    out: list[dict[str, Any]] = []
    for src, rel, dst in conn.execute(DANGLING_SQL).fetchall():
        target = destination(dst)
        entry: dict[str, Any] = {"src_path": src, "rel": rel, "dst_path": dst}
        if target is None or target == src:
            entry |= {"rewrite_to": None, "fix_leaves": "nothing in the index explains the target"}
        elif src in dirty:
            entry |= {"rewrite_to": target, "fix_leaves": "its source has uncommitted edits"}
        else:
            entry |= {"rewrite_to": target, "fix_leaves": None}
        out.append(entry)
    return out


def plan_access_rows(
    conn: sqlite3.Connection, first_move: Callable[[str], str | None]
) -> list[dict[str, Any]]:
    """Usage rows whose memory is gone, each with where `--fix` would move it (null: nowhere,
    the row stays)."""
    return [{"path": p, "move_to": first_move(p)} for (p,) in conn.execute(ORPHAN_ACCESS_SQL)]


def destinations(
    corpus: Any,
) -> tuple[Callable[[str], str | None], Callable[[str], str | None]]:
    """(where a dangling link should point now, where a memory's usage row should move):
    `doctor --fix`'s rules (memhtml.ops.repair), history's renames read only when needed."""
    from memhtml.ops.repair import PREFIXES
    from memhtml.store.history import renames

    moves: dict[str, str] | None = None

    def history() -> dict[str, str]:
        nonlocal moves
        if moves is None:
            moves = renames(corpus.git, PREFIXES)
        return moves

    conn = corpus.conn
    return (
        lambda path: chain_destination(conn, path, moves=history),
        lambda path: chain_destination(conn, path, first_hop=True, moves=history),
    )


def fix_plan(report: dict[str, Any]) -> list[str]:
    """What `doctor --fix` would do for this report, in plain sentences (empty: nothing)."""
    plan: list[str] = []
    if report.get("interrupted_batch"):
        n = len(report["interrupted_batch"].get("paths") or [])
        plan.append(f"settle the batch a killed command left ({n} file(s))")
    if report.get("stale_git_lock"):
        plan.append(f"remove the stale git lock {report['stale_git_lock']}")
    links = [d for d in report.get("dangling", []) if d["rewrite_to"] and not d["fix_leaves"]]
    if links:
        plan.append(f"rewrite {len(links)} dangling link(s) to what their targets became")
    rows = [r for r in report.get("orphan_access_fix", []) if r["move_to"]]
    if rows:
        plan.append(f"move {len(rows)} usage row(s) to their memory's new path")
    cut = [
        r["run_id"] for r in report.get("sleep_runs") or [] if r["status"] == "merge-interrupted"
    ]
    if cut:
        plan.append(f"finish or undo the sleep merge cut short ({', '.join(cut)})")
    return plan


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def findings(report: dict[str, Any]) -> list[str]:
    """What makes a corpus report not healthy, one plain phrase each (empty: healthy)."""
    out: list[str] = []
    if report.get("unseen"):
        out.append(_n(len(report["unseen"]), "memory-looking file") + " the index never reads")
    if report.get("unparseable"):
        n = len(report["unparseable"])
        out.append(
            _n(n, "file") + (" that breaks" if n == 1 else " that break") + " the memory format"
        )
    if report.get("format_warnings"):
        out.append(_n(report["format_warnings"], "file") + " with format warnings")
    if report.get("dangling"):
        out.append(_n(len(report["dangling"]), "dangling link"))
    if report.get("orphan_access_rows"):
        out.append(_n(len(report["orphan_access_rows"]), "usage row") + " of memories gone")
    if report.get("stale_git_lock"):
        out.append(f"a stale git lock ({report['stale_git_lock']})")
    if report.get("interrupted_batch"):
        out.append("a batch a killed command left half done")
    if report.get("path_reuse"):
        out.append(_n(len(report["path_reuse"]), "path") + " reused by another memory")
    if report.get("committed_planes"):
        out.append("machine-local databases committed to git")
    if not report.get("index_fresh", True):
        out.append("the index is behind the tree")
    if report.get("inbox_crowded"):
        out.append(
            f"{report['inbox_depth']} memories wait in the inbox (more than {INBOX_WARN_DEPTH})"
        )
    if report.get("inbox_tasks_crowded"):
        out.append(
            f"{report['inbox_task_depth']} tasks wait in the task inbox"
            f" (more than {INBOX_TASK_WARN_DEPTH})"
        )
    if report.get("vector_coverage_low"):
        out.append(
            f"only {report['vector_coverage']:.0%} of chunks have vectors"
            f" (floor {report['vector_coverage_floor']:.0%})"
        )
    if not report.get("embed_model_matches", True):
        out.append(
            f"the stored vectors are {report.get('stored_embed_model')}'s, the embedder is"
            f" {report.get('configured_embed_model')}"
        )
    if report.get("sleep_runs"):
        out.append(_n(len(report["sleep_runs"]), "sleep run") + " waiting for someone")
    return out


def notes(report: dict[str, Any]) -> list[str]:
    """The advisory findings, one plain phrase each: never a reason for `healthy` to be false."""
    out: list[str] = []
    if report.get("overdue_tasks"):
        out.append(_n(len(report["overdue_tasks"]), "overdue task"))
    if report.get("stale_blockers"):
        out.append(_n(len(report["stale_blockers"]), "task") + " blocked by a closed or gone task")
    if report.get("untyped_entity_total"):
        out.append(_n(report["untyped_entity_total"], "entity name") + " without a type")
    if report.get("dirty"):
        out.append(_n(len(report["dirty"]), "uncommitted change"))
    return out


def unhealthy_error(report: dict[str, Any]) -> Any:
    """ERR_UNHEALTHY for `doctor --strict`: what is wrong in the message, the report in details
    (a program reads the same data as without --strict)."""
    from memhtml.contracts.errors import UnhealthyError

    if report.get("mode") == "files":
        bad = [f for f in report["files"] if not f["ok"]]
        first = bad[0]["violations"][0]["message"] if bad and bad[0]["violations"] else ""
        verb = "breaks" if len(bad) == 1 else "break"
        message = f"{_n(len(bad), 'file')} of {len(report['files'])} {verb} the memory format" + (
            f" ({bad[0]['path']}: {first})" if first else ""
        )
        return UnhealthyError(
            message,
            suggestions=["memhtml doctor <file> (without --strict) lists every problem"],
            details=report,
        )
    wrong = findings(report) or ["a check failed"]
    return UnhealthyError(
        "the store is not healthy: " + "; ".join(wrong),
        suggestions=list(report.get("suggestions") or []) or ["memhtml doctor"],
        details=report,
    )
