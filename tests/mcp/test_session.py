"""One real stdio session: the tool list and schemas, every tool, every resource, bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

# The original's input fields: (required, optional). Ours may add (OURS).
ORIGINAL: dict[str, tuple[set[str], set[str]]] = {
    "memory_write": (
        {"title", "memory_type"},
        {
            "body",
            "article_html",
            "path",
            "strict_path",
            "workspace",
            "tags",
            "entities",
            "importance",
            "confidence",
            "session_id",
            "prompt_id",
            "turn_uuid",
        },
    ),
    "memory_write_batch": (
        {"ops"},
        {
            "continue_on_error",
            "detect_conflicts",
            "detect_near_duplicates",
            "consolidate",
            "session_id",
            "prompt_id",
            "turn_uuid",
        },
    ),
    "memory_read": ({"path"}, {"session_id"}),
    "memory_search": (
        {"query"},
        {
            "limit",
            "memory_types",
            "workspace",
            "tags",
            "entity",
            "facets",
            "include_archived",
            "as_of",
        },
    ),
    "memory_recall": ({"query"}, {"budget_chars", "workspace"}),
    "memory_correct": ({"target_path", "title", "reason"}, {"body", "article_html", "session_id"}),
    "memory_link": ({"src_path", "rel", "dst_path"}, {"strength"}),
    "memory_neighbors": ({"path"}, {"depth", "rels", "limit"}),
    "memory_resolve": ({"path"}, set()),
    "memory_archive": ({"path", "reason"}, set()),
    "memory_reinforce": ({"paths", "signal"}, set()),
    "memory_list": (
        set(),
        {"memory_type", "workspace", "tag", "entity", "facets", "para", "limit", "cursor"},
    ),
    "memory_status": (set(), set()),
    "trace_search": ({"query"}, {"cwd", "since", "limit"}),
    "trace_links": (set(), {"session_id", "path"}),
}
# Tools the original does not have (ours), with their input fields: (required, optional).
OUR_TOOLS: dict[str, tuple[set[str], set[str]]] = {
    "task_add": (
        {"title"},
        {
            "claim",
            "body",
            "status",
            "due",
            "workspace",
            "tags",
            "entities",
            "blocks",
            "subtask_of",
            "session_id",
            "prompt_id",
            "turn_uuid",
            "allow_secret",
        },
    ),
    "task_status": ({"path", "status"}, set()),
    "task_list": (set(), {"status", "due_before", "workspace", "include_done", "limit"}),
    "exec": ({"script"}, {"sha", "timeout_ms", "memory_mb"}),
}
OURS: dict[str, set[str]] = {
    "memory_write": {"claim", "event_at", "allow_secret"},
    "memory_search": {"explain", "exact"},
    "memory_recall": {"memory_types", "tags", "entity", "include_archived", "as_of"},
    "memory_correct": {"claim", "memory_type", "allow_secret"},
    "memory_list": {"include_archived"},
    "trace_search": {"session_id"},
    "memory_write_batch": {"strict", "allow_secret"},
}


def test_memory_write_refuses_a_secret_unless_allowed(client: Any) -> None:
    from memhtml.eval.secret_samples import tokens

    tok = tokens()["github-pat"]
    write = {"title": "Bot token", "memory_type": "semantic", "claim": f"Push with {tok} now."}
    refused = client.call("memory_write", write)
    assert refused["ok"] is False and refused["code"] == "ERR_SECRET_DETECTED", refused
    assert refused["details"] == {"field": "claim", "kind": "github-pat"}
    assert tok not in str(refused)
    batch = client.call("memory_write_batch", {"ops": [write]})
    assert batch["ok"] is False and batch["code"] == "ERR_SECRET_DETECTED", batch
    landed = client.call("memory_write", {**write, "allow_secret": True})
    assert landed["ok"], landed


@pytest.fixture(scope="module")
def tools(client: Any) -> dict[str, Any]:
    return {t.name: t for t in client.list_tools().tools}


@pytest.fixture(scope="module")
def seeded(client: Any) -> dict[str, dict[str, Any]]:
    """A few memories written through the server."""
    out = {}
    for key, title, claim, tags in (
        ("wal", "WAL mode", "SQLite in WAL mode admits one writer and many readers.", ["sqlite"]),
        ("busy", "Busy timeout", "A busy timeout makes a blocked SQLite writer retry.", ["sqlite"]),
        (
            "flock",
            "Repository lock",
            "An flock on a file in .git serializes memhtml writers.",
            ["git"],
        ),
    ):
        env = client.call(
            "memory_write",
            {
                "title": title,
                "memory_type": "semantic",
                "claim": claim,
                "tags": tags,
                "entities": ["tool:sqlite"],
                "importance": 6,
                "confidence": 0.9,
                "session_id": "sess-1",
            },
        )
        assert env["ok"], env
        out[key] = env["data"]
    return out


# -- listing ---------------------------------------------------------------------------
def test_tool_names_are_the_originals(tools: dict[str, Any]) -> None:
    assert set(tools) == set(ORIGINAL) | set(OUR_TOOLS)
    assert len(ORIGINAL) == 15 and len(tools) == 15 + len(OUR_TOOLS)


@pytest.mark.parametrize("name", sorted(OUR_TOOLS))
def test_our_tools_have_described_schemas(tools: dict[str, Any], name: str) -> None:
    schema = tools[name].input_schema
    required, optional = OUR_TOOLS[name]
    assert set(schema["properties"]) == required | optional
    assert set(schema.get("required", [])) == required
    assert schema.get("additionalProperties") is False
    for field, prop in schema["properties"].items():
        assert prop.get("description"), f"{name}.{field} has no description"
        if field not in required:
            assert {"type": "null"} in prop.get("anyOf", []), f"{name}.{field} refuses null"
    description = tools[name].description
    assert "Cost" in description and "envelope" in description


@pytest.mark.parametrize("name", sorted(ORIGINAL))
def test_input_schema_has_the_original_field_names(tools: dict[str, Any], name: str) -> None:
    schema = tools[name].input_schema
    required, optional = ORIGINAL[name]
    assert schema["type"] == "object"
    assert set(schema["properties"]) == required | optional | OURS.get(name, set())
    assert set(schema.get("required", [])) == required
    assert schema.get("additionalProperties") is False
    for field, prop in schema["properties"].items():
        assert prop.get("description"), f"{name}.{field} has no description"
    description = tools[name].description
    assert "Cost" in description and "envelope" in description


def test_optional_fields_accept_null(tools: dict[str, Any]) -> None:
    for name, (required, _) in ORIGINAL.items():
        for field, prop in tools[name].input_schema["properties"].items():
            if field in required:
                continue
            assert {"type": "null"} in prop.get("anyOf", []), f"{name}.{field} refuses null"


def test_vocabularies_are_enumerated(tools: dict[str, Any]) -> None:
    write = tools["memory_write"].input_schema["properties"]
    assert "arc" not in write["memory_type"]["enum"]
    assert "semantic" in write["memory_type"]["enum"]
    link = tools["memory_link"].input_schema["properties"]
    assert "caused_by" in link["rel"]["enum"]
    assert "from_session" not in link["rel"]["enum"]


def test_resources_and_templates_are_listed(client: Any) -> None:
    templates = {t.uri_template for t in client.list_resource_templates().resource_templates}
    assert templates == {
        "memhtml://file/{path}",
        "memhtml://at/{commit}/{path}",
        "memhtml://sleep/{run_id}",
    }
    assert {str(r.uri) for r in client.list_resources().resources} == {"memhtml://manifest"}


# -- every tool ----------------------------------------------------------------------------
def test_every_tool_answers_its_envelope(client: Any, seeded: dict[str, Any]) -> None:
    wal, busy, flock = seeded["wal"]["path"], seeded["busy"]["path"], seeded["flock"]["path"]
    assert seeded["wal"]["created"] is True and seeded["wal"]["commit_sha"]

    def ok(name: str, args: dict[str, Any], rtype: str) -> dict[str, Any]:
        env = client.call(name, args)
        assert env["ok"], env
        assert env["type"] == rtype
        return env["data"]

    batch = ok(
        "memory_write_batch",
        {
            "ops": [
                {
                    "title": "Checkpoint",
                    "memory_type": "procedural",
                    "body": "Run a WAL checkpoint after a bulk load. It keeps the -wal file small.",
                },
                {"op": "link", "src_path": busy, "rel": "supports", "dst_path": wal},
            ],
            "session_id": "sess-2",
        },
        "batch.applied",
    )
    assert batch["summary"]["written"] == 1 and batch["summary"]["linked"] == 1
    assert batch["commit_sha"]
    assert "unsupported" not in batch
    checkpoint = batch["results"][0]["path"]

    detail = ok("memory_read", {"path": wal, "session_id": None}, "memory.detail")
    assert detail["gist"].startswith("SQLite in WAL mode")
    assert detail["metas"]["memhtml-session"] == "sess-1"
    provenance = ok("memory_read", {"path": checkpoint}, "memory.detail")
    assert provenance["metas"]["memhtml-session"] == "sess-2"  # batch provenance inherited

    hits = ok(
        "memory_search",
        {"query": "one writer many readers", "limit": 5, "tags": ["sqlite"], "explain": True},
        "memory.hits",
    )
    assert hits["hits"][0]["path"] == wal
    assert set(hits["arms"]) >= {"fts", "recency"}
    assert (
        ok("memory_search", {"query": "writer", "facets": {"nothing": "x"}}, "memory.hits")["hits"]
        == []
    )

    pack = ok("memory_recall", {"query": "sqlite writer", "budget_chars": 2000}, "recall.pack")
    assert pack["memories"]["disclosed"]

    ok("memory_link", {"src_path": flock, "rel": "relates-to", "dst_path": wal}, "memory.linked")
    graph = ok("memory_neighbors", {"path": wal, "depth": 2}, "memory.neighbors")
    assert {n["path"] for n in graph["nodes"]} == {busy, flock}
    only = ok("memory_neighbors", {"path": wal, "rels": ["supports"]}, "memory.neighbors")
    assert [n["path"] for n in only["nodes"]] == [busy]

    corrected = ok(
        "memory_correct",
        {
            "target_path": busy,
            "title": "Busy timeout",
            "reason": "more precise",
            "claim": "A busy timeout makes a blocked SQLite connection retry for up to N ms.",
        },
        "memory.corrected",
    )
    assert corrected["archive_path"].startswith("archive/")
    resolved = ok("memory_resolve", {"path": busy}, "memory.resolved")
    assert resolved["resolved"] == corrected["path"] and resolved["live"] is True

    archived = ok("memory_archive", {"path": checkpoint, "reason": "obsolete"}, "memory.archived")
    assert archived["archive_path"].endswith(checkpoint)

    reinforced = ok(
        "memory_reinforce",
        {"paths": [flock, wal, "areas/none.html"], "signal": "positive"},
        "memory.reinforced",
    )
    # A read a moment ago does not swallow the outcome: the two cooldowns are separate.
    assert reinforced["bumped"] == [flock, wal] and reinforced["missing"] == ["areas/none.html"]
    again = ok("memory_reinforce", {"paths": [wal], "signal": "negative"}, "memory.reinforced")
    assert again["cooled_down"] == [wal]  # a second outcome inside the cooldown is throttled

    page = ok("memory_list", {"memory_type": "semantic", "limit": 2}, "memory.list")
    assert page["count"] == 2 and page["next_cursor"]
    rest = ok(
        "memory_list", {"memory_type": "semantic", "cursor": page["next_cursor"]}, "memory.list"
    )
    assert {f["path"] for f in page["files"]}.isdisjoint(f["path"] for f in rest["files"])
    assert ok("memory_list", {"para": "archive"}, "memory.list")["count"] == 2

    status = ok("memory_status", {}, "status.health")
    assert status["index_fresh"] is True and status["dirty"] is False
    assert status["archived_count"] == 2

    traces = ok("trace_search", {"query": "sqlite"}, "trace.sessions")
    assert traces["hits"] == [] and traces["indexed"] is False  # no `trace index` ran yet
    assert "trace index" in traces["note"]
    links = ok("trace_links", {"session_id": "sess-1"}, "trace.links")
    assert {x["link_kind"] for x in links["links"]} == {"wrote"}  # from the memhtml-session metas
    assert links["links"] and {x["session_id"] for x in links["links"]} == {"sess-1"}


def test_text_content_is_the_same_envelope(client: Any) -> None:
    result = client.raw("memory_status", {})
    assert json.loads(result.content[0].text) == result.structured_content
    failed = client.raw("memory_read", {"path": "areas/no-such.html"})
    assert failed.is_error is True
    assert json.loads(failed.content[0].text)["code"] == "ERR_PATH_NOT_FOUND"


def test_all_optional_fields_may_be_null(client: Any) -> None:
    env = client.call(
        "memory_write",
        {
            "title": "Nulls",
            "memory_type": "agent_insight",
            "claim": "Every optional may be null.",
            "body": None,
            "article_html": None,
            "path": None,
            "strict_path": None,
            "workspace": None,
            "tags": None,
            "entities": None,
            "importance": None,
            "confidence": None,
            "event_at": None,
            "session_id": None,
            "prompt_id": None,
            "turn_uuid": None,
        },
    )
    assert env["ok"], env
    listed = client.call("memory_list", {k: None for k in ORIGINAL["memory_list"][1]})
    assert listed["ok"], listed


def test_batch_checks_conflicts_restatements_and_consolidates(client: Any) -> None:
    def write(claim: str, title: str) -> dict[str, Any]:
        return {"title": title, "memory_type": "semantic", "claim": claim}

    first = client.call(
        "memory_write_batch", {"ops": [write("The MCP pool ceiling is 64.", "MCP pool")]}
    )
    old = first["data"]["results"][0]["path"]
    env = client.call(
        "memory_write_batch",
        {
            "ops": [
                write("The MCP pool ceiling is 128.", "MCP pool raised"),
                write("The MCP pool ceiling is 64 connections per node.", "MCP pool detail"),
            ],
            "detect_conflicts": True,
            "detect_near_duplicates": True,
        },
    )
    assert env["ok"], env
    raised, detail = env["data"]["results"]
    assert "unsupported" not in env["data"]
    assert raised["conflict"]["path"] == old and raised["conflict"]["batch_index"] is None
    # the detail restates the old value and conflicts with the raised one, an earlier op
    assert detail["conflict"]["batch_index"] == 0
    assert detail["conflict"]["path"] == raised["path"]
    assert [n["path"] for n in detail["near_duplicates"]] == [old]
    assert env["data"]["checks"]["conflicts"] == 2
    held = client.call(
        "memory_write_batch",
        {"ops": [write("The MCP pool ceiling is 256.", "MCP pool again")], "strict": True},
    )
    assert not held["ok"] and held["code"] == "ERR_CONFLICT"
    assert held["details"]["commit_sha"] is None
    merged = client.call(
        "memory_write_batch",
        {
            "ops": [write("The MCP pool ceiling is 512.", "MCP pool final")],
            "consolidate": "last-wins",
        },
    )
    assert merged["ok"], merged
    result = merged["data"]["results"][0]
    assert len(result["superseded"]) == 3  # the 64, the 128 and the refinement of 64
    listed = client.call("memory_list", {})
    gists = [f["gist"] for f in listed["data"]["files"] if "MCP pool" in f["gist"]]
    assert gists == ["The MCP pool ceiling is 512."]


def test_batch_is_atomic(client: Any) -> None:
    env = client.call(
        "memory_write_batch",
        {
            "ops": [
                {"title": "Would land", "memory_type": "semantic", "body": "This op is fine."},
                {"op": "archive", "path": "areas/not-there.html"},
            ]
        },
    )
    assert env["ok"] is False and env["code"] == "ERR_PATH_NOT_FOUND"
    results = env["details"]["results"]
    assert results[0] == {"index": 0, "op": "write", "ok": False, "skipped": True}
    assert env["details"]["commit_sha"] is None
    found = client.call("memory_search", {"query": "would land"})
    assert all(h["title"] != "Would land" for h in found["data"]["hits"])


def test_accepted_but_ignored_fields_are_named(client: Any, seeded: dict[str, Any]) -> None:
    env = client.call(
        "memory_link",
        {
            "src_path": seeded["flock"]["path"],
            "rel": "supports",
            "dst_path": seeded["wal"]["path"],
            "strength": 0.5,
        },
    )
    assert env["ok"] and env["data"]["unsupported"] == ["strength"]
    read = client.call("memory_read", {"path": seeded["wal"]["path"], "session_id": "s"})
    assert "unsupported" not in read["data"] and read["data"]["session_linked"] is True


def test_duplicate_write_is_deduped(client: Any, seeded: dict[str, Any]) -> None:
    env = client.call(
        "memory_write",
        {
            "title": "WAL again",
            "memory_type": "semantic",
            "claim": "SQLite in WAL mode admits one writer and many readers.",
        },
    )
    assert env["ok"] and env["data"]["deduped"] is True
    assert env["data"]["existing_path"] == seeded["wal"]["path"]


# -- invalid input -----------------------------------------------------------------------------
BAD: list[tuple[str, dict[str, Any], str]] = [
    ("memory_write", {"title": 42, "memory_type": "semantic", "claim": "x."}, "ERR_INVALID_FLAG"),
    ("memory_write", {"memory_type": "semantic", "claim": "x."}, "ERR_MISSING_ARGUMENT"),
    ("memory_write", {"title": "t", "memory_type": "arc", "claim": "x."}, "ERR_INVALID_FLAG"),
    (
        "memory_write",
        {"title": "t", "memory_type": "semantic", "claim": "x.", "importance": 11},
        "ERR_INVALID_FLAG",
    ),
    (
        "memory_write",
        {"title": "t", "memory_type": "semantic", "claim": "x.", "colour": "red"},
        "ERR_INVALID_FLAG",
    ),
    (
        "memory_write",
        {"title": "t", "memory_type": "semantic", "claim": "x.", "path": "../outside.html"},
        "ERR_INVALID_PATH",
    ),
    ("memory_write", {"title": "t", "memory_type": "semantic"}, "ERR_INVALID_MEMORY"),
    ("memory_read", {"path": "../../etc/passwd"}, "ERR_INVALID_PATH"),
    ("memory_read", {"path": "/areas/x.html"}, "ERR_INVALID_PATH"),
    ("memory_read", {}, "ERR_MISSING_ARGUMENT"),
    ("memory_read", {"path": ["areas/x.html"]}, "ERR_INVALID_FLAG"),
    ("memory_search", {"query": ""}, "ERR_INVALID_FLAG"),
    ("memory_search", {"query": "x", "limit": "many"}, "ERR_INVALID_FLAG"),
    ("memory_search", {"query": "x", "memory_types": ["gossip"]}, "ERR_INVALID_FLAG"),
    ("memory_search", {"query": "x", "as_of": "last tuesday"}, "ERR_INVALID_FLAG"),
    (
        "memory_link",
        {"src_path": "areas/a.html", "rel": "loves", "dst_path": "areas/b.html"},
        "ERR_INVALID_FLAG",
    ),
    (
        "memory_link",
        {"src_path": "areas/a.html", "rel": "from_session", "dst_path": "areas/b.html"},
        "ERR_INVALID_FLAG",
    ),
    (
        "memory_link",
        {"src_path": "areas/../a.html", "rel": "supports", "dst_path": "areas/b.html"},
        "ERR_INVALID_PATH",
    ),
    ("memory_neighbors", {"path": "areas/a.html", "rels": ["blocks"]}, "ERR_INVALID_FLAG"),
    ("memory_correct", {"target_path": "areas/a.html", "title": "t"}, "ERR_MISSING_ARGUMENT"),
    ("memory_archive", {"path": "projects/../../x.html", "reason": None}, "ERR_INVALID_PATH"),
    ("memory_archive", {"path": "areas/missing.html", "reason": None}, "ERR_PATH_NOT_FOUND"),
    ("memory_reinforce", {"paths": ["areas/a.html"], "signal": "great"}, "ERR_INVALID_FLAG"),
    ("memory_reinforce", {"paths": ["../a.html"], "signal": "neutral"}, "ERR_INVALID_PATH"),
    ("memory_resolve", {"path": "nowhere/x.html"}, "ERR_INVALID_PATH"),
    ("memory_list", {"para": "attic"}, "ERR_INVALID_FLAG"),
    ("memory_list", {"facets": ["no-equals-sign"]}, "ERR_INVALID_FLAG"),
    ("memory_write_batch", {"ops": "not a list"}, "ERR_INVALID_FLAG"),
    ("memory_write_batch", {"ops": [{"op": "write", "title": 3}]}, "ERR_INVALID_OP"),
    ("memory_write_batch", {"ops": [], "consolidate": "first-wins"}, "ERR_INVALID_FLAG"),
    ("memory_status", {"verbose": True}, "ERR_INVALID_FLAG"),
    ("trace_links", {}, "ERR_INVALID_MEMORY"),
    ("trace_links", {"path": "/areas/../x.html"}, "ERR_INVALID_PATH"),
    ("no_such_tool", {}, "ERR_UNKNOWN_COMMAND"),
]


@pytest.mark.parametrize(
    ("name", "args", "code"), BAD, ids=[f"{n}-{c}-{i}" for i, (n, _, c) in enumerate(BAD)]
)
def test_invalid_input_is_a_coded_error(
    client: Any, name: str, args: dict[str, Any], code: str
) -> None:
    env = client.call(name, args)
    assert env["ok"] is False
    assert env["code"] == code, env
    assert env["error"]


def test_validation_errors_name_every_field(client: Any) -> None:
    env = client.call("memory_write", {"title": 1, "memory_type": "nope"})
    fields = {e["field"] for e in env["details"]["errors"]}
    assert fields == {"title", "memory_type"}


# -- resources ------------------------------------------------------------------------------------
def test_file_resource_reads_a_nested_path_and_counts_as_access(
    client: Any, seeded: dict[str, Any], module_repo: Path
) -> None:
    path = seeded["flock"]["path"]
    assert path.count("/") >= 2
    res = client.read_resource(f"memhtml://file/{path}")
    text = res.contents[0].text
    assert text.startswith("# Repository lock\n\n")
    assert "serializes memhtml writers" in text
    assert res.contents[0].mime_type == "text/plain"
    with sqlite3.connect(module_repo / ".memhtml" / "state.db") as db:
        row = db.execute("SELECT access_count FROM access WHERE path = ?", (path,)).fetchone()
    assert row is not None and row[0] >= 1


def test_file_resource_refuses_traversal_and_missing(client: Any) -> None:
    for uri in ("memhtml://file/areas/%2e%2e/%2e%2e/x.html", "memhtml://file/../x.html"):
        err = client.read_error(uri)
        assert err.data["code"] == "ERR_INVALID_PATH"
    assert client.read_error("memhtml://file/areas/none.html").data["code"] == "ERR_PATH_NOT_FOUND"


def test_at_resource_reads_a_file_as_of_a_commit(client: Any, seeded: dict[str, Any]) -> None:
    wal = seeded["wal"]
    sha = wal["commit_sha"]
    for commit in (sha, sha[:7]):
        res = client.read_resource(f"memhtml://at/{commit}/{wal['path']}")
        assert res.contents[0].mime_type == "text/html"
        assert "SQLite in WAL mode admits one writer" in res.contents[0].text
    # Written before the flock memory existed: the file is absent at that commit.
    missing = client.read_error(f"memhtml://at/{sha}/{seeded['flock']['path']}")
    assert missing.data["code"] == "ERR_PATH_NOT_FOUND"


@pytest.mark.parametrize("commit", ["HEAD", "main", "HEAD~1", "abc", "g" * 40])
def test_at_resource_refuses_refs_that_move(
    client: Any, seeded: dict[str, Any], commit: str
) -> None:
    err = client.read_error(f"memhtml://at/{commit}/{seeded['wal']['path']}")
    assert err.data["code"] == "ERR_INVALID_FLAG"
    assert "sha" in err.data["error"]


def test_at_resource_unknown_sha_is_not_found(client: Any, seeded: dict[str, Any]) -> None:
    err = client.read_error(f"memhtml://at/{'0' * 40}/{seeded['wal']['path']}")
    assert err.data["code"] == "ERR_PATH_NOT_FOUND"


def test_sleep_resource_is_a_clear_not_found(client: Any) -> None:
    err = client.read_error("memhtml://sleep/2026-01-01-abc")
    assert err.data["code"] == "ERR_PATH_NOT_FOUND"
    assert "no sleep report" in err.data["error"]
    assert client.read_error("memhtml://sleep/..%2Fx").data["code"] == "ERR_INVALID_PATH"


def test_manifest_resource_is_the_cli_manifest(client: Any) -> None:
    from memhtml.surface.manifest import manifest

    res = client.read_resource("memhtml://manifest")
    assert res.contents[0].mime_type == "application/json"
    data = json.loads(res.contents[0].text)
    assert data == json.loads(json.dumps(manifest()))
    assert "serve mcp" in {c["name"] for c in data["commands"]}


def test_unknown_resource_is_not_found(client: Any) -> None:
    assert client.read_error("memhtml://nothing/x").data["code"] == "ERR_PATH_NOT_FOUND"
    assert client.read_error("https://example.com/x").data["code"] == "ERR_PATH_NOT_FOUND"
