"""MCP inputs and resources refuse what they cannot serve: huge queries, bad names, facets.

In process: `call_tool` and `read_resource` are what the server calls, so
these need no spawned server.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from memhtml.contracts.errors import InputTooLargeError, InvalidPathError
from memhtml.index.retrieval import MAX_QUERY_CHARS
from memhtml.mcp.inputs import ListInput, RecallInput, SearchInput, TraceSearchInput
from memhtml.mcp.resources import read_resource
from memhtml.mcp.tools import TOOLS_BY_NAME, call_tool

QUERY_TOOLS = ("memory_search", "memory_recall", "trace_search")


@pytest.fixture
def written(corpus: Any) -> Any:
    corpus.write("A fact", claim="The VIP is drained nightly.", path="areas/inbox/a-fact.html")
    return corpus


def _never(*_: Any) -> Any:
    raise AssertionError("the corpus was opened for an input that must be refused first")


@pytest.mark.parametrize("model", [SearchInput, RecallInput, TraceSearchInput])
def test_query_models_refuse_an_oversized_query(model: Any) -> None:
    assert model.model_validate({"query": "w" * MAX_QUERY_CHARS}).query
    with pytest.raises(ValidationError) as exc:
        model.model_validate({"query": "w" * (MAX_QUERY_CHARS + 1)})
    (error,) = exc.value.errors()
    assert error["type"] == "input_too_large"
    assert "4,096" in error["msg"]


@pytest.mark.parametrize("name", QUERY_TOOLS)
def test_query_tools_refuse_a_10_mb_query_before_any_work(name: str) -> None:
    env = call_tool(_never, name, {"query": "word " * 2_000_000})
    assert env["ok"] is False
    assert "at most 4,096" in env["error"]
    assert env["details"]["errors"][0]["kind"] == "input_too_large"
    assert env["code"] == "ERR_INPUT_TOO_LARGE"


@pytest.mark.parametrize("name", QUERY_TOOLS)
def test_query_tools_answer_the_dedicated_code(name: str) -> None:
    env = call_tool(_never, name, {"query": "q" * (MAX_QUERY_CHARS + 1)})
    assert env["code"] == InputTooLargeError.code


def test_query_schema_names_the_limit() -> None:
    for name in QUERY_TOOLS:
        prop = TOOLS_BY_NAME[name].input_schema()["properties"]["query"]
        assert prop["maxLength"] == MAX_QUERY_CHARS


def test_core_refuses_an_oversized_query_with_the_dedicated_code(written: Any) -> None:
    # What memory_search and memory_recall reach when a caller skips the input model.
    for call in (written.search, written.recall):
        with pytest.raises(InputTooLargeError) as exc:
            call("q" * (MAX_QUERY_CHARS + 1))
        assert exc.value.code == "ERR_INPUT_TOO_LARGE" and exc.value.exit_code == 2
        assert exc.value.details["limit"] == MAX_QUERY_CHARS
    env = call_tool(lambda: written, "memory_search", {"query": "VIP"})
    assert env["ok"] is True and env["data"]["hits"]


@pytest.mark.parametrize("facets", [{"team": "core"}, ["team=core"]], ids=["object", "list"])
def test_memory_list_refuses_non_empty_facets(facets: Any) -> None:
    with pytest.raises(ValidationError) as exc:
        ListInput.model_validate({"facets": facets})
    assert exc.value.errors()[0]["type"] == "unsupported_filter"
    env = call_tool(_never, "memory_list", {"facets": facets})
    assert env["ok"] is False
    assert env["code"] == "ERR_INVALID_FLAG"
    assert "memory_search" in env["error"]


def test_memory_list_accepts_empty_or_absent_facets(written: Any) -> None:
    cases: list[dict[str, Any]] = [{}, {"facets": {}}, {"facets": []}, {"facets": None}]
    for args in cases:
        env = call_tool(lambda: written, "memory_list", args)
        assert env["ok"] is True, env
        assert [f["path"] for f in env["data"]["files"]] == ["areas/inbox/a-fact.html"]


@pytest.mark.parametrize(
    "uri",
    [
        "memhtml://file/areas/" + "a" * 300 + ".html",
        "memhtml://file/areas/inbox/" + "%C3%A9" * 130 + ".html",
        "memhtml://file/areas/inbox/x%E2%80%AElmth.html",
        "memhtml://file/areas/inbox/%E2%80%8Bx.html",
        "memhtml://file/areas/%252e%252e/inbox/a-fact.html",
        "memhtml://file/areas/inbox%252fa-fact.html",
        "memhtml://at/abcdef1/areas/" + "a" * 300 + ".html",
    ],
    ids=[
        *("long", "long-multibyte", "rlo", "zwsp"),
        *("double-escaped-dots", "double-escaped-slash", "at-long"),
    ],
)
def test_file_resource_refuses_bad_names_as_invalid_path(written: Any, uri: str) -> None:
    with pytest.raises(InvalidPathError):
        read_resource(lambda: written, uri)


@pytest.mark.parametrize(
    "tool", ["memory_read", "memory_archive", "memory_resolve", "memory_neighbors"]
)
def test_path_tools_refuse_a_long_name_as_invalid_path(tool: str) -> None:
    env = call_tool(_never, tool, {"path": "areas/" + "a" * 300 + ".html", "reason": None})
    assert env["ok"] is False
    assert env["code"] == "ERR_INVALID_PATH", env


def test_a_valid_memory_still_reads_back_through_the_resource(written: Any) -> None:
    text = read_resource(lambda: written, "memhtml://file/areas/inbox/a-fact.html").text
    assert text.startswith("# A fact")
