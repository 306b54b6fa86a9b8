"""Bad input gets a typed error and loses nothing: a config that does not parse, an entry of
ours someone edited, something foreign where ours goes, a receipt that cannot be trusted, a
store that is gone, a read-only home, a symbolic link, an install killed midway."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.integrations.conftest import cli, payload, shell, tree


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("host", "rel", "text"),
    [
        ("claude", ".claude/settings.json", '{"theme": "dark",'),
        ("claude", ".claude.json", "[1, 2]"),
        ("codex", ".codex/config.toml", 'model = "gpt-5"\n[profiles\n'),
        ("cursor", ".cursor/hooks.json", '{"version": 1, "hooks": {"stop": [}'),
        ("opencode", ".config/opencode/opencode.json", '{"theme": "x" /* unterminated'),
    ],
)
def test_a_config_that_does_not_parse_is_refused_untouched(
    host: str, rel: str, text: str, home: Path, store: Path
) -> None:
    write(home / rel, text)
    before = tree(home)
    code, env = cli("integrations", "install", host, "--repo", str(store))
    assert (code, env["code"]) == (1, "ERR_HOST_CONFIG_INVALID"), env
    assert rel in env["error"] and env["details"]["path"] == str(home / rel)
    assert tree(home) == before  # nothing half-written, not even a receipt


def test_a_key_of_the_wrong_kind_is_refused_not_replaced(home: Path, store: Path) -> None:
    write(home / ".claude/settings.json", '{"hooks": "off"}')
    before = tree(home)
    code, env = cli("integrations", "install", "claude", "--repo", str(store))
    assert (code, env["code"]) == (1, "ERR_HOST_CONFIG_INVALID")
    assert tree(home) == before


def test_install_twice_is_one_install(home: Path, store: Path) -> None:
    assert cli("integrations", "install", "codex", "--repo", str(store))[0] == 0
    first = tree(home)
    code, env = cli("integrations", "install", "codex", "--repo", str(store))
    assert code == 0 and env["data"]["changed"] is False
    assert {e["action"] for e in env["data"]["hosts"][0]["entries"]} == {"unchanged"}
    assert tree(home) == first


def test_a_changed_option_rewrites_only_what_changed(home: Path, store: Path) -> None:
    assert cli("integrations", "install", "claude", "--repo", str(store))[0] == 0
    code, env = cli("integrations", "install", "claude", "--repo", str(store), "--hooks", "session")
    assert code == 0
    hooks = json.loads((home / ".claude/settings.json").read_text())["hooks"]
    assert list(hooks) == ["SessionStart"]
    actions = {e["role"]: e["action"] for e in env["data"]["hosts"][0]["entries"]}
    assert actions["hooks"] == "updated" and actions["skill"] == "unchanged"
    assert cli("integrations", "uninstall", "claude")[0] == 0
    assert tree(home) == {}


def test_uninstall_without_install_changes_nothing(home: Path) -> None:
    code, env = cli("integrations", "uninstall", "cursor")
    assert code == 0
    host = env["data"]["hosts"][0]
    assert (host["state"], env["data"]["changed"]) == ("not-installed", False)
    assert tree(home) == {}


def test_an_unknown_host_is_a_usage_error(home: Path) -> None:
    code, env = cli("integrations", "install", "vscode")
    assert (code, env["code"]) == (2, "ERR_UNKNOWN_HOST")
    assert "memhtml integrations install claude" in env["suggestions"]
    code, env = cli("integrations", "uninstall", "emacs")
    assert (code, env["code"]) == (2, "ERR_UNKNOWN_HOST")


def test_an_edited_entry_is_refused_and_force_keeps_a_backup(home: Path, store: Path) -> None:
    assert cli("integrations", "install", "claude", "--repo", str(store))[0] == 0
    path = home / ".claude.json"
    config = json.loads(path.read_text())
    config["mcpServers"]["memhtml"]["env"]["MEMHTML_ROOT"] = "/somewhere/else"
    edited = json.dumps(config, indent=2)
    path.write_text(edited)
    for argv in (["uninstall", "claude"], ["install", "claude", "--repo", str(store)]):
        code, env = cli("integrations", *argv)
        assert (code, env["code"]) == (1, "ERR_INTEGRATION_MODIFIED"), env
        assert env["details"]["path"] == str(path)
    assert path.read_text() == edited
    code, env = cli("integrations", "list")
    row = next(r for r in env["data"]["rows"] if r["host"] == "claude")
    assert row["state"] == "modified" and "edited" in row["detail"]
    code, env = cli("integrations", "uninstall", "claude", "--force")
    assert code == 0, env
    (backup,) = env["data"]["hosts"][0]["backups"]
    assert Path(backup).read_text() == edited
    assert not path.exists()  # install created it, and nothing else is in it


def test_something_foreign_where_ours_goes_is_refused(home: Path, store: Path) -> None:
    hand = '{"mcpServers": {"memhtml": {"command": "/opt/old/memhtml-mcp"}}}\n'
    write(home / ".cursor/mcp.json", hand)
    write(home / ".agents/skills/memhtml/SKILL.md", "my own skill\n")
    before = tree(home)
    code, env = cli("integrations", "install", "cursor", "--repo", str(store))
    assert (code, env["code"]) == (1, "ERR_INTEGRATION_MODIFIED")
    assert "no memhtml receipt claims it" in env["error"]
    assert tree(home) == before
    code, env = cli("integrations", "install", "cursor", "--repo", str(store), "--force")
    assert code == 0, env
    assert len(env["data"]["hosts"][0]["backups"]) == 2
    assert cli("integrations", "uninstall", "cursor")[0] == 0
    after = tree(home)
    for rel, data in before.items():  # the user's own entry and skill come back
        assert after[rel] == data


def test_a_codex_table_written_by_hand_is_refused(home: Path, store: Path) -> None:
    write(home / ".codex/config.toml", '[mcp_servers.memhtml]\ncommand = "memhtml-mcp"\n')
    code, env = cli("integrations", "install", "codex", "--repo", str(store))
    assert (code, env["code"]) == (1, "ERR_INTEGRATION_MODIFIED")


def test_a_receipt_that_cannot_be_read_is_never_overwritten(home: Path, store: Path) -> None:
    receipt = home / ".config/memhtml/integrations/claude.json"
    write(receipt, "{not json")
    code, env = cli("integrations", "install", "claude", "--repo", str(store))
    assert (code, env["code"]) == (1, "ERR_INTEGRATION_MODIFIED")
    code, env = cli("integrations", "uninstall", "claude")
    assert (code, env["code"]) == (1, "ERR_INTEGRATION_MODIFIED")
    assert receipt.read_text() == "{not json"
    code, env = cli("integrations", "list")
    row = next(r for r in env["data"]["rows"] if r["host"] == "claude")
    assert row["state"] == "modified" and "cannot be read" in row["detail"]


def test_the_original_memhtmls_receipt_is_recognised(home: Path, store: Path) -> None:
    receipt = home / ".config/memhtml/integrations/codex.json"
    write(receipt, json.dumps({"package": "memhtml", "version": "0.15.1", "entries": []}))
    code, env = cli("integrations", "install", "codex", "--repo", str(store))
    assert (code, env["code"]) == (1, "ERR_INTEGRATION_MODIFIED")
    assert "original memhtml" in env["error"]


def test_a_store_that_no_longer_exists(home: Path, store: Path, tmp_path: Path) -> None:
    assert cli("integrations", "install", "claude", "--repo", str(store))[0] == 0
    shutil.rmtree(store)
    code, env = cli("integrations", "list")
    row = next(r for r in env["data"]["rows"] if r["host"] == "claude")
    assert (row["state"], row["store_exists"]) == ("installed", False)
    command = json.loads((home / ".claude/settings.json").read_text())["hooks"]
    line = command["UserPromptSubmit"][0]["hooks"][0]["command"]
    proc = shell(line, payload("claude", "user-prompt-submit", cwd=str(tmp_path)))
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert b"no memhtml store" in proc.stderr
    assert not store.exists()  # the hook never creates a store
    code, env = cli("integrations", "doctor", "claude")
    checks = {c["name"]: c for c in env["data"]["hosts"][0]["checks"]}
    assert checks["store"]["ok"] is False and checks["mcp-handshake"]["ok"] is False
    code, env = cli("integrations", "uninstall", "claude")
    assert code == 0 and tree(home) == {}


def test_a_read_only_home_fails_typed_and_writes_nothing(store: Path) -> None:
    """`.claude` cannot be written: the `.claude.json` written before it is taken back."""
    argv = [sys.executable, "-m", "memhtml.cli", "integrations", "install", "claude"]
    argv += ["--repo", str(store), "--dense"]
    if os.geteuid() == 0:  # root writes through read-only folders: run as nobody
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv")
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    top = Path(tempfile.mkdtemp(prefix="memhtml-ro-"))
    try:
        top.chmod(0o755)
        home = top / "home"
        write(home / ".claude/settings.json", '{"theme": "dark"}\n')
        if os.geteuid() == 0:
            for p in [home, *home.rglob("*")]:
                os.chown(p, 65534, 65534)
        (home / ".claude").chmod(0o555)
        before = tree(home)
        env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"}
        proc = subprocess.run(
            argv, capture_output=True, text=True, env={**env, "HOME": str(home)}, check=False
        )
        answer = json.loads(proc.stdout)
        assert (proc.returncode, answer["code"]) == (1, "ERR_STORAGE"), proc.stdout
        assert str(home / ".claude") in answer["error"]
        assert tree(home) == before
    finally:
        for p in top.rglob("*"):
            if p.is_dir():
                p.chmod(0o755)
        shutil.rmtree(top)


def test_a_failed_write_rolls_every_file_back(home: Path, store: Path) -> None:
    """A file where the skill's folder must go fails the last write: the others are undone."""
    write(home / ".claude/settings.json", '{"theme": "dark"}\n')
    write(home / ".claude/skills", "not a folder\n")
    before = tree(home)
    code, env = cli("integrations", "install", "claude", "--repo", str(store))
    assert (code, env["code"]) == (1, "ERR_STORAGE"), env
    assert tree(home) == before


def test_a_symbolic_link_is_not_written_through(home: Path, store: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "dotfiles" / "claude"
    elsewhere.mkdir(parents=True)
    (home / ".claude").symlink_to(elsewhere)
    code, env = cli("integrations", "install", "claude", "--repo", str(store))
    assert (code, env["code"]) == (1, "ERR_STORAGE")
    assert "symbolic link" in env["error"]
    assert list(elsewhere.iterdir()) == []


def test_an_install_killed_midway_is_settled(home: Path, store: Path) -> None:
    """SIGKILL between files: the next command reconciles the pending receipt with the disk."""
    write(home / ".claude/settings.json", '{"theme": "dark"}\n')
    before = tree(home)
    code = (
        "import os, signal, sys\n"
        "from memhtml.integrations import transaction\n"
        "real = transaction.write_atomic\n"
        "count = [0]\n"
        "def dying(path, text, mode=None):\n"
        "    real(path, text, mode)\n"
        "    count[0] += 1\n"
        "    if count[0] == 2:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "transaction.write_atomic = dying\n"
        "from memhtml.cli.main import run\n"
        f"run(['integrations', 'install', 'claude', '--repo', {str(store)!r}])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert proc.returncode == -signal.SIGKILL
    assert (home / ".config/memhtml/integrations/claude.json.pending").exists()
    code_, env = cli("integrations", "list")
    assert code_ == 0
    code_, env = cli("integrations", "uninstall", "claude")
    assert code_ == 0, env
    assert tree(home) == before


def test_an_install_before_the_store_exists_says_so(home: Path, tmp_path: Path) -> None:
    later = tmp_path / "later"
    code, env = cli("integrations", "install", "cursor", "--repo", str(later))
    assert code == 0 and env["data"]["store_exists"] is False
    assert env["data"]["hosts"][0]["next_steps"][0].startswith(f"memhtml init --repo {later}")
    assert not later.exists()  # recorded, never created


def test_an_entry_that_is_simply_gone_is_written_again(home: Path, store: Path) -> None:
    """A host (or a person) that dropped our entry overwrote nothing of anyone's: install
    puts it back without --force, and uninstall removes the rest."""
    assert cli("integrations", "install", "claude", "--repo", str(store))[0] == 0
    path = home / ".claude.json"
    path.write_text('{"numStartups": 4}\n')  # Claude Code wrote an older copy back
    code, env = cli("integrations", "list")
    assert next(r for r in env["data"]["rows"] if r["host"] == "claude")["state"] == "modified"
    code, env = cli("integrations", "install", "claude", "--repo", str(store))
    assert code == 0, env
    assert json.loads(path.read_text())["mcpServers"]["memhtml"]["command"].endswith("memhtml-mcp")
    assert json.loads(path.read_text())["numStartups"] == 4
    path.write_text('{"numStartups": 5}\n')
    code, env = cli("integrations", "uninstall", "claude")
    assert code == 0, env
    assert path.read_text() == '{"numStartups": 5}\n'
    assert not (home / ".claude").exists()
