"""The trace commands end to end: CLI envelopes, links through real writes, and the MCP tools."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.cli.main import run
from memhtml.mcp.tools import call_tool
from memhtml.trace.synth import SynthSession, append_exchanges


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def cli(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run(list(argv), stdout=out)
    return code, json.loads(out.getvalue())


@pytest.fixture
def env(repo: Path, projects: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMHTML_ROOT", str(repo))
    monkeypatch.setenv("MEMHTML_TRACE_ROOT", str(projects.parent))  # the original's ~/.claude
    return repo


def test_index_search_and_reindex(env: Path, sessions: list[SynthSession], capsys) -> None:
    code, before = cli("trace", "search", "anything")
    assert code == 0 and before["data"]["indexed"] is False and before["data"]["hits"] == []
    code, first = cli("trace", "index")
    assert code == 0 and first["type"] == "trace.report"
    data = first["data"]
    assert data["rescanned"] == data["files_seen"] > len(sessions) - 1
    assert data["plane"]["sessions"] == len(sessions)
    assert capsys.readouterr().err == ""  # no progress off a terminal
    target = sessions[4]
    code, found = cli("trace", "search", f'"{target.phrase}"', "--limit", "5")
    assert code == 0 and found["type"] == "trace.sessions"
    assert {h["session_id"] for h in found["data"]["hits"]} == {target.session_id}
    appended = append_exchanges(target, exchanges=1)
    code, second = cli("trace", "index", "--dense")
    assert second["data"]["tailed"] == 1 and second["data"]["bytes_read"] == appended
    shutil.rmtree(env / ".memhtml" / "traces")
    code, again = cli("trace", "index")
    assert again["data"]["plane"] == {**data["plane"], "turns": again["data"]["plane"]["turns"]}
    assert again["data"]["plane"]["turns"] > data["plane"]["turns"]


def test_usage_errors(env: Path) -> None:
    code, bad = cli("trace", "search", "x", "--since", "last tuesday")
    assert (code, bad["code"]) == (2, "ERR_INVALID_FLAG")
    code, big = cli("trace", "search", "x" * 5000)
    assert big["code"] == "ERR_INPUT_TOO_LARGE"
    code, limit = cli("trace", "search", "x", "--limit", "0")
    assert (code, limit["code"]) == (2, "ERR_INVALID_FLAG")
    code, none = cli("trace", "links")
    assert (code, none["code"]) == (1, "ERR_INVALID_MEMORY")
    code, path = cli("trace", "links", "--path", "../etc/passwd.html")
    assert path["code"] == "ERR_INVALID_PATH"


def test_a_missing_root_is_a_report_not_an_error(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHTML_TRACE_ROOT", str(env.parent / "no-such-dir"))
    code, out = cli("trace", "index")
    assert code == 0 and out["data"]["root_exists"] is False
    assert out["data"]["problem_counts"] == {"root_missing": 1}


def test_links_round_trip_a_memory_written_with_a_session(
    env: Path, sessions: list[SynthSession]
) -> None:
    sid = sessions[1].session_id
    cli("trace", "index")
    code, wrote = cli(
        "write",
        "--title",
        "WAL",
        "--type",
        "semantic",
        "--claim",
        "WAL admits one writer.",
        "--session-id",
        sid,
        "--prompt-id",
        "p-1",
        "--turn-uuid",
        "t-1",
    )
    assert code == 0
    path = wrote["data"]["path"]
    code, links = cli("trace", "links", "--session-id", sid)
    assert code == 0 and links["type"] == "trace.links"
    (link,) = links["data"]["links"]
    assert (link["path"], link["link_kind"], link["prompt_id"], link["turn_uuid"]) == (
        path,
        "wrote",
        "p-1",
        "t-1",
    )
    assert link["session_indexed"] is True
    assert links["data"]["sessions"][0]["session_id"] == sid
    code, read = cli("read", path, "--session-id", "reader-9")
    assert read["data"]["session_linked"] is True and "unsupported" not in read["data"]
    code, by_path = cli("trace", "links", "--path", "/" + path)
    kinds = {(x["session_id"], x["link_kind"]) for x in by_path["data"]["links"]}
    assert kinds == {(sid, "wrote"), ("reader-9", "read")}
    code, corrected = cli(
        "correct",
        path,
        "--claim",
        "WAL admits one writer and many readers.",
        "--session-id",
        "fixer-2",
    )
    assert code == 0
    code, after = cli("trace", "links", "--path", path)
    by_kind = {x["link_kind"]: x for x in after["data"]["links"]}
    assert by_kind["wrote"]["archived"] is True and by_kind["wrote"]["origin_path"] == path
    assert by_kind["corrected"]["session_id"] == "fixer-2"
    assert by_kind["corrected"]["path"] == corrected["data"]["path"]
    (env / ".memhtml" / "index.db").unlink()  # links survive an index rebuild
    shutil.rmtree(env / ".memhtml" / "traces")  # and the trace plane's removal
    code, rebuilt = cli("trace", "links", "--path", path)
    assert {(x["session_id"], x["link_kind"]) for x in rebuilt["data"]["links"]} == set(
        (x["session_id"], x["link_kind"]) for x in after["data"]["links"]
    )
    assert rebuilt["data"]["indexed"] is False


def test_a_person_at_a_terminal_gets_text_and_progress(
    env: Path, sessions: list[SynthSession], monkeypatch: pytest.MonkeyPatch
) -> None:
    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    out = Terminal()
    assert run(["trace", "index"], stdout=out) == 0
    assert out.getvalue().startswith("trace index ") and "appended to" in out.getvalue()
    assert "trace index" in err.getvalue()  # the progress line, on the terminal's stderr
    out = Terminal()
    run(["trace", "search", sessions[0].phrase], stdout=out)
    assert sessions[0].session_id[:12] in out.getvalue()
    out = Terminal()  # the 12 characters the search printed name the session
    assert run(["trace", "links", "--session-id", sessions[0].session_id[:12]], stdout=out) == 0
    assert out.getvalue().strip().endswith("wrote, corrected or read no memory")
    out = Terminal()  # an id nothing knows is said to be unknown, not answered "no links"
    assert run(["trace", "links", "--session-id", "nobody"], stdout=out) == 1
    assert "ERR_PATH_NOT_FOUND" in out.getvalue() and "'nobody'" in out.getvalue()


def test_mcp_tools_answer_what_the_cli_answers(env: Path, sessions: list[SynthSession]) -> None:
    cli("trace", "index")
    with memhtml.open(env) as corpus:
        written = corpus.write(
            title="Flock", type="semantic", claim="An flock serializes writers.", session_id="mcp-s"
        )
        get = lambda: corpus  # noqa: E731
        found = call_tool(get, "trace_search", {"query": sessions[3].phrase, "limit": 3})
        assert found["ok"] and found["type"] == "trace.sessions"
        assert {h["session_id"] for h in found["data"]["hits"]} == {sessions[3].session_id}
        scoped = call_tool(
            get, "trace_search", {"query": "the", "session_id": sessions[2].session_id}
        )
        assert {h["session_id"] for h in scoped["data"]["hits"]} == {sessions[2].session_id}
        read = call_tool(get, "memory_read", {"path": written["path"], "session_id": "mcp-r"})
        assert read["ok"] and read["data"]["session_linked"] is True
        links = call_tool(get, "trace_links", {"path": written["path"]})
        assert {(x["session_id"], x["link_kind"]) for x in links["data"]["links"]} == {
            ("mcp-s", "wrote"),
            ("mcp-r", "read"),
        }
        assert call_tool(get, "trace_links", {})["code"] == "ERR_INVALID_MEMORY"
        since = call_tool(get, "trace_search", {"query": "x", "since": "soon"})
        assert since["code"] == "ERR_INVALID_FLAG"


def test_mcp_trace_search_without_a_memory_root_is_empty(tmp_path: Path) -> None:
    from memhtml.ops.corpus import open_corpus

    env = call_tool(lambda: open_corpus(tmp_path / "nowhere"), "trace_search", {"query": "x"})
    assert env["ok"] and env["data"]["indexed"] is False and env["data"]["hits"] == []


def test_trace_links_on_a_terminal_is_a_table_naming_each_session(
    env: Path, sessions: list[SynthSession]
) -> None:
    from tests.cli.conftest import run_on_pty

    sid = sessions[2].session_id
    cli("trace", "index")
    code, wrote = cli(
        "write", "--title", "WAL", "--type", "semantic", "--claim", "WAL admits one writer.",
        "--session-id", sid,
    )  # fmt: skip
    path = wrote["data"]["path"]
    cli("read", path, "--session-id", "reader-9")
    code, text = run_on_pty(["trace", "links", "--session-id", sid[:8]])  # a prefix, as typed
    lines = text.splitlines()
    assert code == 0 and lines[0] == f"session {sid}: 1 link, 1 memory, 1 session", text
    assert lines[2].split() == ["when", "kind", "session", "memory"]
    assert lines[3].split()[-3:] == ["wrote", sid[:12], path]
    assert lines[5] == "sessions:" and lines[6].startswith(f"  {sid[:12]}  ")
    code, text = run_on_pty(["trace", "links", "--path", path])
    assert code == 0 and text.startswith(f"{path}: 2 links, 1 memory, 2 sessions")
    assert {line.split()[-3] for line in text.splitlines()[3:5]} == {"wrote", "read"}
    code, piped = cli("trace", "links", "--path", path)  # piped: the envelope, as before
    assert piped["type"] == "trace.links" and len(piped["data"]["links"]) == 2
