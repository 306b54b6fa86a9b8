"""Terminal views of the task commands: task add, task status, task list."""

from __future__ import annotations

from typing import Any

from memhtml.cli.text import clip, columns, sha


def task_add(data: dict[str, Any]) -> str:
    """The new task, its status and due date, the links it authored."""
    due = f", due {data['due_at']}" if data.get("due_at") else ""
    commit = f" (commit {sha(data['commit_sha'])})" if data.get("commit_sha") else ""
    lines = [f"added task {data['path']}: {data.get('task_status')}{due}{commit}"]
    for link in data.get("links") or []:
        lines.append(f"  {link.get('rel')} -> {link.get('path') or link.get('dst_path')}")
    return "\n".join(lines)


def task_status(data: dict[str, Any]) -> str:
    """old status -> new status (or that it already was)."""
    if data.get("unchanged"):
        return f"{data['path']} is already {data.get('task_status')}: nothing to commit"
    commit = f" (commit {sha(data['commit_sha'])})" if data.get("commit_sha") else ""
    return f"{data['path']}: {data.get('previous_status')} -> {data.get('task_status')}{commit}"


def task_list(data: dict[str, Any]) -> str:
    """One row a task: status, due date, path, title, and what blocks it."""
    tasks = data.get("tasks") or []
    if not tasks:
        # The filters are not in the data: say what holds for every one of them.
        return "no task matches (done tasks show with --include-done or --status done)"
    rows = [["status", "due", "path", "title"]]
    blocked: dict[int, list[str]] = {}
    for i, t in enumerate(tasks):
        rows.append(
            [
                t.get("task_status") or "",
                t.get("due_at") or "-",
                t["path"],
                clip(t.get("title") or "", 50),
            ]
        )
        blocked[i] = t.get("blocked_by") or []
    lines: list[str] = []
    for i, line in enumerate(columns(rows)):
        lines.append(line)
        lines += [f"    blocked by {b}" for b in blocked.get(i - 1, [])] if i else []
    if data.get("truncated"):
        lines.append(f"{len(tasks)} shown; more match (--limit)")
    return "\n".join(lines)
