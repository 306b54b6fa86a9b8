"""The `task` command group: tasks are memories of type `task` with a status and a due date."""

from __future__ import annotations

from typing import Final

from memhtml.contracts.limits import MAX_FILTER_VALUES, MAX_LABELS, MAX_PARAGRAPHS, MAX_PATHS
from memhtml.contracts.vocab import TASK_STATUSES
from memhtml.surface.spec import ALLOW_SECRET, Command, Param

H = "memhtml.cli.handlers"

_TASK_STATUS_HELP: Final = "task status: " + ", ".join(TASK_STATUSES)
TASK_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "task add",
        "Write one task (never deduped) with optional due date and task links, one commit.",
        "task.written",
        f"{H}.tasks:add",
        params=(
            Param("title", "title (one line)", required=True),
            Param("claim", "the commitment, one sentence (default: the title)"),
            Param("body", "a body paragraph (repeatable)", multiple=True, max_count=MAX_PARAGRAPHS),
            Param("status", _TASK_STATUS_HELP, default="todo", choices=TASK_STATUSES),
            Param("due", "due date or ISO instant", metavar="DATE"),
            Param("workspace", "file under projects/<workspace>/tasks/ (else areas/inbox/tasks/)"),
            Param("tag", "tag (repeatable)", multiple=True, max_count=MAX_LABELS),
            Param("entity", "entity `type:name` (repeatable)", multiple=True, max_count=MAX_LABELS),
            Param(
                "blocks",
                "a task this one blocks (repeatable)",
                multiple=True,
                metavar="PATH",
                max_count=MAX_PATHS,
            ),
            Param("subtask_of", "the parent task", metavar="PATH"),
            Param("session_id", "provenance: agent session id"),
            Param("prompt_id", "provenance: prompt id"),
            Param("turn_uuid", "provenance: turn uuid"),
            ALLOW_SECRET,
        ),
        errors=(
            "ERR_INVALID_FLAG",
            "ERR_INVALID_MEMORY",
            "ERR_INVALID_PATH",
            "ERR_PATH_NOT_FOUND",
            "ERR_WRITE_CONFLICT",
            "ERR_REPO_REQUIRED",
            "ERR_SECRET_DETECTED",
        ),
        examples=(
            'memhtml task add --title "Rotate the API keys" --due 2026-03-01',
            'memhtml task add --title "Ship v2" --workspace web'
            " --blocks projects/web/tasks/launch.html",
        ),
        details=(
            "Placement: projects/<workspace>/tasks/ with --workspace, else areas/inbox/tasks/."
            " Tasks are never deduped against each other. --blocks and --subtask-of author"
            " task links (both ends must be tasks; ERR_INVALID_MEMORY otherwise). A bad"
            " --status or a --due outside the date grammar is ERR_INVALID_FLAG (exit 2)."
        ),
    ),
    Command(
        "task status",
        "Set a task's status (a head-only edit: the content hash stays), one commit.",
        "task.updated",
        f"{H}.tasks:status",
        params=(
            Param("path", "the task", positional=True, required=True),
            Param(
                "status", _TASK_STATUS_HELP, positional=True, required=True, choices=TASK_STATUSES
            ),
        ),
        errors=(
            "ERR_INVALID_FLAG",
            "ERR_INVALID_MEMORY",
            "ERR_INVALID_PATH",
            "ERR_PATH_NOT_FOUND",
            "ERR_DIRTY_TREE",
            "ERR_WRITE_CONFLICT",
        ),
        examples=("memhtml task status areas/inbox/tasks/rotate-the-api-keys.html done",),
        details=(
            "Stamps memhtml-task-status and memhtml-updated. The status it already has"
            " commits nothing (unchanged: true, commit_sha: null). A path that is not a task"
            " is ERR_INVALID_MEMORY. done does not archive: the task leaves `task list`."
        ),
    ),
    Command(
        "task list",
        "Open tasks by due date (undated last), then path, each with its open blockers.",
        "task.list",
        f"{H}.tasks:list_tasks",
        params=(
            Param(
                "status",
                "only these statuses (repeatable)",
                multiple=True,
                choices=TASK_STATUSES,
                max_count=MAX_FILTER_VALUES,
            ),
            Param("due_before", "due strictly before this calendar day", metavar="DATE"),
            Param("workspace", "only projects/<workspace>/"),
            Param("include_done", "include done tasks", type="bool", default=False),
            Param("limit", "at most this many", type="int", default=50, minimum=1, maximum=500),
        ),
        errors=("ERR_INVALID_FLAG",),
        examples=("memhtml task list", "memhtml task list --due-before 2026-03-01"),
        details=(
            "Without --status, tasks not done (add --include-done for all). blocked_by lists"
            " the live tasks, not done, whose `blocks` link points at the task. A --due-before"
            " outside the date grammar is ERR_INVALID_FLAG (exit 2)."
        ),
    ),
)
