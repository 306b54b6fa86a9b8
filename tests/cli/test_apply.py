"""`memhtml apply`: where ops come from, up-front validation, honest counters, partial failure."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import InvalidOpError, InvalidPathError
from memhtml.ops.batch import validate_ops

Cli = Callable[..., tuple[int, dict[str, Any]]]

WRITE = {"op": "write", "title": "Gamma", "type": "semantic", "body": "Gamma rays are hard."}


def head(root: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def jsonl(path: Path, *ops: dict[str, Any] | str) -> str:
    path.write_text("".join((op if isinstance(op, str) else json.dumps(op)) + "\n" for op in ops))
    return str(path)


def test_dash_reads_stdin(cli: Cli, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(WRITE) + "\n"))
    code, payload = cli("apply", "-")
    assert code == 0 and payload["data"]["summary"]["written"] == 1


def test_file_positionally_or_as_a_flag(cli: Cli, store: Path, tmp_path: Path) -> None:
    ops = jsonl(tmp_path / "ops.jsonl", WRITE)
    code, payload = cli("apply", ops)
    assert code == 0 and payload["data"]["summary"]["written"] == 1
    code, payload = cli("apply", "--file", ops)
    assert code == 0 and payload["data"]["summary"]["deduped"] == 1


def test_two_different_files_are_refused(cli: Cli, store: Path, tmp_path: Path) -> None:
    a, b = jsonl(tmp_path / "a.jsonl", WRITE), jsonl(tmp_path / "b.jsonl", WRITE)
    code, payload = cli("apply", a, "--file", b)
    assert (code, payload["code"]) == (2, "ERR_UNEXPECTED_ARGUMENT")


@pytest.mark.parametrize(
    ("bad", "cause"),
    [
        ({"op": "link", "src": "areas/a.html", "rel": "bogus", "dst": "areas/b.html"}, None),
        ({"op": "link", "src": "areas/a.html", "rel": "supports", "dst": "../b.html"}, "path"),
        ({"op": "link", "src": "/etc/a.html", "rel": "supports", "dst": "areas/b.html"}, "path"),
        ({"op": "link", "src": "areas/a.html", "rel": "supports", "dst": "areas/a.html"}, None),
        ({"op": "archive", "path": "areas/../../x.html"}, "path"),
        ({"op": "archive", "path": "notes/x.html"}, "path"),
        ({"op": "correct", "target_path": "../a.html", "claim": "New."}, "path"),
        ({**WRITE, "path": "archive/2026/areas/x.html"}, "path"),
    ],
)
def test_bad_ops_are_refused_before_any_op_runs(
    bad: dict[str, Any], cause: str | None, cli: Cli, store: Path, tmp_path: Path
) -> None:
    before = head(store)
    ops = jsonl(tmp_path / "ops.jsonl", WRITE, "# a comment", bad)
    code, payload = cli("apply", ops)
    assert (code, payload["code"]) == (2, "ERR_INVALID_OP"), payload
    assert payload["details"]["line"] == 3 and payload["details"]["index"] == 1
    assert payload["error"].startswith("line 3 (op index 1): ")
    assert payload["details"].get("cause") == ("ERR_INVALID_PATH" if cause else None)
    assert head(store) == before
    assert not (store / "resources" / "gamma.html").exists()


def test_validate_ops_checks_paths_and_rels_in_python(corpus: Any, repo: Path) -> None:
    with pytest.raises(InvalidOpError) as err:
        validate_ops(
            [WRITE, {"op": "link", "src": "areas/a.html", "rel": "x", "dst": "areas/b.html"}]
        )
    assert err.value.details["index"] == 1 and err.value.details["field"] == "rel"
    with pytest.raises(InvalidPathError) as bad_path:
        validate_ops([WRITE, WRITE, {"op": "archive", "path": "../x.html"}])
    assert bad_path.value.details["index"] == 2
    before = head(repo)
    with pytest.raises(InvalidPathError):
        corpus.apply([WRITE, {"op": "link", "src": "areas/a.html", "rel": "supports", "dst": ".."}])
    assert head(repo) == before


def test_summary_counts_each_kind_of_change_honestly(cli: Cli, store: Path, tmp_path: Path) -> None:
    ops = jsonl(
        tmp_path / "ops.jsonl",
        WRITE,
        {"op": "write", "title": "Again", "type": "semantic", "claim": "Alpha drains the VIP."},
        {"op": "link", "src": "areas/a.html", "rel": "supports", "dst": "areas/b.html"},
        {"op": "link", "src": "areas/a.html", "rel": "supports", "dst": "areas/b.html"},
        {"op": "correct", "target_path": "areas/b.html", "claim": "Beta precedes alpha."},
    )
    code, payload = cli("apply", ops)
    assert code == 0, payload
    summary = payload["data"]["summary"]
    assert summary == {
        "total": 5,
        "written": 1,
        "deduped": 1,
        "corrected": 1,
        "archived": 0,
        "linked": 1,
        "unchanged": 1,
        "failed": 0,
        "skipped": 0,
    }
    results = payload["data"]["results"]
    assert [r["line"] for r in results] == [1, 2, 3, 4, 5]
    assert results[3]["created"] is False
    code, payload = cli(
        "apply", jsonl(tmp_path / "one.jsonl", {"op": "archive", "path": "areas/a.html"})
    )
    assert (
        payload["data"]["summary"]["archived"] == 1 and payload["data"]["summary"]["written"] == 0
    )


def test_abort_names_the_op_index_and_line(cli: Cli, store: Path, tmp_path: Path) -> None:
    before = head(store)
    ops = jsonl(tmp_path / "ops.jsonl", WRITE, "", {"op": "archive", "path": "areas/missing.html"})
    code, payload = cli("apply", ops)
    assert (code, payload["code"]) == (1, "ERR_PATH_NOT_FOUND")
    assert payload["error"].startswith("op index 1 (line 3) failed")
    details = payload["details"]
    assert details["aborted"] and not details["partial"] and details["commit_sha"] is None
    assert [r["index"] for r in details["results"]] == [0, 1]
    assert head(store) == before


def test_continue_on_error_with_failures_is_a_partial_failure(
    cli: Cli, store: Path, tmp_path: Path
) -> None:
    ops = jsonl(tmp_path / "ops.jsonl", WRITE, {"op": "archive", "path": "areas/missing.html"})
    code, payload = cli("apply", ops, "--continue-on-error")
    assert (code, payload["ok"], payload["code"]) == (1, False, "ERR_PARTIAL_FAILURE")
    details = payload["details"]
    assert details["partial"] and not details["aborted"]
    assert details["commit_sha"] == head(store)
    assert details["summary"]["written"] == 1 and details["summary"]["failed"] == 1
    assert details["results"][1]["code"] == "ERR_PATH_NOT_FOUND"
    assert "op index 1 (line 2)" in payload["error"]


def test_continue_on_error_without_failures_is_plain_success(
    cli: Cli, store: Path, tmp_path: Path
) -> None:
    code, payload = cli("apply", jsonl(tmp_path / "ops.jsonl", WRITE), "--continue-on-error")
    assert code == 0 and payload["type"] == "batch.applied"
    assert payload["data"]["partial"] is False


def test_write_time_checks_from_the_command_line(cli: Cli, store: Path, tmp_path: Path) -> None:
    first = jsonl(
        tmp_path / "first.jsonl",
        {"op": "write", "title": "Pool", "type": "semantic", "claim": "The pool ceiling is 64."},
    )
    assert cli("apply", first)[0] == 0
    raised = jsonl(
        tmp_path / "raised.jsonl",
        {
            "op": "write",
            "title": "Pool up",
            "type": "semantic",
            "claim": "The pool ceiling is 128.",
        },
    )
    before = head(store)
    code, held = cli("apply", raised, "--strict")
    assert (code, held["code"]) == (1, "ERR_CONFLICT") and head(store) == before
    assert held["details"]["results"][0]["details"]["conflict"]["path"] == "areas/inbox/pool.html"
    code, bad = cli("apply", raised, "--strict", "--consolidate", "last-wins")
    assert (code, bad["code"]) == (2, "ERR_INVALID_FLAG")
    code, bad = cli("apply", raised, "--consolidate", "first-wins")
    assert (code, bad["code"]) == (2, "ERR_INVALID_FLAG")
    code, done = cli(
        "apply",
        raised,
        "--consolidate",
        "last-wins",
        "--detect-conflicts",
        "--detect-near-duplicates",
    )
    assert code == 0, done
    result = done["data"]["results"][0]
    assert result["conflict"]["path"] == "areas/inbox/pool.html"
    assert result["superseded"] == [result["superseded_path"]]
    assert result["near_duplicates"] == []  # the older value is archived now
    assert done["data"]["checks"]["superseded"] == 1
