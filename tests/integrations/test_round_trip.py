"""Install, use and uninstall each host in a throwaway home holding the user's own settings.

For each host: install keeps every setting of the user's and adds the MCP
entry and the hooks; `list` says installed; the installed hook command, run
as the host runs it, answers the host's documented payload with recall that
names a stored memory; garbage on stdin gets nothing and exit 0; uninstall
leaves every file (and folder) byte-identical to before. These fail on
7a6261e, which has no `integrations` command.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from memhtml.integrations import jsonc
from tests.integrations.conftest import cli, payload, run_hook, shell, tree

CLAUDE_SETTINGS = """{
  "theme": "dark",
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send 'Claude is done'"
          }
        ]
      }
    ]
  }
}
"""
USER_FILES = {
    "claude": {
        ".claude/settings.json": CLAUDE_SETTINGS,
        ".claude/CLAUDE.md": "# Mine\n\nBe terse.",
    },
    "codex": {
        ".codex/config.toml": '# mine\nmodel = "gpt-5"\n\n[profiles.fast]\nmodel = "o4-mini"\n',
        ".codex/hooks.json": '{"hooks": {"Stop": [{"hooks": [{"type": "command",'
        ' "command": "say done"}]}]}}\n',
    },
    "cursor": {
        ".cursor/mcp.json": '{"mcpServers": {"github": {"command": "gh-mcp"}}}',
        ".cursor/hooks.json": '{\n  "version": 1,\n  "hooks": {\n    "stop": [\n'
        '      {\n        "command": "./audit.sh"\n      }\n    ]\n  }\n}\n',
    },
    "opencode": {
        ".config/opencode/opencode.json": '{\n  // mine\n  "theme": "tokyonight",\n}\n',
        ".config/opencode/AGENTS.md": "Use tabs.\n",
    },
}
# The event whose answer names a memory, per host (Cursor cannot inject per prompt).
RECALL_EVENT = {
    "claude": "user-prompt-submit",
    "codex": "user-prompt-submit",
    "cursor": "session-start",
    "opencode": "user-prompt-submit",
}


def seed(home: Path, host: str) -> None:
    for rel, text in USER_FILES[host].items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def installed_command(home: Path, host: str, event: str) -> list[str] | str:
    """The hook command exactly as the host's config holds it."""
    if host == "opencode":
        plugin = (home / ".config/opencode/plugins/memhtml.js").read_text()
        consts = {
            line.split(" = ", 1)[0].split()[-1]: json.loads(line.split(" = ", 1)[1])
            for line in plugin.splitlines()
            if line.startswith("const ") and line.split(" = ", 1)[1][:1] in '["'
        }
        args = consts["PROMPT_ARGS" if event == "user-prompt-submit" else "SESSION_ARGS"]
        return [consts["COMMAND"], *args]
    rel = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json"}.get(
        host, ".cursor/hooks.json"
    )
    hooks = json.loads((home / rel).read_text())["hooks"]
    name = {"user-prompt-submit": "UserPromptSubmit", "session-start": "SessionStart"}[event]
    if host == "cursor":
        return hooks["sessionStart"][0]["command"]
    return hooks[name][0]["hooks"][0]["command"]


def run_installed(command: list[str] | str, stdin: str) -> tuple[int, bytes]:
    proc = shell(command, stdin) if isinstance(command, str) else run_hook(command, stdin)
    return proc.returncode, proc.stdout


def recall_text(host: str, out: bytes) -> str:
    text = out.decode("utf-8")
    if host in ("claude", "codex"):
        data = json.loads(text)
        assert set(data) == {"hookSpecificOutput"}
        return str(data["hookSpecificOutput"]["additionalContext"])
    if host == "cursor":
        return str(json.loads(text)["additional_context"])
    return text


def keeps_user_settings(home: Path, host: str) -> None:
    if host == "claude":
        settings = json.loads((home / ".claude/settings.json").read_text())
        assert settings["theme"] == "dark"
        assert settings["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify-send 'Claude is done'"
        assert "UserPromptSubmit" in settings["hooks"] and "SessionStart" in settings["hooks"]
        server = json.loads((home / ".claude.json").read_text())["mcpServers"]["memhtml"]
        assert server["command"].endswith("memhtml-mcp")
        assert (home / ".claude/CLAUDE.md").read_text().startswith("# Mine\n\nBe terse.")
    elif host == "codex":
        config = tomllib.loads((home / ".codex/config.toml").read_text())
        assert config["model"] == "gpt-5" and config["profiles"]["fast"]["model"] == "o4-mini"
        assert config["mcp_servers"]["memhtml"]["command"].endswith("memhtml-mcp")
        hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
        assert hooks["Stop"][0]["hooks"][0]["command"] == "say done"
        assert "UserPromptSubmit" in hooks
    elif host == "cursor":
        mcp = json.loads((home / ".cursor/mcp.json").read_text())["mcpServers"]
        assert mcp["github"] == {"command": "gh-mcp"} and "memhtml" in mcp
        hooks = json.loads((home / ".cursor/hooks.json").read_text())
        assert hooks["version"] == 1 and hooks["hooks"]["stop"] == [{"command": "./audit.sh"}]
        assert "sessionStart" in hooks["hooks"] and "beforeSubmitPrompt" not in hooks["hooks"]
    else:
        text = (home / ".config/opencode/opencode.json").read_text()
        assert "// mine" in text
        config = jsonc.parse(text).python()
        assert config["theme"] == "tokyonight" and config["mcp"]["memhtml"]["type"] == "local"
        assert (home / ".config/opencode/AGENTS.md").read_text().startswith("Use tabs.\n")
        assert (home / ".config/opencode/plugins/memhtml.js").is_file()


@pytest.mark.parametrize("host", ["claude", "codex", "cursor", "opencode"])
def test_install_use_uninstall_round_trip(host: str, home: Path, store: Path) -> None:
    seed(home, host)
    before = tree(home)

    code, env = cli("integrations", "install", host, "--repo", str(store))
    assert code == 0, env
    assert env["data"]["changed"] is True
    keeps_user_settings(home, host)

    code, env = cli("integrations", "list")
    rows = {(r["host"], r["scope"]): r for r in env["data"]["rows"]}
    assert rows[(host, "user")]["state"] == "installed"
    assert rows[(host, "user")]["store_exists"] is True

    event = RECALL_EVENT[host]
    command = installed_command(home, host, event)
    fixture = payload(host, event, cwd=str(home / "work" / "payments"))
    code, out = run_installed(command, fixture)
    assert code == 0
    text = recall_text(host, out)
    assert "[areas/inbox/deploy-freeze.html]" in text
    assert "read" in text.split("\n")[0]  # the header says to read before quoting

    code, out = run_installed(command, "this is not json {")
    assert (code, out) == (0, b"")

    code, env = cli("integrations", "install", host, "--repo", str(store))
    assert code == 0 and env["data"]["changed"] is False  # a re-run writes nothing

    code, env = cli("integrations", "uninstall", host)
    assert code == 0, env
    assert tree(home) == before


def test_dry_run_writes_nothing(home: Path, store: Path) -> None:
    for host in USER_FILES:
        seed(home, host)
    before = tree(home)
    code, env = cli("integrations", "install", "--repo", str(store), "--dry-run")
    assert code == 0
    data = env["data"]
    assert [h["host"] for h in data["hosts"]] == ["claude", "codex", "cursor", "opencode"]
    assert all(e["action"] == "planned" for h in data["hosts"] for e in h["entries"])
    settings = str(home / ".claude/settings.json")
    assert '"UserPromptSubmit"' in data["hosts"][0]["contents"][settings]
    assert tree(home) == before


def test_all_hosts_share_files_and_uninstall_in_any_order(home: Path, store: Path) -> None:
    for host in USER_FILES:
        seed(home, host)
    before = tree(home)
    code, env = cli("integrations", "install", "--repo", str(store))
    assert code == 0, env
    skill = str(home / ".agents/skills/memhtml/SKILL.md")
    actions = {
        h["host"]: e["action"]
        for h in env["data"]["hosts"]
        for e in h["entries"]
        if e["path"] == skill
    }
    assert actions == {"codex": "created", "cursor": "shared", "opencode": "shared"}
    for host in ("codex", "opencode", "claude", "cursor"):  # the skill's writer goes first
        code, env = cli("integrations", "uninstall", host)
        assert code == 0, env
    assert tree(home) == before


def test_project_scope_round_trip(home: Path, store: Path, tmp_path: Path) -> None:
    import subprocess

    project = tmp_path / "app"
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "AGENTS.md").write_text("# App\n\nRun `make test`.\n")
    before = tree(project)
    home_before = tree(home)
    code, env = cli(
        "integrations", "install", "claude", "--project", str(project / "src"), "--repo", str(store)
    )
    assert code == 0, env
    assert env["data"]["scope"] == "project" and env["data"]["root"] == str(project)
    assert "memhtml" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    agents = (project / "AGENTS.md").read_text()
    assert agents.startswith("# App\n\nRun `make test`.\n") and "MEMHTML:START" in agents
    assert "@AGENTS.md" in (project / "CLAUDE.md").read_text()  # the prose exists once
    code, env = cli("integrations", "list", "--project", str(project))
    states = {(r["host"], r["scope"]): r["state"] for r in env["data"]["rows"]}
    assert states[("claude", "project")] == "installed"
    assert states[("claude", "user")] == "not-installed"
    code, env = cli("integrations", "uninstall", "claude", "--project", str(project))
    assert code == 0, env
    assert tree(project) == before
    assert tree(home) == home_before
