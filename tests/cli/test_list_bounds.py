"""Repeatable flags are bounded by the same declarations as the MCP list fields.

Issue 29, item 9: a search with 1,000 facets or 100k tags reached SQLite and
answered ERR_STORAGE; a garbage list cursor restarted the listing. Each is
refused here with a typed error naming the flag and its bound, before any
work, and the bound is the one the MCP tool's field declares.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import InputTooLargeError
from memhtml.contracts.limits import MAX_FILTER_VALUES, MAX_LABELS, MAX_PATHS
from memhtml.mcp.tools import TOOLS_BY_NAME
from memhtml.surface.table import COMMANDS

Cli = Callable[..., tuple[int, dict[str, Any]]]

# Positionals a person passes by the shell's glob or as words, not lists a caller builds.
UNBOUNDED = {("help", "command"), ("doctor", "paths")}
# The same list at both doors: (command, parameter) -> (tool, field).
SAME_LIST = {
    ("search", "tag"): ("memory_search", "tags"),
    ("search", "type"): ("memory_search", "memory_types"),
    ("search", "facet"): ("memory_search", "facets"),
    ("recall", "tag"): ("memory_recall", "tags"),
    ("recall", "type"): ("memory_recall", "memory_types"),
    ("write", "tag"): ("memory_write", "tags"),
    ("write", "entity"): ("memory_write", "entities"),
    ("write", "body"): ("memory_write", "body"),
    ("correct", "body"): ("memory_correct", "body"),
    ("reinforce", "paths"): ("memory_reinforce", "paths"),
    ("neighbors", "rel"): ("memory_neighbors", "rels"),
    ("task add", "tag"): ("task_add", "tags"),
    ("task add", "entity"): ("task_add", "entities"),
    ("task add", "body"): ("task_add", "body"),
    ("task add", "blocks"): ("task_add", "blocks"),
    ("task list", "status"): ("task_list", "status"),
}


def _head(root: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout


def test_every_repeatable_flag_is_bounded_as_its_mcp_field() -> None:
    repeatables = {(c.name, p.name): p for c in COMMANDS for p in c.params if p.multiple}
    for key, param in repeatables.items():
        if key in UNBOUNDED:
            continue
        assert param.max_count is not None, f"{key} takes any number of values"
    for (command, name), (tool, field) in SAME_LIST.items():
        schema = TOOLS_BY_NAME[tool].input_schema()["properties"][field]
        assert repeatables[(command, name)].max_count == schema["maxItems"], (command, name)


def _flags(flag: str, count: int, value: Callable[[int], str]) -> list[str]:
    out: list[str] = []
    for i in range(count):
        out += [flag, value(i)]
    return out


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--tag", lambda i: f"t{i}"), ("--facet", lambda i: f"k{i}=v"), ("--type", lambda _: "task")],
    ids=["tag", "facet", "type"],
)
def test_search_over_the_filter_bound_is_input_too_large(
    cli: Cli, store: Path, flag: str, value: Callable[[int], str]
) -> None:
    code, payload = cli("search", "alpha", *_flags(flag, MAX_FILTER_VALUES + 1, value))
    assert (code, payload["code"]) == (2, "ERR_INPUT_TOO_LARGE"), payload
    assert payload["details"] == {
        "field": flag,
        "limit": MAX_FILTER_VALUES,
        "count": MAX_FILTER_VALUES + 1,
    }
    assert payload["error"].startswith(f"{flag}: 65 values; at most 64 are accepted")
    code, payload = cli("search", "alpha", *_flags(flag, MAX_FILTER_VALUES, value))
    assert code == 0, payload  # at the bound it runs (before: ERR_STORAGE from ~500 terms)


def test_1000_facets_are_refused_not_a_storage_error(cli: Cli, store: Path) -> None:
    code, payload = cli("search", "alpha", *_flags("--facet", 1000, lambda i: f"k{i}=v{i}"))
    assert (code, payload["code"]) == (2, "ERR_INPUT_TOO_LARGE"), payload


def test_a_write_over_the_label_bound_commits_nothing(cli: Cli, store: Path) -> None:
    head = _head(store)
    argv = ["write", "--title", "T", "--type", "semantic", "--claim", "C."]
    code, payload = cli(*argv, *_flags("--tag", MAX_LABELS + 1, lambda i: f"t{i}"))
    assert (code, payload["code"]) == (2, "ERR_INPUT_TOO_LARGE")
    assert payload["details"]["field"] == "--tag"
    assert _head(store) == head


def test_reinforce_over_the_path_bound_is_refused(cli: Cli, store: Path) -> None:
    code, payload = cli("reinforce", *(["areas/a.html"] * (MAX_PATHS + 1)))
    assert (code, payload["code"]) == (2, "ERR_INPUT_TOO_LARGE")
    assert payload["details"]["field"] == "<paths>"


def test_a_garbage_cursor_is_refused(cli: Cli, store: Path) -> None:
    for cursor in ("garbage", "/etc/passwd", "areas/../b.html"):
        code, payload = cli("list", "--cursor", cursor)
        assert (code, payload["code"]) == (2, "ERR_INVALID_FLAG"), payload
        assert payload["details"]["field"] == "cursor"
        assert payload["error"].startswith(f"cursor: {cursor!r} is not a cursor")
    code, page = cli("list", "--limit", "1")
    assert page["data"]["next_cursor"] == "areas/a.html"
    code, payload = cli("list", "--cursor", page["data"]["next_cursor"])
    assert [f["path"] for f in payload["data"]["files"]] == ["areas/b.html"]


def test_the_core_refuses_the_same_bounds(store: Path) -> None:
    import memhtml

    with memhtml.open(store, embedder="fake") as corpus:
        for filters in (
            {"tag": [f"t{i}" for i in range(100_000)]},
            {"facet": [f"k{i}=v" for i in range(1000)]},
        ):
            with pytest.raises(InputTooLargeError) as exc:
                corpus.search("alpha", **filters)
            assert exc.value.details["limit"] == MAX_FILTER_VALUES
        with pytest.raises(InputTooLargeError):
            corpus.list(facet=[f"k{i}=v" for i in range(1000)])
