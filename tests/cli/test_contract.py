"""The CLI contract: one envelope per command, typed usage errors, manifest and AGENTS.md."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memhtml.cli.main import run
from memhtml.contracts.envelope import (
    RESPONSE_TYPES,
    ErrorEnvelope,
    SuccessEnvelope,
    validate_envelope,
)
from memhtml.contracts.errors import error_codes
from memhtml.surface.manifest import agents_markdown, manifest
from memhtml.surface.table import COMMANDS

ROOT = Path(__file__).resolve().parents[2]


def call(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run(list(argv), stdout=out)
    return code, json.loads(out.getvalue())


@pytest.fixture
def seeded(repo: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A repo with a few memories, and the paths the samples refer to."""
    monkeypatch.setenv("MEMHTML_ROOT", str(repo))
    import memhtml

    with memhtml.open(repo, embedder="fake") as c:
        a = c.write(
            title="Alpha", type="semantic", claim="Alpha drains the VIP.", entity=["svc:api"]
        )["path"]
        b = c.write(title="Beta", type="semantic", claim="Beta follows alpha.")["path"]
        c.link(a, "supports", b)
        old = c.write(title="Old", type="episodic", claim="Once upon a time.")["path"]
    ops = repo.parent / "ops.jsonl"
    ops.write_text('{"op":"write","title":"Gamma","type":"semantic","body":"Gamma rays."}\n')
    return {
        "a": a,
        "b": b,
        "old": old,
        "ops": str(ops),
        "repo": str(repo),
        "file": str(repo / a),
        "agents": str(repo.parent / "AGENTS.md"),
        "demo": str(repo.parent / "demo"),
        "fixture": str(repo.parent / "fixture"),
        "reports": str(repo.parent / "reports"),
    }


# One sample invocation per command: a new command must add its sample here.
SAMPLES: dict[str, list[str]] = {
    "manifest": ["manifest"],
    "help": ["help", "search"],
    "agents-doc": ["agents-doc", "--out", "{agents}"],
    "doctor": ["doctor", "{file}"],
    "init": ["init"],
    "write": ["write", "--title", "Delta", "--type", "semantic", "--claim", "Delta wins."],
    "apply": ["apply", "--file", "{ops}"],
    "read": ["read", "{a}"],
    "list": ["list", "--limit", "2"],
    "correct": ["correct", "{b}", "--claim", "Beta precedes alpha."],
    "archive": ["archive", "{old}", "--reason", "stale"],
    "link": ["link", "{b}", "relates_to", "{a}"],
    "search": ["search", "alpha VIP", "--explain"],
    "recall": ["recall", "alpha", "--budget", "500"],
    "reinforce": ["reinforce", "{a}", "--signal", "positive"],
    "neighbors": ["neighbors", "{a}", "--depth", "2"],
    "resolve": ["resolve", "{a}"],
    "status": ["status"],
    "entity activity": ["entity", "activity"],
    "index rebuild": ["index", "rebuild"],
    "index update": ["index", "update"],
    "index embed": ["index", "embed", "--dry-run"],
    "index status": ["index", "status"],
    "quickstart": ["quickstart", "--repo", "{demo}", "--embedder", "fake"],
    "eval discriminate": ["eval", "discriminate", "--mode", "fake", "--report-dir", "{reports}"],
    "eval fixture": ["eval", "fixture", "--out", "{fixture}", "--seed", "3", "--size", "120"],
    "eval merge-safety": ["eval", "merge-safety", "--embedder", "fake"],
    "serve mcp": ["serve", "mcp", "--dense"],
    "export": ["export", "--format", "parquet", "--out", "{reports}"],
    "sleep run": ["sleep", "run", "--date", "2026-02-01"],
    "sleep resume": ["sleep", "resume", "2026-02-01"],
    "sleep review": ["sleep", "review"],
    "sleep merge": ["sleep", "merge", "2026-02-01"],
    "sleep status": ["sleep", "status"],
    "sleep plan": ["sleep", "plan"],
    "sleep lift": ["sleep", "lift", "c0123456789ab"],
    "task add": ["task", "add", "--title", "Ship it", "--due", "2026-03-01", "--tag", "release"],
    "task status": ["task", "status", "areas/inbox/tasks/sample-task.html", "doing"],
    "task list": ["task", "list", "--include-done", "--limit", "5"],
    "sync": ["sync", "--no-push"],
    "remote add": ["remote", "add", "backup", "{reports}"],
    "publish": ["publish", "--out", "{reports}/site"],
    "trace index": ["trace", "index", "--root", "{reports}"],
    "trace search": ["trace", "search", "alpha", "--limit", "5"],
    "trace links": ["trace", "links", "--path", "{a}"],
    "state export": ["state", "export"],
    "state import": ["state", "import"],
    "exec": ["exec", "--script", "console.log(1)"],
    "index migrate": ["index", "migrate", "--to", "fake", "--status"],
    "eval compare-embedders": ["eval", "compare-embedders", "fake", "local", "--size", "60"],
    "integrations install": ["integrations", "install", "claude", "--dry-run"],
    "integrations uninstall": ["integrations", "uninstall", "codex"],
    "integrations list": ["integrations", "list"],
    "integrations doctor": ["integrations", "doctor"],
    "integrations shell": ["integrations", "shell"],
    "hook": ["hook", "session-start", "--host", "claude"],
}
# Commands that must never touch the real home folder (they edit a coding agent's config).
HOME_ISOLATED = ("integrations ", "hook")
# Commands whose stdout is another program's protocol, never an envelope.
RAW_OUTPUT = {"hook"}


def prepare(command: str, seeded: dict[str, str]) -> None:
    """What a sample needs on disk that no command makes: `sleep lift` a standing refusal,
    committed as a refusing merge commits it."""
    if command != "sleep lift":
        return
    repo = Path(seeded["repo"])
    held = repo / ".memhtml" / "sleep" / "refused" / "c0123456789ab.json"
    held.parent.mkdir(parents=True, exist_ok=True)
    held.write_text('{"id": "c0123456789ab", "summary": "fold a into b"}\n')
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "refuse"], cwd=repo, check=True)


# Commands whose sample needs something done first (a run to resume, review or merge).
SETUP: dict[str, list[str]] = {
    "sleep resume": ["sleep", "run", "--date", "2026-02-01"],
    "sleep review": ["sleep", "run", "--date", "2026-02-01"],
    "sleep merge": ["sleep", "run", "--date", "2026-02-01"],
    "task status": ["task", "add", "--title", "Sample task"],
    "sync": ["remote", "add", "origin", "{repo}"],  # the clone is its own remote: up to date
}


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_command_answers_one_valid_envelope(
    command: str, seeded: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert command in SAMPLES, f"add a sample invocation for `{command}`"
    argv = [a.format(**seeded) for a in SAMPLES[command]]
    if command.startswith(HOME_ISOLATED):
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        (tmp_path / "home").mkdir()
    if command in RAW_OUTPUT:
        out = io.StringIO()
        assert run(argv, stdout=out) == 0
        assert not out.getvalue().startswith('{"ok"'), "a raw protocol, never an envelope"
        return
    if command in SETUP:
        assert call(*[a.format(**seeded) for a in SETUP[command]])[0] == 0
    prepare(command, seeded)
    if command == "serve mcp":  # a server: give it a closed stdin so it stops at once
        proc = subprocess.run(
            [sys.executable, "-m", "memhtml.cli", *argv],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
            timeout=60,
        )
        code, payload = proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1])
    else:
        code, payload = call(*argv)
    envelope = validate_envelope(payload)
    assert isinstance(envelope, SuccessEnvelope), payload
    assert code == 0
    spec = next(c for c in COMMANDS if c.name == command)
    assert envelope.type == spec.response_type


def test_every_response_type_and_error_code_is_declared() -> None:
    for c in COMMANDS:
        assert c.response_type in RESPONSE_TYPES
        for code in c.errors:
            assert code in error_codes(), (c.name, code)


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["frobnicate"], "ERR_UNKNOWN_COMMAND"),
        (["search"], "ERR_MISSING_ARGUMENT"),
        (["search", "x", "--nope"], "ERR_INVALID_FLAG"),
        (["search", "x", "--limit", "many"], "ERR_INVALID_FLAG"),
        (["read", "a", "b"], "ERR_UNEXPECTED_ARGUMENT"),
        (["write", "--title", "T", "--type", "bogus", "--claim", "c"], "ERR_INVALID_FLAG"),
        (["help", "no-such-command"], "ERR_UNKNOWN_COMMAND"),
    ],
)
def test_usage_errors_exit_2_with_an_envelope(
    argv: list[str], code: str, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHTML_ROOT", str(repo))
    exit_code, payload = call(*argv)
    assert isinstance(validate_envelope(payload), ErrorEnvelope)
    assert payload["code"] == code
    assert exit_code == 2


def test_runtime_errors_exit_1(repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMHTML_ROOT", str(repo))
    code, payload = call("read", "areas/inbox/missing.html")
    assert (code, payload["code"]) == (1, "ERR_PATH_NOT_FOUND")
    code, payload = call("read", "../etc/passwd.html")
    assert (code, payload["code"]) == (1, "ERR_INVALID_PATH")
    monkeypatch.setenv("MEMHTML_ROOT", str(tmp_path / "nowhere"))
    code, payload = call("search", "anything")
    assert (code, payload["code"]) == (1, "ERR_REPO_REQUIRED")


def test_manifest_needs_nothing(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "MEMHTML_ROOT": str(tmp_path / "none"), "HOME": str(tmp_path)}
    for argv in ([], ["manifest"], ["--dense"]):
        out = subprocess.run(
            [sys.executable, "-m", "memhtml.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        payload = json.loads(out.stdout)
        assert payload["type"] == "cli.manifest"
        data = payload["data"]
        assert {c["name"] for c in data["commands"]} == {c.name for c in COMMANDS}
        assert set(data["error_codes"]) == set(error_codes())
        assert set(data["response_types"]) == set(RESPONSE_TYPES)
        assert "MEMHTML_ROOT" in data["environment"]


def test_help_forms_agree() -> None:
    _, a = call("help", "index", "rebuild")
    _, b = call("index", "rebuild", "--help")
    assert a == b and a["type"] == "cli.help"
    assert a["data"]["command"]["name"] == "index rebuild"
    flags = {p["name"] for p in a["data"]["command"]["params"]}
    assert {"--embed", "--force"} <= flags


def test_dense_is_minified_without_nulls(seeded: dict[str, str]) -> None:
    out = io.StringIO()
    run(["read", seeded["a"], "--dense"], stdout=out)
    text = out.getvalue()
    assert "\n" not in text.strip() and ": " not in text
    assert "null" not in text


def test_agents_md_is_current() -> None:
    assert (ROOT / "AGENTS.md").read_text(encoding="utf-8") == agents_markdown()
    code, payload = call("agents-doc", "--check", "--out", str(ROOT / "AGENTS.md"))
    assert code == 0 and payload["data"]["current"]


def test_agents_doc_check_fails_when_stale(tmp_path: Path) -> None:
    stale = tmp_path / "AGENTS.md"
    stale.write_text("old\n")
    code, payload = call("agents-doc", "--check", "--out", str(stale))
    assert (code, payload["code"]) == (1, "ERR_DOC_STALE")


def test_manifest_lists_every_flag_of_the_table() -> None:
    m = manifest()
    for c, entry in zip(COMMANDS, m["commands"], strict=True):
        assert [p["name"] for p in entry["params"]] == [
            p.name if p.positional else p.cli_flag for p in c.params
        ]


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, io; from memhtml.cli.main import run; run(['--help'], stdout=io.StringIO());"
        "run(['manifest'], stdout=io.StringIO());"
        "print(','.join(m for m in ('numpy','lxml','onnxruntime','polars','duckdb','git')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_degraded_search_and_read_stay_light(seeded: dict[str, str]) -> None:
    """A cold `search` without an embedder, and a `list`, load neither numpy nor the op models."""
    code = (
        "import sys, io, json; from memhtml.cli.main import run; buf = io.StringIO();"
        "run(['search', 'deploy', '--dense'], stdout=buf);"
        "run(['list', '--dense'], stdout=buf);"
        "print(json.dumps([m for m in ('numpy', 'onnxruntime', 'polars', 'duckdb',"
        " 'memhtml.contracts.ops', 'pydantic.main') if m in sys.modules]))"
    )
    env = {**os.environ, "MEMHTML_ROOT": seeded["repo"], "MEMHTML_EMBED": "off"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
