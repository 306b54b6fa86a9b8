"""Every command reads as text on a terminal (a real pseudo-terminal), and as JSON when piped.

The audit runs each command's sample invocation (tests/cli/test_contract.py's
SAMPLES) with a pseudo-terminal for stdout and checks that a person gets text,
not an envelope; the other tests look at what the text says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.surface.table import COMMANDS
from tests.cli.conftest import run_on_pty
from tests.cli.test_contract import HOME_ISOLATED, SAMPLES, SETUP, call, prepare, seeded

__all__ = ["seeded"]

# Commands whose stdout is a protocol or a contract for programs, on a terminal too.
MACHINE_OUTPUT = {
    "manifest": "the contract itself, for programs and agents (memhtml help is its text)",
    "serve mcp": "stdout is the MCP protocol",
    "hook": "stdout is the coding agent's hook protocol",
}


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_command_prints_text_on_a_terminal(
    command: str, seeded: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if command in MACHINE_OUTPUT:
        pytest.skip(MACHINE_OUTPUT[command])
    argv = [a.format(**seeded) for a in SAMPLES[command]]
    if command.startswith(HOME_ISOLATED):
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        (tmp_path / "home").mkdir()
    if command in SETUP:
        assert call(*[a.format(**seeded) for a in SETUP[command]])[0] == 0
    prepare(command, seeded)
    code, text = run_on_pty(argv)
    assert code == 0, text
    assert text.strip(), "a terminal view prints something"
    assert not text.lstrip().startswith("{") and not _is_json(text), text[:400]


# -- what the views say ---------------------------------------------------------------


def test_read_is_a_page_on_a_terminal_and_data_when_piped(seeded: dict[str, str]) -> None:
    code, text = run_on_pty(["read", seeded["a"]])
    lines = text.splitlines()
    assert code == 0 and lines[0] == "Alpha"
    assert lines[1] == f"{seeded['a']} · semantic · active"
    assert lines[2].startswith("created ") and " UTC" in lines[2]
    assert "entities: svc:api" in text and "  Alpha drains the VIP." in lines
    assert f"  supports -> {seeded['b']}" in lines
    code, payload = call("read", seeded["a"])  # piped: the envelope, as before
    assert payload["ok"] and payload["data"]["path"] == seeded["a"]
    code, text = run_on_pty(["read", seeded["a"], "--json"])  # --json keeps pure data
    assert json.loads(text)["data"]["title"] == "Alpha"
    code, text = run_on_pty(["read", seeded["a"], "--dense"])  # --dense too: one line of it
    assert len(text.splitlines()) == 1 and json.loads(text)["data"]["path"] == seeded["a"]


def test_status_fits_one_screen(seeded: dict[str, str]) -> None:
    code, text = run_on_pty(["status"])
    lines = text.splitlines()
    assert code == 0 and len(lines) <= 12, text
    assert lines[0].startswith("root ") and lines[1].startswith("HEAD ")
    assert "3 active" in text and "up to date with HEAD" in text


def test_search_explain_shows_each_arm_under_each_hit(seeded: dict[str, str]) -> None:
    code, text = run_on_pty(["search", "alpha VIP", "--explain"])
    lines = text.splitlines()
    assert code == 0
    first = lines.index(next(line for line in lines if line.endswith(seeded["a"])))
    arms = lines[first + 2].split()
    assert arms[:4] == ["fts", "#1", "x1.5", "+0.1364"]  # rank 1 of weight 1.5: 1.5 / (10 + 1)
    assert "weight / (k + rank)" in text
    code, plain = run_on_pty(["search", "alpha VIP"])
    assert "fts #" not in plain and "weight / (k + rank)" not in plain


def test_task_list_is_a_table(seeded: dict[str, str]) -> None:
    call("task", "add", "--title", "Ship it", "--due", "2026-03-01")
    code, text = run_on_pty(["task", "list"])
    assert code == 0, text
    header, row = text.splitlines()[:2]
    assert header.split() == ["status", "due", "path", "title"]
    assert row.split()[:3] == ["todo", "2026-03-01", "areas/inbox/tasks/ship-it.html"]
    code, text = run_on_pty(["task", "list", "--status", "done"])  # none: said, not "open"
    assert code == 0 and text.startswith("no task matches") and "open" not in text


def test_correct_says_where_the_memory_went(seeded: dict[str, str]) -> None:
    code, text = run_on_pty(["correct", seeded["b"], "--claim", "Beta precedes alpha."])
    first = text.splitlines()[0]
    assert code == 0 and first.startswith(f"corrected {seeded['b']} -> areas/")
    assert "(kept from the original)" in text and "archived archive/" in text


def test_state_export_and_import_say_what_moved(seeded: dict[str, str]) -> None:
    call("reinforce", seeded["a"], "--signal", "positive")
    code, text = run_on_pty(["state", "export"])
    assert code == 0 and text.startswith("exported the usage plane (commit ")
    assert ".memhtml/state/access.jsonl: 1 row" in text
    code, text = run_on_pty(["state", "import"])
    assert code == 0 and "1 usage row read" in text


def test_a_failure_reads_as_text_on_a_terminal_and_stays_an_envelope_piped(
    seeded: dict[str, str],
) -> None:
    code, text = run_on_pty(["read", "areas/inbox/missing.html"])
    lines = text.splitlines()
    assert code == 1
    assert lines[0] == "error: no memory at areas/inbox/missing.html"
    assert lines[1] == "  code: ERR_PATH_NOT_FOUND"
    assert any(line.startswith("  try: memhtml") for line in lines)
    assert not _is_json(text)
    code, payload = call("read", "areas/inbox/missing.html")
    assert (code, payload["ok"], payload["code"]) == (1, False, "ERR_PATH_NOT_FOUND")
    code, text = run_on_pty(["search", "x", "--limit", "0"])  # a usage error: exit 2, text
    assert code == 2 and text.startswith("error: --limit: 0 is out of range")
    code, text = run_on_pty(["read", "areas/inbox/missing.html", "--json"])
    assert json.loads(text)["code"] == "ERR_PATH_NOT_FOUND"


def test_error_details_read_as_lines(seeded: dict[str, str]) -> None:
    from memhtml.cli.views import error_text

    text = error_text(
        {
            "ok": False,
            "error": "session prefix 'ab' matches 2 sessions",
            "code": "ERR_AMBIGUOUS_ID",
            "suggestions": ["give more characters"],
            "details": {"candidates": ["abc123", "abd456"], "prefix": "ab"},
        }
    )
    assert "  candidates:\n    - abc123\n    - abd456" in text
    assert "  prefix: ab" in text and text.endswith("  try: give more characters")


def test_a_view_that_cannot_read_its_data_falls_back_to_the_envelope() -> None:
    from memhtml.cli.views import render

    assert render("read", "memhtml.cli.handlers.store:read", {"unexpected": 1}) is None
    assert render("manifest", "memhtml.cli.handlers.meta:manifest", {}) is None  # no view


def test_a_piped_command_never_loads_the_views(seeded: dict[str, str]) -> None:
    import os
    import subprocess
    import sys

    code = (
        "import sys, io; from memhtml.cli.main import run; buf = io.StringIO();"
        f"run(['read', {seeded['a']!r}], stdout=buf); run(['status'], stdout=buf);"
        "run(['read', 'areas/inbox/missing.html'], stdout=buf);"
        "print(sorted(m for m in sys.modules if m.startswith('memhtml.cli.views')"
        " or m == 'html.parser'))"
    )
    env = {**os.environ, "MEMHTML_ROOT": seeded["repo"], "MEMHTML_EMBED": "off"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_integrations_read_as_rows_and_plans(
    seeded: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    code, text = run_on_pty(["integrations", "list"])
    rows = [line.split()[:2] for line in text.splitlines()]
    assert code == 0 and ["claude", "not-installed"] in rows and ["codex", "not-installed"] in rows
    code, text = run_on_pty(["integrations", "install", "claude", "--dry-run"])
    assert code == 0 and text.startswith("Claude Code (user scope), store ")
    assert f"  planned   {home}/.claude.json  (mcp-entry)" in text.splitlines()
    assert text.rstrip().endswith("dry run: nothing was written (--json shows the contents)")
    assert not (home / ".claude.json").exists()


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=300))
# Keys and suggestions are our code's words (one line each); values are anything a caller sent.
_ONE_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=80
)
_DETAILS = st.dictionaries(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20),
    st.one_of(
        _SCALARS,
        st.lists(st.one_of(_SCALARS, st.dictionaries(st.text(max_size=10), _SCALARS)), max_size=30),
        st.dictionaries(st.text(max_size=10), _SCALARS, max_size=5),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    code=st.sampled_from(["ERR_GIT", "ERR_UNHEALTHY", "ERR_SYNC_CONFLICT", "ERR_PARTIAL_FAILURE"]),
    message=st.text(max_size=500),
    details=_DETAILS,
    suggestions=st.lists(_ONE_LINE, max_size=5),
)
def test_any_failure_reads_as_bounded_text(
    code: str, message: str, details: dict[str, Any], suggestions: list[str]
) -> None:
    """Whatever the details hold (a report of another shape included), the error view never
    fails, starts with the message, names the code, and stays a screenful."""
    from memhtml.cli.views import error_text

    payload = {"ok": False, "error": message, "code": code, "details": details}
    text = error_text({**payload, "suggestions": suggestions})
    lines = text.splitlines()
    assert text.startswith("error:") and f"  code: {code}" in lines
    assert not _is_json(text)
    if code in ("ERR_GIT",):  # the generic rendering: bounded however many details come
        wrapped = len(message) // 40 + 2
        assert len(lines) <= wrapped + 1 + 25 + len(suggestions)


def test_a_hostile_memory_cannot_drive_the_terminal(seeded: dict[str, str]) -> None:
    """A hand-edited (or synced) memory whose text holds terminal controls: clear screen and
    retitle the window through character references, a bidi override, raw 8-bit CSIs. Every
    view shows them as what they are; piped, the envelope keeps the data as it is."""
    import subprocess

    root = Path(seeded["repo"])
    page = root / seeded["a"]
    page.write_text(
        page.read_text()
        .replace(
            "Alpha drains the VIP.",
            "Alpha &#x1b;[2J&#x1b;]0;pwned&#x07;drains &#x202e;PIV.\u009b1m",
        )
        .replace("<title>Alpha", "<title>Alpha \u009b31m")
    )
    subprocess.run(["git", "-C", str(root), "commit", "-qam", "hostile"], check=True)
    for argv in (["read", seeded["a"]], ["search", "alpha drains"], ["list"], ["recall", "alpha"]):
        code, text = run_on_pty(argv)
        assert code == 0, text
        assert not any(c in text for c in "\x1b\x07\x9b\u202e"), (argv, text)
        assert "Alpha <U+009B>31m" in text or "<U+202E>PIV.<U+009B>1m" in text, (argv, text)
    for argv in (["search", "alpha drains"], ["recall", "alpha"]):  # the claim, as indexed
        code, text = run_on_pty(argv)
        assert "Alpha ^[[2J^[]0;pwned^Gdrains <U+202E>PIV.<U+009B>1m" in text, text
    code, payload = call("read", seeded["a"])  # the data itself is not rewritten
    assert "\u009b31m" in payload["data"]["title"]


def test_trace_links_of_a_busy_session_stay_a_screenful_and_say_the_rest() -> None:
    from memhtml.cli.views.trace import MAX_ROWS, links

    sid = "0123456789abcdef" * 2
    found = [
        {"at": "2026-03-01T10:00:00Z", "link_kind": "read", "session_id": sid, "path": f"a/{i}"}
        for i in range(MAX_ROWS + 150)
    ]
    text = links({"links": found, "sessions": [], "session_id": sid, "indexed": True})
    lines = text.splitlines()
    assert (
        lines[0] == f"session {sid}: {MAX_ROWS + 150} links, {MAX_ROWS + 150} memories, 1 session"
    )
    assert len(lines) == 2 + 1 + MAX_ROWS + 1
    assert lines[-1] == "... and 150 more (--json lists every link)"
