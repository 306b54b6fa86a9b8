"""The hook engine against every host's documented payload for every event, and against the
failures a turn must survive: garbage, a huge payload, a host that never closes stdin, a locked
index, a model that is not there, an unknown event."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memhtml.integrations.hook import PROMPT_HEADER, field, query_for_cwd
from memhtml.trace.synth import write_corpus
from tests.integrations.conftest import memhtml_argv, payload, run_hook

HOSTS = ("claude", "codex", "cursor", "opencode")
EVENTS = ("session-start", "user-prompt-submit", "pre-compact", "session-end")
# What a host reads back per event: the protocol, or None (it reads nothing; we print nothing).
READS = {
    ("claude", "session-start"): "json",
    ("claude", "user-prompt-submit"): "json",
    ("codex", "session-start"): "json",
    ("codex", "user-prompt-submit"): "json",
    ("cursor", "session-start"): "cursor",
    ("opencode", "session-start"): "text",
    ("opencode", "user-prompt-submit"): "text",
}
HOST_EVENT_NAME = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}


def hook(
    host: str, event: str, store: Path, stdin: str | bytes, *extra: str, **kw: Any
) -> subprocess.CompletedProcess[bytes]:
    argv = [*memhtml_argv(), "hook", event, "--host", host, "--repo", str(store), *extra]
    return run_hook(argv, stdin, **kw)


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("event", EVENTS)
def test_each_host_and_event(
    host: str, event: str, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = tmp_path / "claude" / "projects"
    write_corpus(projects, sessions=2, seed=3, session_bytes=3000)
    cwd = tmp_path / "work" / "payments"
    text = payload(host, event, cwd=str(cwd), trace_root=str(projects))
    proc = hook(host, event, store, text, "--trace-root", str(projects), "--time-limit-ms", "30000")
    assert proc.returncode == 0, proc.stderr
    plane = store / ".memhtml" / "traces" / "traces.db"
    kind = READS.get((host, event))
    if kind is None:
        assert proc.stdout == b""
        indexed = host == "claude" and event in ("pre-compact", "session-end")
        assert plane.exists() is indexed
        if indexed:
            with sqlite3.connect(plane) as conn:
                assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
        return
    out = proc.stdout.decode("utf-8")
    assert out.endswith("\n") and out.count("\n") == (1 if kind != "text" else out.count("\n"))
    if kind == "json":
        data = json.loads(out)
        assert data["hookSpecificOutput"]["hookEventName"] == HOST_EVENT_NAME[event]
        said = data["hookSpecificOutput"]["additionalContext"]
    elif kind == "cursor":
        said = json.loads(out)["additional_context"]
    else:
        said = out
    expected = (
        "[areas/inbox/deploy-freeze.html]"
        if event == "user-prompt-submit"
        else "[areas/inbox/payments-on-call.html]"  # recalled by the folder's name
    )
    assert expected in said
    first = said.split("\n")[0]
    assert "read a memory" in first and "before you quote" in first
    assert not plane.exists()  # recall never indexes


@pytest.mark.parametrize(
    "stdin",
    [
        b"",
        b"not json at all",
        b"\xff\xfe\x00garbage",
        b'["a", "list"]',
        b'{"prompt": 42}',
        b'{"prompt": "   "}',
        b"{" * 100_000,
        b'{"prompt": "' + b"x" * (9 << 20) + b'"}',
    ],
    ids=["empty", "text", "binary", "list", "number", "blank", "deep", "huge"],
)
def test_garbage_gets_nothing_and_exit_0(stdin: bytes, store: Path) -> None:
    proc = hook("claude", "user-prompt-submit", store, stdin)
    assert (proc.returncode, proc.stdout) == (0, b"")


def test_no_store_prints_nothing_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    proc = hook("codex", "session-start", missing, payload("codex", "session-start", cwd="/x"))
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert b"no memhtml store" in proc.stderr
    assert not missing.exists()


def test_a_host_that_never_closes_stdin_does_not_hold_the_turn(store: Path) -> None:
    argv = [*memhtml_argv(), "hook", "user-prompt-submit", "--host", "claude", "--repo", str(store)]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None
    proc.stdin.write(b'{"prompt": "deploy on fri')  # and never an end
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 0  # the bound ended it with stdin still open
    assert proc.stdout is not None and proc.stdout.read() == b""
    proc.stdin.close()


def test_a_locked_index_prints_nothing_within_the_bound(store: Path) -> None:
    """A writer holding the index exclusively: the hook's read waits, the bound ends it."""
    conn = sqlite3.connect(store / ".memhtml" / "index.db", timeout=0)
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # WAL readers are shut out too
    conn.execute("BEGIN EXCLUSIVE")
    try:
        proc = hook(
            "claude",
            "user-prompt-submit",
            store,
            payload("claude", "user-prompt-submit", cwd="/x"),
            "--time-limit-ms",
            "3000",  # shorter than SQLite's 5 s busy wait, long enough to read stdin
            env={"MEMHTML_EMBED": "off"},
        )
    finally:
        conn.rollback()
        conn.close()
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert b"time limit" in proc.stderr


def test_a_model_that_cannot_serve_the_index_falls_back_to_keywords(store: Path) -> None:
    """The index holds the fake model's vectors; the local model's cannot be compared with
    them: the answer is the keyword recall, and stderr says so."""
    proc = hook(
        "claude",
        "user-prompt-submit",
        store,
        payload("claude", "user-prompt-submit", cwd="/x"),
        "--time-limit-ms",
        "30000",
        env={"MEMHTML_EMBED": "local"},
    )
    assert proc.returncode == 0
    said = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "[areas/inbox/deploy-freeze.html]" in said


def test_an_unknown_event_from_a_host_never_blocks_it(store: Path) -> None:
    proc = hook("claude", "user-prompt-sbumit", store, b"{}")
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert b"ERR_UNKNOWN_HOOK_EVENT" in proc.stderr
    proc = hook("vscode", "session-start", store, b"{}")
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert b"ERR_UNKNOWN_HOST" in proc.stderr


def test_an_unknown_event_typed_at_a_terminal_is_a_typed_error(store: Path) -> None:
    primary, secondary = os.openpty()
    try:
        proc = subprocess.run(
            [*memhtml_argv(), "hook", "nope", "--host", "claude", "--dense"],
            stdin=secondary,
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["code"] == "ERR_UNKNOWN_HOOK_EVENT"


def test_payload_fields_and_queries() -> None:
    assert field({"workspace_roots": ["/a/b", "/c"]}, ("cwd", "workspace_roots.0")) == "/a/b"
    assert field({"cwd": "  "}, ("cwd",)) is None
    assert field({"a": {"b": [0, {"c": "x"}]}}, ("a.b.1.c",)) == "x"
    assert field([1, 2], ("0",)) is None
    assert query_for_cwd("/home/me/work/worktrees/payments-api") == "payments-api worktrees"
    assert query_for_cwd("/") == ""
    assert "read a memory" in PROMPT_HEADER


def test_the_watchdog_answers_with_what_is_ready(store: Path) -> None:
    """The engine stuck after its keyword answer: at the limit, that answer is printed."""
    code = (
        "import time\n"
        "from memhtml.ops import hook_recall\n"
        "hook_recall._answer = lambda *a, **k: time.sleep(120)\n"
        "import sys\n"
        "sys.argv = ['memhtml', 'hook', 'user-prompt-submit', '--host', 'codex', '--repo',"
        f" {str(store)!r}, '--time-limit-ms', '8000']\n"
        "from memhtml.cli.main import main\n"
        "main()\n"
    )
    text = payload("codex", "user-prompt-submit", cwd="/x")
    proc = run_hook([sys.executable, "-c", code], text, timeout=60)
    assert proc.returncode == 0
    said = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "[areas/inbox/deploy-freeze.html]" in said
    assert b"time limit" in proc.stderr


def test_the_model_child_runs_the_hybrid_search(store: Path) -> None:
    """The forked child loads the model, runs the hybrid search the request names on its own
    connection, and hands back the hits; a model that cannot load hands back nothing."""
    import time

    from memhtml.ops import hook_model
    from memhtml.ops.hook_recall import hybrid

    request = {"op": "search", "root": str(store), "query": "deploy on a friday", "limit": 3}
    child = hook_model._Child("fake", hybrid)
    child.ask({**request, "embedder": "fake"})
    hits = child.wait(time.monotonic() + 60)
    assert hits is not None and hits[0][0] == "areas/inbox/deploy-freeze.html"
    thread = hook_model._Thread("fake", hybrid)  # a library caller's variant: same hits
    thread.ask({**request, "embedder": "fake"})
    assert thread.wait(time.monotonic() + 60) == hits
    broken = hook_model._Child("no-such-embedder", hybrid)
    broken.ask({**request, "embedder": "no-such-embedder"})
    assert broken.wait(time.monotonic() + 60) is None
    assert broken.error is not None and "could not run" in broken.error


def test_the_hook_process_never_loads_numpy(store: Path) -> None:
    """The model and the vector arm run in the forked child; the process the host waits on
    loads neither numpy nor onnxruntime, and still gets the hybrid answer back."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('HEAVY=' + ','.join(m for m in"
        " ('numpy', 'onnxruntime', 'lxml', 'git') if m in sys.modules) + '.'))\n"
        "sys.argv = ['memhtml', 'hook', 'user-prompt-submit', '--host', 'claude', '--repo',"
        f" {str(store)!r}, '--time-limit-ms', '30000']\n"
        "from memhtml.cli.main import main\n"
        "main()\n"
    )
    proc = run_hook([sys.executable, "-c", code], payload("claude", "user-prompt-submit", cwd="/x"))
    assert proc.returncode == 0
    assert b"HEAVY=." in proc.stderr, proc.stderr
    assert b"keywords only" not in proc.stderr  # the child's hybrid hits came back
    said = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "[areas/inbox/deploy-freeze.html]" in said
