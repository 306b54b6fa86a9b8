"""Every list input of every MCP tool is bounded; refusals name their field and limit.

Issue 29, item 9: `memory_search` with 1,000 facets or 100k tags answered
ERR_STORAGE ("Expression tree is too large") from SQLite; `memory_link` with
a bad relation said a literal `{value!r}`; a garbage `memory_list` cursor
restarted the listing silently. The repros run through a spawned server
(the `client` fixture); the sweep over every list field runs in process
through `call_tool`, which is what the server calls.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import BaseModel

from memhtml.contracts.limits import MAX_FILTER_VALUES
from memhtml.mcp.tools import TOOLS, call_tool
from tests.mcp.conftest import SyncClient


def _never(*_: Any) -> Any:
    raise AssertionError("the corpus was opened for an input that must be refused first")


def _refused(envelope: dict[str, Any], field: str, limit: int) -> None:
    assert envelope["ok"] is False, envelope
    assert envelope["code"] == "ERR_INPUT_TOO_LARGE", envelope
    (problem,) = envelope["details"]["errors"]
    assert problem["field"] == field and problem["kind"] == "input_too_large"
    assert problem["limit"] == limit and problem["count"] > limit
    assert f"{field}:" in envelope["error"] and f"at most {limit:,}" in envelope["error"]


@pytest.fixture(scope="module")
def seeded(client: SyncClient) -> SyncClient:
    for i in range(3):
        written = client.call(
            "memory_write",
            {
                "title": f"Bounded fact {i}",
                "memory_type": "semantic",
                "claim": f"Bounded fact {i} is about the VIP drain.",
                "tags": ["ops"],
                "path": f"areas/inbox/bounded-{i}.html",
            },
        )
        assert written["ok"], written
    return client


def test_search_with_1000_facets_or_100k_tags_is_a_typed_refusal(seeded: SyncClient) -> None:
    facets = [f"k{i}=v{i}" for i in range(1000)]
    _refused(seeded.call("memory_search", {"query": "VIP", "facets": facets}), "facets", 64)
    mapping = {f"k{i}": "v" for i in range(1000)}
    _refused(seeded.call("memory_search", {"query": "VIP", "facets": mapping}), "facets", 64)
    tags = [f"t{i}" for i in range(100_000)]
    _refused(seeded.call("memory_search", {"query": "VIP", "tags": tags}), "tags", 64)
    # At the bound the query runs (before: ERR_STORAGE from ~500 terms on).
    at_bound = ["ops"] * MAX_FILTER_VALUES
    hits = seeded.call("memory_search", {"query": "VIP", "tags": at_bound})
    assert hits["ok"] is True and hits["data"]["hits"], hits
    facet_bound = [f"k{i}=v" for i in range(MAX_FILTER_VALUES)]
    assert seeded.call("memory_search", {"query": "VIP", "facets": facet_bound})["ok"] is True


def test_a_bad_relation_or_type_is_named_in_plain_words(seeded: SyncClient) -> None:
    link = {"src_path": "areas/inbox/bounded-0.html", "rel": "bogus"}
    envelope = seeded.call("memory_link", {**link, "dst_path": "areas/inbox/bounded-1.html"})
    assert envelope["ok"] is False and envelope["code"] == "ERR_INVALID_FLAG"
    assert "'bogus' is not an accepted relation here" in envelope["error"]
    assert "{" not in envelope["error"]  # before: a literal {value!r}
    written = seeded.call("memory_write", {"title": "T", "memory_type": "nonsense", "claim": "C."})
    assert "'nonsense' is not a writable memory type" in written["error"]
    assert "{" not in written["error"]


def test_a_garbage_cursor_is_refused_and_a_real_one_pages_on(seeded: SyncClient) -> None:
    for cursor in ("garbage", "../../etc/passwd", "areas/x.txt", "z" * 5000):
        envelope = seeded.call("memory_list", {"cursor": cursor})
        assert envelope["ok"] is False, (cursor, envelope)  # before: a first page, silently
        assert envelope["code"] == "ERR_INVALID_FLAG"
        assert envelope["details"]["field"] == "cursor"
        assert envelope["error"].startswith("cursor: ")
    first = seeded.call("memory_list", {"limit": 1})
    cursor = first["data"]["next_cursor"]
    assert cursor == "areas/inbox/bounded-0.html"
    second = seeded.call("memory_list", {"limit": 1, "cursor": cursor})
    assert [f["path"] for f in second["data"]["files"]] == ["areas/inbox/bounded-1.html"]
    # A cursor whose memory has moved since still pages on from where it was.
    assert seeded.call("memory_archive", {"path": cursor, "reason": "moved"})["ok"]
    after = seeded.call("memory_list", {"limit": 1, "cursor": cursor})
    assert [f["path"] for f in after["data"]["files"]] == ["areas/inbox/bounded-1.html"]
    assert seeded.call("memory_list", {"cursor": ""})["ok"] is True  # empty: no cursor


def _list_fields(model: type[BaseModel]) -> list[str]:
    """The fields of a model whose value may be a list or a mapping."""
    found = []
    for name, info in model.model_fields.items():
        text = repr(info.annotation)
        if "list[" in text or "dict[" in text or typing.get_origin(info.annotation) is list:
            found.append(name)
    return found


SWEEP = [(spec.name, field) for spec in TOOLS for field in _list_fields(spec.model)]


def test_the_sweep_finds_the_list_fields() -> None:
    assert ("memory_search", "tags") in SWEEP and ("memory_write_batch", "ops") in SWEEP
    assert ("memory_reinforce", "paths") in SWEEP and ("task_add", "blocks") in SWEEP
    assert len(SWEEP) >= 17


@pytest.mark.parametrize(("tool", "field"), SWEEP, ids=[f"{t}.{f}" for t, f in SWEEP])
def test_every_list_field_of_every_tool_is_bounded(tool: str, field: str) -> None:
    spec = next(s for s in TOOLS if s.name == tool)
    schema = spec.input_schema()["properties"][field]
    limit = schema["maxItems"]  # the bound is in the schema an agent reads
    assert isinstance(limit, int) and 0 < limit <= 10_000
    items: list[Any] = [{"op": "archive", "path": "areas/a.html"}] * (limit + 1)
    if field != "ops":
        items = ["areas/inbox/x.html"] * (limit + 1)
    arguments: dict[str, Any] = {field: items}
    envelope = call_tool(_never, tool, arguments)
    assert envelope["ok"] is False
    problems = envelope["details"]["errors"]
    assert {"field": field, "kind": "input_too_large", "limit": limit} in [
        {k: p.get(k) for k in ("field", "kind", "limit")} for p in problems
    ], envelope
