"""Global flags anywhere, --version, and what bare `memhtml` and --help print (issue 12 §4)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhtml import __version__

Cli = Callable[..., tuple[int, dict[str, Any]]]
Term = Callable[..., tuple[int, str]]


@pytest.mark.parametrize(
    "argv",
    [
        ["--repo", "{root}", "search", "alpha"],
        ["--repo={root}", "search", "alpha"],
        ["--dense", "--repo", "{root}", "search", "alpha", "--limit", "2"],
        ["search", "--repo", "{root}", "alpha"],
        ["search", "alpha", "--repo", "{root}"],
    ],
)
def test_global_flags_before_or_after_the_command(
    argv: list[str], cli: Cli, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMHTML_ROOT")  # only the flag can name the store
    code, payload = cli(*(a.format(root=store) for a in argv))
    assert (code, payload["type"]) == (0, "memory.hits"), payload
    assert payload["data"]["hits"][0]["path"] == "areas/a.html"


def test_global_flags_before_a_command_group(
    cli: Cli, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMHTML_ROOT")
    for argv in (
        ["--repo", str(store), "index", "status"],
        ["index", "--repo", str(store), "status"],
    ):
        code, payload = cli(*argv)
        assert (code, payload["type"]) == (0, "index.report"), payload


def test_dense_before_the_command_is_minified(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from memhtml.cli.main import run

    out = io.StringIO()
    assert run(["--dense", "list"], stdout=out) == 0
    assert "\n" not in out.getvalue().strip() and ": " not in out.getvalue()


def test_unknown_flag_before_the_command_is_still_a_usage_error(cli: Cli) -> None:
    code, payload = cli("--nope", "search", "x")
    assert (code, payload["code"]) == (2, "ERR_INVALID_FLAG")


def test_version_on_a_terminal_is_one_line(terminal: Term) -> None:
    code, text = terminal("--version")
    assert (code, text) == (0, f"memhtml {__version__}\n")


def test_version_off_a_terminal_is_an_envelope(cli: Cli, terminal: Term) -> None:
    for code, payload in (cli("--version"), cli("--dense", "--version")):
        assert code == 0 and payload["ok"] and payload["type"] == "cli.help"
        assert payload["data"]["version"] == __version__
        assert payload["data"]["api_version"] == "1"
    code, text = terminal("--version", "--json")  # --json asks for the envelope on a terminal
    assert json.loads(text)["data"]["version"] == __version__


def test_bare_memhtml_on_a_terminal_is_short_text_help(terminal: Term) -> None:
    code, text = terminal()
    assert code == 0
    assert not text.lstrip().startswith("{")
    assert text.startswith(f"memhtml {__version__}")
    assert "usage: memhtml" in text and "memhtml manifest" in text
    assert "  search " in text and "--repo DIR" in text
    assert len(text.splitlines()) < 64  # one screen


def test_bare_memhtml_off_a_terminal_stays_the_manifest(cli: Cli, terminal: Term) -> None:
    assert cli()[1]["type"] == "cli.manifest"
    assert json.loads(terminal("--json")[1])["type"] == "cli.manifest"


def test_help_on_a_terminal_is_readable_text(terminal: Term) -> None:
    code, text = terminal("search", "--help")
    assert code == 0 and not text.lstrip().startswith("{")
    assert "usage: memhtml search <query> [flags]" in text
    assert "--limit N" in text and "1..500" in text
    code, same = terminal("help", "search")
    assert same == text
    code, overview = terminal("--help")
    assert "usage: memhtml" in overview and "index ..." in overview and "rebuild" in overview
    code, group = terminal("help", "index")
    assert "index rebuild" in group and "search" not in group


def test_help_with_json_on_a_terminal_is_the_envelope(terminal: Term) -> None:
    _, text = terminal("search", "--help", "--json")
    payload = json.loads(text)
    assert payload["type"] == "cli.help" and payload["data"]["command"]["name"] == "search"


def test_help_version_and_bare_stay_light() -> None:
    code = (
        "import sys, io; from memhtml.cli.main import run\n"
        "class T(io.StringIO):\n"
        "    def isatty(self): return True\n"
        "for argv in ([], ['--help'], ['--version'], ['help'], ['search', '--help']):\n"
        "    run(argv, stdout=io.StringIO()); run(argv, stdout=T())\n"
        "print(','.join(m for m in ('numpy','lxml','onnxruntime','polars','duckdb','git')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
