"""`memhtml task add|status|list`: real git, real index, the fake embedder."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.envelope import ErrorEnvelope, SuccessEnvelope, validate_envelope

Cli = Callable[..., tuple[int, dict[str, Any]]]


def ok(cli: Cli, *argv: str) -> dict[str, Any]:
    code, payload = cli(*argv)
    assert isinstance(validate_envelope(payload), SuccessEnvelope), payload
    assert code == 0
    return dict(payload["data"])


def refused(cli: Cli, *argv: str) -> tuple[int, dict[str, Any]]:
    code, payload = cli(*argv)
    assert isinstance(validate_envelope(payload), ErrorEnvelope), payload
    return code, payload


def commits(repo: Path) -> int:
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--count", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def listed(cli: Cli, *flags: str) -> list[dict[str, Any]]:
    data = ok(cli, "task", "list", *flags)
    assert data["count"] == len(data["tasks"])
    return list(data["tasks"])


def test_add_list_status_list(cli: Cli, store: Path) -> None:
    before = commits(store)
    added = ok(cli, "task", "add", "--title", "Rotate the API keys", "--due", "2026-03-01")
    assert added["path"] == "areas/inbox/tasks/rotate-the-api-keys.html"
    assert (added["created"], added["deduped"], added["task_status"]) == (True, False, "todo")
    assert added["due_at"] == "2026-03-01" and added["commit_sha"]
    assert commits(store) == before + 1
    text = (store / added["path"]).read_text(encoding="utf-8")
    assert '<meta name="memhtml-type" content="task">' in text
    assert '<meta name="memhtml-task-status" content="todo">' in text
    assert '<meta name="memhtml-due" content="2026-03-01">' in text

    [task] = listed(cli)
    assert task["path"] == added["path"]
    assert (task["title"], task["gist"]) == ("Rotate the API keys", "Rotate the API keys")
    assert (task["task_status"], task["due_at"], task["blocked_by"]) == ("todo", "2026-03-01", [])

    moved = ok(cli, "task", "status", added["path"], "doing")
    assert (moved["task_status"], moved["previous_status"], moved["unchanged"]) == (
        "doing",
        "todo",
        False,
    )
    assert [t["task_status"] for t in listed(cli)] == ["doing"]

    done = ok(cli, "task", "status", added["path"], "done")
    assert done["commit_sha"] and commits(store) == before + 3
    assert listed(cli) == []
    assert [t["task_status"] for t in listed(cli, "--include-done")] == ["done"]
    assert [t["path"] for t in listed(cli, "--status", "done")] == [added["path"]]
    # done does not archive: the task stays where it was
    assert (store / added["path"]).is_file()


def test_workspace_placement_and_filter(cli: Cli, store: Path) -> None:
    web = ok(cli, "task", "add", "--title", "Launch", "--workspace", "web")["path"]
    inbox = ok(cli, "task", "add", "--title", "Tidy up")["path"]
    assert web == "projects/web/tasks/launch.html"
    assert [t["path"] for t in listed(cli, "--workspace", "web")] == [web]
    assert {t["path"] for t in listed(cli)} == {web, inbox}


def test_status_change_is_a_head_only_edit(cli: Cli, store: Path) -> None:
    added = ok(cli, "task", "add", "--title", "Write the runbook", "--body", "Cover rollback.")
    path = added["path"]
    before = (store / path).read_text(encoding="utf-8")
    moved = ok(cli, "task", "status", path, "blocked")
    assert moved["content_hash"] == added["content_hash"]
    after = (store / path).read_text(encoding="utf-8")
    assert before.split("<article")[1] == after.split("<article")[1]
    changed = {
        b.split('"')[1]
        for a, b in zip(before.splitlines(), after.splitlines(), strict=True)
        if a != b
    }
    # memhtml-updated may land in the same second as the creation stamp
    assert "memhtml-task-status" in changed
    assert changed <= {"memhtml-task-status", "memhtml-updated"}
    read = ok(cli, "read", path)
    assert read["content_hash"] == added["content_hash"]


def test_same_status_commits_nothing(cli: Cli, store: Path) -> None:
    path = ok(cli, "task", "add", "--title", "Renew the cert")["path"]
    before = commits(store)
    again = ok(cli, "task", "status", path, "todo")
    assert again["unchanged"] is True and again["commit_sha"] is None
    assert commits(store) == before


def test_blocked_by_lists_open_blockers(cli: Cli, store: Path) -> None:
    launch = ok(cli, "task", "add", "--title", "Launch")["path"]
    docs = ok(cli, "task", "add", "--title", "Docs", "--blocks", launch)
    assert docs["links"] == [{"rel": "blocks", "dst_path": launch}]
    tests = ok(cli, "task", "add", "--title", "Tests", "--blocks", launch)["path"]
    by_path = {t["path"]: t for t in listed(cli)}
    assert by_path[launch]["blocked_by"] == sorted([docs["path"], tests])
    assert by_path[tests]["blocked_by"] == []
    ok(cli, "task", "status", tests, "done")
    by_path = {t["path"]: t for t in listed(cli)}
    assert by_path[launch]["blocked_by"] == [docs["path"]]
    text = (store / docs["path"]).read_text(encoding="utf-8")
    assert f'<link rel="memhtml-blocks" href="/{launch}">' in text


def test_subtask_of_links_the_parent(cli: Cli, store: Path) -> None:
    parent = ok(cli, "task", "add", "--title", "Migrate")["path"]
    child = ok(cli, "task", "add", "--title", "Copy rows", "--subtask-of", parent)
    assert child["links"] == [{"rel": "subtask_of", "dst_path": parent}]


def test_task_links_are_task_to_task(cli: Cli, store: Path) -> None:
    before = commits(store)
    code, payload = refused(cli, "task", "add", "--title", "Fix alpha", "--blocks", "areas/a.html")
    assert (code, payload["code"]) == (1, "ERR_INVALID_MEMORY")
    code, payload = refused(
        cli, "task", "add", "--title", "Fix", "--subtask-of", "areas/inbox/tasks/none.html"
    )
    assert (code, payload["code"]) == (1, "ERR_PATH_NOT_FOUND")
    assert commits(store) == before
    assert not (store / "areas/inbox/tasks").exists()


def test_due_ordering_nulls_last_then_path(cli: Cli, store: Path) -> None:
    late = ok(cli, "task", "add", "--title", "Late", "--due", "2026-09-01")["path"]
    undated_b = ok(cli, "task", "add", "--title", "Bravo")["path"]
    undated_a = ok(cli, "task", "add", "--title", "Alpha")["path"]
    soon = ok(cli, "task", "add", "--title", "Soon", "--due", "2026-02-01T09:30:00+01:00")
    assert soon["due_at"] == "2026-02-01T08:30:00Z"
    assert [t["path"] for t in listed(cli)] == [soon["path"], late, undated_a, undated_b]
    assert [t["path"] for t in listed(cli, "--due-before", "2026-09-01")] == [soon["path"]]
    assert [t["path"] for t in listed(cli, "--limit", "1")] == [soon["path"]]
    assert ok(cli, "task", "list", "--limit", "1")["truncated"] is True


def test_tasks_never_dedup(cli: Cli, store: Path) -> None:
    first = ok(cli, "task", "add", "--title", "Call the vendor")
    second = ok(cli, "task", "add", "--title", "Call the vendor")
    assert second["deduped"] is False and second["created"] is True
    assert second["path"] != first["path"]
    assert second["content_hash"] == first["content_hash"]
    assert len(listed(cli)) == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["task", "status", "areas/inbox/tasks/x.html", "finished"],
        ["task", "add", "--title", "T", "--status", "later"],
        ["task", "list", "--status", "open"],
        ["task", "add", "--title", "T", "--due", "next week"],
        ["task", "add", "--title", "T", "--due", "2026-02-30"],
        ["task", "list", "--due-before", "2026-13-01"],
        ["task", "list", "--limit", "0"],
    ],
)
def test_bad_status_or_due_is_a_usage_error(cli: Cli, store: Path, argv: list[str]) -> None:
    before = commits(store)
    code, payload = refused(cli, *argv)
    assert (code, payload["code"]) == (2, "ERR_INVALID_FLAG")
    assert commits(store) == before


def test_bad_status_names_the_vocabulary(cli: Cli, store: Path) -> None:
    path = ok(cli, "task", "add", "--title", "Ship")["path"]
    _, payload = refused(cli, "task", "status", path, "finished")
    for status in ("todo", "doing", "blocked", "done"):
        assert status in payload["error"]


def test_status_of_a_non_task_is_refused(cli: Cli, store: Path) -> None:
    before = commits(store)
    code, payload = refused(cli, "task", "status", "areas/a.html", "done")
    assert (code, payload["code"]) == (1, "ERR_INVALID_MEMORY")
    assert "not a task" in payload["error"]
    code, payload = refused(cli, "task", "status", "areas/inbox/tasks/none.html", "done")
    assert (code, payload["code"]) == (1, "ERR_PATH_NOT_FOUND")
    assert commits(store) == before


def test_status_of_a_dirty_task_is_refused(cli: Cli, store: Path) -> None:
    path = ok(cli, "task", "add", "--title", "Edit me")["path"]
    file = store / path
    file.write_text(file.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    code, payload = refused(cli, "task", "status", path, "doing")
    assert (code, payload["code"]) == (1, "ERR_DIRTY_TREE")


def test_python_api(store: Path) -> None:
    import memhtml

    with memhtml.open(store, embedder="fake") as c:
        added = c.task_add("Review the budget", due="2026-04-01", tag=["finance"])
        assert c.task_status(added["path"], "doing")["unchanged"] is False
        [task] = c.task_list()["tasks"]
        assert (task["path"], task["task_status"]) == (added["path"], "doing")
        # memory search leaves tasks out unless asked for
        assert all(h["path"] != added["path"] for h in c.search("budget").to_data()["hits"])
