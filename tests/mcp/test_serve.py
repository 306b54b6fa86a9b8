"""`memhtml serve mcp`: pure protocol on stdout while serving, then one serve.exit envelope."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from memhtml.contracts.envelope import validate_envelope

MEMHTML = str(Path(sys.executable).with_name("memhtml"))
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}


def _lines(stream: IO[str]) -> queue.Queue[str | None]:
    q: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            q.put(line)
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def _send(proc: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def test_serve_mcp_speaks_only_protocol_then_prints_serve_exit(repo: Path, child_env: Any) -> None:
    proc = subprocess.Popen(
        [MEMHTML, "serve", "mcp", "--repo", str(repo), "--dense"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(MEMHTML_LOG="INFO"),
    )
    assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
    out = _lines(proc.stdout)
    try:
        _send(proc, INIT)
        init = json.loads(out.get(timeout=30) or "null")
        assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "memhtml"
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "memory_status", "arguments": {}},
            },
        )
        reply = json.loads(out.get(timeout=30) or "null")
        assert reply["id"] == 2
        envelope = reply["result"]["structuredContent"]
        assert envelope["ok"] is True and envelope["type"] == "status.health"
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    rest = []
    while (line := out.get(timeout=10)) is not None:
        rest.append(line)
    assert len(rest) == 1, rest  # nothing but the one envelope after the protocol
    exit_envelope = json.loads(rest[0])
    validate_envelope(exit_envelope)
    assert exit_envelope["type"] == "serve.exit"
    data = exit_envelope["data"]
    assert data["transport"] == "stdio" and data["root"] == str(repo)
    assert data["tool_calls"] == 1 and data["tool_errors"] == 0
    assert data["reason"] == "stdin closed"
    assert "serving" in proc.stderr.read()  # logs went to stderr


def test_memhtml_mcp_version_does_not_serve() -> None:
    bin_ = str(Path(sys.executable).with_name("memhtml-mcp"))
    out = subprocess.run(
        [bin_, "--version"], capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.startswith("memhtml-mcp ")
