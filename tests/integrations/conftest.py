"""A throwaway home for the coding agents' files, a store with memories to recall, and helpers.

The payload fixtures under `payloads/<host>/<event>.json` follow each host's
documented hook input: Claude Code's hooks reference (common fields
session_id, transcript_path, cwd, permission_mode, hook_event_name),
Codex's generated input schemas (codex-rs/hooks/schema/generated), Cursor's
hooks documentation (conversation_id, generation_id, workspace_roots, ...),
and for OpenCode the payload memhtml's own plugin sends. `{cwd}`,
`{prompt}` and `{trace_root}` are filled in by `payload()`.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memhtml.cli.main import run

PAYLOADS = Path(__file__).parent / "payloads"
PROMPT = "can we deploy to production on a friday afternoon?"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty home folder, made $HOME for the test (XDG_CONFIG_HOME unset)."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("MEMHTML_TRACE_ROOT", raising=False)
    monkeypatch.delenv("MEMHTML_ROOT", raising=False)
    # Functional tests must not depend on the machine's speed: the bound is widened here,
    # and the tests of the bound itself pass --time-limit-ms.
    monkeypatch.setenv("MEMHTML_HOOK_TIME_LIMIT_MS", "30000")
    yield h


@pytest.fixture
def store(repo: Path) -> Path:
    """A store holding a few memories (fake embedder), indexed."""
    import memhtml

    with memhtml.open(repo, embedder="fake") as c:
        c.write(
            title="Deploy freeze",
            type="semantic",
            claim="Production deploys are frozen every Friday after 14:00 UTC.",
        )
        c.write(
            title="Payments on-call",
            type="semantic",
            claim="The payments service on-call rotation changes on Mondays.",
        )
    return repo


def cli(*argv: str) -> tuple[int, dict[str, Any]]:
    """Run one command in process; the exit code and the envelope."""
    out = io.StringIO()
    code = run(list(argv), stdout=out)
    return code, json.loads(out.getvalue())


def tree(root: Path) -> dict[str, bytes]:
    """Every file below `root` with its bytes, and every folder (as b'<dir>')."""
    out: dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = b"<dir>" if p.is_dir() and not p.is_symlink() else p.read_bytes()
    return out


def payload(host: str, event: str, *, cwd: str, prompt: str = PROMPT, trace_root: str = "") -> str:
    """The host's documented payload for `event`, filled in."""
    text = (PAYLOADS / host / f"{event}.json").read_text(encoding="utf-8")
    return (
        text.replace("{cwd}", cwd).replace("{prompt}", prompt).replace("{trace_root}", trace_root)
    )


def memhtml_argv() -> list[str]:
    """The `memhtml` command of this interpreter."""
    return [sys.executable, "-m", "memhtml.cli"]


def run_hook(
    argv: list[str], stdin: str | bytes, *, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """Run a hook process the way a host does: payload on stdin, stdout and stderr captured."""
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    return subprocess.run(
        argv,
        input=data,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def shell(command: str, stdin: str, **kw: Any) -> subprocess.CompletedProcess[bytes]:
    """Run a hook `command` string through the shell, as Claude Code, Codex and Cursor do."""
    return run_hook(["/bin/sh", "-c", command], stdin, **kw)
