"""`memhtml exec` and the MCP `exec` tool: the doors, the envelope, the usage errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memhtml.cli.main import run
from memhtml.codemode import limits
from memhtml.contracts.envelope import SuccessEnvelope, validate_envelope
from memhtml.surface import commands_exec
from tests.codemode.conftest import commit, memory_html

COUNT = 'import { corpus } from "/workspace/lib/corpus.mjs"\nconsole.log(corpus().size)'
FIELDS = {
    "corpus_mount", "sha", "ref", "exit_code", "stdout", "stderr", "duration_ms",
    "timeout_ms", "timed_out", "files_read", "limit", "limits",
}  # fmt: skip


def call(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run(list(argv), stdout=out)
    return code, json.loads(out.getvalue())


@pytest.fixture
def root(repo: Path) -> Path:
    commit(repo, {"areas/one.html": memory_html("One."), "areas/two.html": memory_html("Two.")})
    return repo


def test_one_exec_report_naming_the_sha_it_read(root: Path) -> None:
    code, envelope = call("exec", "--repo", str(root), "--script", COUNT)
    assert code == 0
    assert isinstance(validate_envelope(envelope), SuccessEnvelope)
    assert envelope["type"] == "exec.report"
    data = envelope["data"]
    assert set(data) == FIELDS
    assert data["corpus_mount"] == "/mnt/memhtml"
    assert len(data["sha"]) == 40 and data["ref"] == "HEAD"
    assert (data["exit_code"], data["stdout"], data["files_read"]) == (0, "3\n", 3)
    assert data["timeout_ms"] == 30_000 and data["timed_out"] is False and data["limit"] is None


def test_a_throwing_script_is_exit_0_with_its_stack(root: Path) -> None:
    code, envelope = call("exec", "--repo", str(root), "--script", "throw new Error('no match')")
    assert code == 0
    assert envelope["data"]["exit_code"] == 1
    assert "Error: no match" in envelope["data"]["stderr"]


def test_dense_keeps_every_load_bearing_field(root: Path) -> None:
    code, envelope = call("exec", "--repo", str(root), "--dense", "--script", "console.log('{}')")
    assert code == 0
    assert FIELDS - {"limit"} <= set(envelope["data"])  # --dense drops only the null limit


def test_the_file_door_and_the_stdin_door(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "count.mjs"
    script.write_text(COUNT, encoding="utf-8")
    assert call("exec", "--repo", str(root), "--file", str(script))[1]["data"]["stdout"] == "3\n"
    for extra in ([], ["-"]):
        proc = subprocess.run(
            [sys.executable, "-m", "memhtml.cli", "exec", *extra, "--repo", str(root), "--dense"],
            input=COUNT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout
        assert json.loads(proc.stdout)["data"]["stdout"] == "3\n"


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--file", "a.mjs", "--script", "console.log(1)"], "ERR_INVALID_FLAG"),
        (["-", "--script", "console.log(1)"], "ERR_INVALID_FLAG"),
        (["script.mjs"], "ERR_UNEXPECTED_ARGUMENT"),
        (["--script", "   "], "ERR_MISSING_ARGUMENT"),
        (["--file", "/definitely/absent.mjs"], "ERR_PATH_NOT_FOUND"),
        (["--timeout-ms", "0", "--script", "1"], "ERR_INVALID_FLAG"),
        (["--timeout-ms", "-1", "--script", "1"], "ERR_INVALID_FLAG"),
        (["--timeout-ms", "600001", "--script", "1"], "ERR_INVALID_FLAG"),
        (["--memory-mb", "8", "--script", "1"], "ERR_INVALID_FLAG"),
    ],
)
def test_usage_errors_exit_2_before_anything_runs(root: Path, argv: list[str], code: str) -> None:
    exit_code, envelope = call("exec", "--repo", str(root), *argv)
    assert exit_code == 2, envelope
    assert envelope["code"] == code


def test_a_sha_that_does_not_exist_is_exit_1(root: Path) -> None:
    exit_code, envelope = call(
        "exec", "--repo", str(root), "--sha", "0" * 40, "--script", "console.log(1)"
    )
    assert exit_code == 1
    assert envelope["code"] == "ERR_INVALID_MEMORY"


def test_the_table_states_the_bounds_the_runtime_enforces() -> None:
    assert commands_exec.DEFAULT_TIMEOUT_MS == limits.DEFAULT_TIMEOUT_MS
    assert commands_exec.MAX_TIMEOUT_MS == limits.MAX_TIMEOUT_MS
    assert commands_exec.DEFAULT_MEMORY_MB == limits.DEFAULT_MEMORY_MB
    (command,) = commands_exec.EXEC_COMMANDS
    memory = next(p for p in command.params if p.name == "memory_mb")
    assert (memory.minimum, memory.maximum) == (limits.MIN_MEMORY_MB, limits.MAX_MEMORY_MB)


def test_the_mcp_tool_answers_the_same_report(root: Path) -> None:
    import memhtml
    from memhtml.mcp.tools import call_tool

    with memhtml.open(root, embedder="fake") as corpus:
        ok = call_tool(lambda: corpus, "exec", {"script": COUNT, "timeout_ms": 10_000})
        assert ok["type"] == "exec.report" and ok["data"]["stdout"] == "3\n"
        assert set(ok["data"]) == FIELDS
        stopped = call_tool(lambda: corpus, "exec", {"script": "for(;;){}", "timeout_ms": 300})
        assert stopped["data"]["timed_out"] is True and stopped["data"]["exit_code"] == 124
        assert call_tool(lambda: corpus, "exec", {"script": "1", "timeout_ms": 0})["code"] == (
            "ERR_INVALID_FLAG"
        )
        assert call_tool(lambda: corpus, "exec", {})["code"] == "ERR_MISSING_ARGUMENT"


def test_a_person_at_a_terminal_reads_the_output_then_one_line() -> None:
    from memhtml.cli.handlers.exec import human_run_script

    data = {
        "stdout": "3\n", "stderr": "", "exit_code": 0, "duration_ms": 12, "files_read": 3,
        "sha": "0123456789abcdef" * 2 + "01234567", "limit": None,
    }  # fmt: skip
    assert human_run_script(data) == "3\n[exit 0 in 12 ms, 3 files read at 0123456789ab]"
    stopped = {
        **data,
        "stdout": "",
        "stderr": "late\n",
        "exit_code": 124,
        "limit": {"name": "time"},
    }
    assert human_run_script(stopped).endswith("stopped by the time bound]")
