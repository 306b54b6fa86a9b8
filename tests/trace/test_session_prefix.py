"""A session id can be typed as a unique prefix, like a git hash (issue 32, item 4).

Every door that looks a session up (`trace search`/`trace links` and the MCP
`trace_search`/`trace_links` tools) takes the full id or a unique prefix of at
least four characters; an ambiguous prefix is ERR_AMBIGUOUS_ID listing the
candidates (capped), an unknown one ERR_PATH_NOT_FOUND. The doors that record a
session (write, correct, read --session-id) keep the id verbatim.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.cli.main import run
from memhtml.mcp.tools import call_tool
from memhtml.ops.traces import CANDIDATES_SHOWN, MIN_SESSION_PREFIX
from memhtml.trace.synth import SynthSession


def cli(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run(list(argv), stdout=out)
    return code, json.loads(out.getvalue())


@pytest.fixture
def env(repo: Path, projects: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMHTML_ROOT", str(repo))
    monkeypatch.setenv("MEMHTML_TRACE_ROOT", str(projects.parent))
    return repo


def _write(repo: Path, session: str, n: int) -> str:
    with memhtml.open(repo, embedder="fake") as c:
        return str(
            c.write(
                title=f"Fact {session} {n}",
                type="semantic",
                claim=f"Fact number {n} was written in {session}.",
                session_id=session,
            )["path"]
        )


def test_a_prefix_of_an_indexed_session_scopes_trace_search(
    env: Path, sessions: list[SynthSession]
) -> None:
    assert cli("trace", "index")[0] == 0
    target = sessions[2]
    short = target.session_id[:8]  # what AGENTS.md's examples use
    assert not any(s.session_id.startswith(short) for s in sessions if s is not target)
    code, full = cli("trace", "search", "the", "--session-id", target.session_id)
    code2, prefixed = cli("trace", "search", "the", "--session-id", short)
    assert code == code2 == 0
    assert prefixed["data"]["session_id"] == target.session_id
    assert prefixed["data"]["hits"] == full["data"]["hits"] and prefixed["data"]["hits"]
    assert {h["session_id"] for h in prefixed["data"]["hits"]} == {target.session_id}


def test_a_prefix_names_a_session_that_wrote_memories(env: Path) -> None:
    path = _write(env, "deploy-7f3a9c21-0b6e", 1)
    code, env_ = cli("trace", "links", "--session-id", "deploy-7f3a")
    assert code == 0, env_
    assert env_["data"]["session_id"] == "deploy-7f3a9c21-0b6e"
    assert [(x["path"], x["link_kind"]) for x in env_["data"]["links"]] == [(path, "wrote")]


def test_an_ambiguous_prefix_lists_the_candidates(env: Path, sessions: list[SynthSession]) -> None:
    cli("trace", "index")
    for sid in ("sess-aaaa-2", "sess-aaaa-1"):
        _write(env, sid, 1)
    for argv in (
        ("trace", "links", "--session-id", "sess-aaaa"),
        ("trace", "search", "fact", "--session-id", "sess-aa"),
    ):
        code, out = cli(*argv)
        assert code == 1 and out["code"] == "ERR_AMBIGUOUS_ID", out
        assert out["details"]["candidates"] == ["sess-aaaa-1", "sess-aaaa-2"]
        assert out["details"]["count"] == 2 and out["details"]["field"] == "session_id"
        assert "sess-aaaa-1, sess-aaaa-2" in out["error"] and "more characters" in out["error"]
    with memhtml.open(env, embedder="fake") as corpus:
        for tool, args in (
            ("trace_links", {"session_id": "sess-aaaa"}),
            ("trace_search", {"query": "fact", "session_id": "sess-aaaa"}),
        ):
            answer = call_tool(lambda: corpus, tool, args)
            assert answer["code"] == "ERR_AMBIGUOUS_ID", answer
            assert answer["details"]["candidates"] == ["sess-aaaa-1", "sess-aaaa-2"]
        one = call_tool(lambda: corpus, "trace_links", {"session_id": "sess-aaaa-1"})
        assert one["ok"] and one["data"]["session_id"] == "sess-aaaa-1"


def test_the_candidate_list_is_capped(env: Path) -> None:
    total = CANDIDATES_SHOWN + 2
    for n in range(total):
        _write(env, f"many-{n:02d}", n)
    code, out = cli("trace", "links", "--session-id", "many-")
    assert code == 1 and out["code"] == "ERR_AMBIGUOUS_ID"
    assert len(out["details"]["candidates"]) == CANDIDATES_SHOWN
    assert out["details"]["count"] == total and "and 2 more" in out["error"]


def test_an_exact_id_wins_over_the_longer_ids_it_prefixes(env: Path) -> None:
    short_path = _write(env, "sess-b", 1)
    _write(env, "sess-b-2", 2)
    code, out = cli("trace", "links", "--session-id", "sess-b")
    assert code == 0 and out["data"]["session_id"] == "sess-b"
    assert [x["path"] for x in out["data"]["links"]] == [short_path]


def test_short_and_unknown_ids(env: Path) -> None:
    tiny = _write(env, "s1", 1)  # a short id that is itself an id is fine
    code, out = cli("trace", "links", "--session-id", "s1")
    assert code == 0 and [x["path"] for x in out["data"]["links"]] == [tiny]
    code, out = cli("trace", "links", "--session-id", "s")
    assert code == 2 and out["code"] == "ERR_INVALID_FLAG"
    assert f"{MIN_SESSION_PREFIX} characters" in out["error"]
    code, out = cli("trace", "links", "--session-id", "zzzz-nothing")
    assert code == 1 and out["code"] == "ERR_PATH_NOT_FOUND"
    assert "'zzzz-nothing'" in out["error"] and out["details"]["field"] == "session_id"


def test_recording_a_read_keeps_the_id_verbatim(env: Path) -> None:
    path = _write(env, "abcd-1111", 1)
    code, out = cli("read", path, "--session-id", "abcd")
    assert code == 0 and out["data"]["session_linked"] is True
    code, out = cli("trace", "links", "--session-id", "abcd")  # now an id of its own
    assert code == 0 and out["data"]["session_id"] == "abcd"
    assert [(x["session_id"], x["link_kind"]) for x in out["data"]["links"]] == [("abcd", "read")]
