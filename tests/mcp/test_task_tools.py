"""The task tools over a real stdio session: task_add, task_status, task_list."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_add_status_list_round_trip(client: Any, module_repo: Path) -> None:
    launch = client.call("task_add", {"title": "Launch the site", "due": "2026-05-01"})
    assert launch["ok"] and launch["type"] == "task.written", launch
    data = launch["data"]
    assert data["path"] == "areas/inbox/tasks/launch-the-site.html"
    assert (data["task_status"], data["due_at"], data["deduped"]) == ("todo", "2026-05-01", False)
    assert data["commit_sha"]

    docs = client.call(
        "task_add",
        {
            "title": "Write the docs",
            "workspace": "web",
            "status": "doing",
            "tags": ["docs"],
            "blocks": [data["path"]],
        },
    )
    assert docs["ok"], docs
    docs_path = docs["data"]["path"]
    assert docs_path == "projects/web/tasks/write-the-docs.html"
    assert docs["data"]["links"] == [{"rel": "blocks", "dst_path": data["path"]}]

    listed = client.call("task_list", {})
    assert listed["ok"] and listed["type"] == "task.list", listed
    by_path = {t["path"]: t for t in listed["data"]["tasks"]}
    assert by_path[data["path"]]["blocked_by"] == [docs_path]
    assert listed["data"]["tasks"][0]["path"] == data["path"]  # dated first

    done = client.call("task_status", {"path": docs_path, "status": "done"})
    assert done["ok"] and done["type"] == "task.updated", done
    assert done["data"]["previous_status"] == "doing"
    assert done["data"]["content_hash"] == docs["data"]["content_hash"]

    again = client.call("task_status", {"path": docs_path, "status": "done"})
    assert again["data"]["unchanged"] is True and again["data"]["commit_sha"] is None

    open_tasks = client.call("task_list", {"workspace": None, "limit": 10})["data"]["tasks"]
    assert [t["path"] for t in open_tasks] == [data["path"]]
    assert open_tasks[0]["blocked_by"] == []
    every = client.call("task_list", {"include_done": True})["data"]["tasks"]
    assert {t["path"] for t in every} == {data["path"], docs_path}
    only_web = client.call("task_list", {"workspace": "web", "status": ["done"]})["data"]
    assert [t["path"] for t in only_web["tasks"]] == [docs_path]


def test_tasks_never_dedup(client: Any) -> None:
    a = client.call("task_add", {"title": "Call the vendor"})["data"]
    b = client.call("task_add", {"title": "Call the vendor"})["data"]
    assert b["deduped"] is False and a["path"] != b["path"]


def test_bad_input_is_a_failure_envelope(client: Any) -> None:
    path = client.call("task_add", {"title": "Something to do"})["data"]["path"]
    bad_status = client.call("task_status", {"path": path, "status": "finished"})
    assert (bad_status["ok"], bad_status["code"]) == (False, "ERR_INVALID_FLAG")
    assert "todo" in bad_status["error"] and "blocked" in bad_status["error"]
    bad_due = client.call("task_add", {"title": "Later", "due": "someday"})
    assert (bad_due["ok"], bad_due["code"]) == (False, "ERR_INVALID_FLAG")
    bad_bound = client.call("task_list", {"due_before": "2026-02-30"})
    assert (bad_bound["ok"], bad_bound["code"]) == (False, "ERR_INVALID_FLAG")
    bad_list = client.call("task_list", {"status": ["open"]})
    assert (bad_list["ok"], bad_list["code"]) == (False, "ERR_INVALID_FLAG")
    bad_path = client.call("task_status", {"path": "../x.html", "status": "done"})
    assert (bad_path["ok"], bad_path["code"]) == (False, "ERR_INVALID_PATH")
    missing = client.call("task_add", {})
    assert (missing["ok"], missing["code"]) == (False, "ERR_MISSING_ARGUMENT")


def test_status_of_a_non_task_is_refused(client: Any) -> None:
    fact = client.call(
        "memory_write",
        {"title": "A fact", "memory_type": "semantic", "claim": "Facts are not tasks."},
    )["data"]["path"]
    refused = client.call("task_status", {"path": fact, "status": "done"})
    assert (refused["ok"], refused["code"]) == (False, "ERR_INVALID_MEMORY")
    linked = client.call("task_add", {"title": "Odd", "subtask_of": fact})
    assert (linked["ok"], linked["code"]) == (False, "ERR_INVALID_MEMORY")
