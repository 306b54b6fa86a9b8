"""The task commands: add a task, move its status, list the open ones.

A task is a memory of type `task` (`memhtml-task-status` todo|doing|blocked|
done, optional `memhtml-due`). Tasks are never deduped: two tasks saying the
same words are two commitments (the index reserves this, Planner.write skips
the lookup). A status change is a head-only edit, so the content hash stays.
Unlike the original, `done` does not archive the task: it stays where it is
and leaves the default listing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.dates import normalize_datetime
from memhtml.contracts.errors import InvalidFlagError
from memhtml.contracts.paths import memory_path, slugify
from memhtml.contracts.vocab import DEFAULT_TASK_STATUS, TASK_STATUSES
from memhtml.store.git import commit_subject

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus
    from memhtml.ops.writes import Planner

MAX_TASK_PAGE: Final = 500
_GRAMMAR: Final = "a date (YYYY-MM-DD) or an ISO instant (YYYY-MM-DDThh:mm:ssZ)"


def check_status(value: str, *, field: str = "status") -> str:
    """`value` if it is one of the four task statuses; a usage error naming them otherwise."""
    if value not in TASK_STATUSES:
        raise InvalidFlagError(
            f"{field}: {value!r} is not a task status; one of {', '.join(TASK_STATUSES)}",
            suggestions=["memhtml help task status"],
            details={"field": field, "choices": list(TASK_STATUSES)},
        )
    return value


def check_due(value: str, *, field: str = "due") -> str:
    """`value` normalized to the stored date grammar; a usage error outside it."""
    normalized = normalize_datetime(value)
    if normalized is None:
        raise InvalidFlagError(
            f"{field}: {value!r} is not {_GRAMMAR}",
            suggestions=["use 2026-07-28 or 2026-07-28T14:00:00Z"],
            details={"field": field},
        )
    return normalized


def task_add(
    corpus: Corpus,
    title: str,
    *,
    claim: str | None = None,
    body: str | Sequence[str] | None = None,
    status: str = DEFAULT_TASK_STATUS,
    due: str | None = None,
    workspace: str | None = None,
    tag: Sequence[str] = (),
    entity: Sequence[str] = (),
    blocks: Sequence[str] = (),
    subtask_of: str | None = None,
    session_id: str | None = None,
    prompt_id: str | None = None,
    turn_uuid: str | None = None,
    allow_secret: bool = False,
) -> dict[str, Any]:
    """Write one task and its task links (`blocks`, `subtask_of`) as one commit.

    The claim defaults to the title (the original's rule); each body
    paragraph is one `<p>` after it. Status and due are checked first (usage
    errors); every link goes through the Planner's link rules (task to task
    only), and any refusal leaves nothing written.
    """
    from memhtml.contracts.ops import LinkOp
    from memhtml.ops.new_memory import _write_op

    check_status(status)
    due = check_due(due) if due else None
    targets = [("blocks", memory_path(p)) for p in dict.fromkeys(blocks)]
    if subtask_of:
        targets.append(("subtask_of", memory_path(subtask_of)))
    paragraphs = [body] if isinstance(body, str) else list(body or ())
    op = _write_op(
        title=title,
        type="task",
        claim=claim if claim and claim.strip() else title,
        body=paragraphs or None,
        workspace=workspace,
        tag=list(tag),
        entity=list(entity),
        task_status=status,
        due=due,
        session_id=session_id,
        prompt_id=prompt_id,
        turn_uuid=turn_uuid,
        allow_secret=allow_secret,
    )

    def plan(planner: Planner) -> dict[str, Any]:
        written = planner.write(op)
        links = [
            planner.link(LinkOp(op="link", src=written["path"], rel=rel, dst=dst))
            for rel, dst in targets
        ]
        return {
            **written,
            "task_status": status,
            "due_at": due,
            "links": [{"rel": link["rel"], "dst_path": link["dst_path"]} for link in links],
        }

    def message(payload: dict[str, Any]) -> str:
        lines = [commit_subject("task", f"add {title}"), "", f"task {payload['path']}"]
        lines += [f"{link['rel']} {link['dst_path']}" for link in payload["links"]]
        return "\n".join([*lines, "", "Memhtml-Op: task-add"]) + "\n"

    return corpus.plan_commit(plan, message)


def task_status(corpus: Corpus, path: str, status: str) -> dict[str, Any]:
    """Set a task's status: a head-only edit as one commit; the same status commits nothing."""
    check_status(status)

    def message(payload: dict[str, Any]) -> str:
        subject = commit_subject("task", f"{status} {payload['path']}")
        was = payload.get("previous_status")
        return f"{subject}\n\n{was} -> {status}\n\nMemhtml-Op: task-status\n"

    return corpus.plan_commit(lambda planner: planner.set_task_status(path, status), message)


def task_list(
    corpus: Corpus,
    *,
    status: Sequence[str] | str | None = None,
    due_before: str | None = None,
    workspace: str | None = None,
    include_done: bool = False,
    limit: int = 50,
    catch_up: bool = True,
) -> dict[str, Any]:
    """Live tasks ordered by due date (undated last), then path.

    Without `status`, open tasks only (not done) unless `include_done`.
    `due_before` keeps tasks due strictly before that calendar day (undated
    ones never match). Each task lists `blocked_by`: the live, not-done tasks
    whose `blocks` link points at it.
    """
    statuses = [status] if isinstance(status, str) else list(status or ())
    for s in statuses:
        check_status(s)
    bound = check_due(due_before, field="due_before") if due_before else None
    limit = max(1, min(int(limit), MAX_TASK_PAGE))
    if catch_up:  # a hook lists the index as it is (no freshness check, no write)
        corpus.catch_up()
    where = ["f.memory_type = 'task'", "f.archived = 0"]
    params: list[Any] = []
    if statuses:
        where.append(f"f.task_status IN ({','.join('?' for _ in statuses)})")
        params += statuses
    elif not include_done:
        where.append("f.task_status <> 'done'")
    if workspace:
        where.append("f.workspace IN (?, ?)")
        params += [workspace, slugify(workspace)]
    if bound is not None:
        where.append("f.due_at IS NOT NULL AND substr(f.due_at, 1, 10) < substr(?, 1, 10)")
        params.append(bound)
    rows = corpus.conn.execute(
        "SELECT f.path, f.title, f.gist, f.task_status, f.due_at, f.workspace, f.updated_at"
        f" FROM files f WHERE {' AND '.join(where)}"
        " ORDER BY f.due_at IS NULL, f.due_at, f.path LIMIT ?",
        (*params, limit + 1),
    ).fetchall()
    page = rows[:limit]
    blockers = _open_blockers(corpus, [r[0] for r in page])
    tasks = [
        {
            "path": r[0],
            "title": r[1],
            "gist": r[2],
            "task_status": r[3],
            "due_at": r[4],
            "workspace": r[5],
            "updated_at": r[6],
            "blocked_by": blockers.get(r[0], []),
        }
        for r in page
    ]
    return {"tasks": tasks, "count": len(tasks), "truncated": len(rows) > limit}


def _open_blockers(corpus: Corpus, paths: Sequence[str]) -> dict[str, list[str]]:
    """For each path, the live tasks not done whose `blocks` link points at it (sorted)."""
    out: dict[str, list[str]] = {}
    if not paths:
        return out
    rows = corpus.conn.execute(
        "SELECT DISTINCT e.dst_path, e.src_path FROM edges e JOIN files b ON b.path = e.src_path"
        " WHERE e.edge_class = 'task' AND e.rel = 'blocks'"
        f" AND e.dst_path IN ({','.join('?' for _ in paths)})"
        " AND b.memory_type = 'task' AND b.archived = 0 AND b.task_status <> 'done'"
        " ORDER BY e.dst_path, e.src_path",
        tuple(paths),
    ).fetchall()
    for dst, src in rows:
        out.setdefault(str(dst), []).append(str(src))
    return out
