"""The CLI reads ordinary command lines without typer, exactly as typer reads them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.main import get_command

from memhtml.cli.app import build_app
from memhtml.cli.main import _plain_params
from memhtml.surface.spec import Command
from memhtml.surface.table import COMMANDS, GLOBAL_PARAMS, command_by_words

VALUES = [
    "x",
    "",
    "-x",
    "-",
    "--",
    "5",
    "05",
    "0",
    "500",
    "5.5",
    "5.",
    ".5",
    "1e3",
    " 5",
    "+5",
    "1_000",
    "\u0663",
    "semantic",
    "é ü",
    "a=b",
    "--dense",
]


def _typer(cmd: Command, argv: list[str]) -> tuple[str, Any]:
    got: dict[str, Any] = {}

    def runner(_c: Command, params: dict[str, Any]) -> None:
        got.update(params)

    try:
        rv = get_command(build_app(runner, cmd)).main(
            argv, prog_name="memhtml", standalone_mode=False
        )
    except Exception as exc:  # typer's refusal: the plain reader must have declined
        return "error", type(exc).__name__
    if not got:
        return "no-call", rv
    return "ok", got


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[Command, list[str]]:
    cmd = draw(st.sampled_from(COMMANDS))
    params = [*cmd.params, *GLOBAL_PARAMS]
    flags = [p.cli_flag for p in params if not p.positional]
    flags += ["--no-" + p.cli_flag[2:] for p in params if p.type == "bool"]
    flags += ["--bogus", "-x", "--title=T"]
    tokens: list[str] = list(cmd.words)
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["flag", "flag", "flag", "value", "loose"]))
        if kind == "flag":
            tokens.append(draw(st.sampled_from(flags)))
            if draw(st.booleans()):
                tokens.append(draw(st.sampled_from(VALUES)))
        else:
            tokens.append(draw(st.sampled_from(VALUES)))
    return cmd, tokens


TYPED = {"int": ["0", "3", "10", "99999", "3.5", "-1"], "float": ["0", "0.5", "1.", "2.25", "x"]}


@st.composite
def near_plain_lines(draw: st.DrawFn) -> tuple[Command, list[str]]:
    """Mostly well-formed lines: each parameter maybe given a value of its type, in any order."""
    cmd = draw(st.sampled_from(COMMANDS))
    items: list[list[str]] = []
    loose: list[str] = []
    for p in (*cmd.params, *GLOBAL_PARAMS):
        if not draw(st.booleans()):
            continue
        pool = TYPED.get(p.type, [*(p.choices or ()), "v", "é", "", "-v", "5"])
        if p.positional:
            loose.append(draw(st.sampled_from(pool)))
        elif p.type == "bool":
            flag = (
                p.cli_flag
                if p.default is not None
                else draw(st.sampled_from([p.cli_flag, "--no-" + p.cli_flag[2:]]))
            )
            items.append([flag] * draw(st.integers(1, 2)))
        else:
            for _ in range(draw(st.integers(1, 2))):
                items.append([p.cli_flag, draw(st.sampled_from(pool))])
    order = draw(st.permutations(items + [[x] for x in loose]))
    return cmd, [*cmd.words, *(t for item in order for t in item)]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=near_plain_lines())
def test_near_plain_lines_agree_with_typer(line: tuple[Command, list[str]]) -> None:
    cmd, argv = line
    plain = _plain_params(cmd, argv)
    if plain is not None:
        assert _typer(cmd, argv) == ("ok", plain)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=command_lines())
def test_the_plain_reader_agrees_with_typer(line: tuple[Command, list[str]]) -> None:
    cmd, argv = line
    plain = _plain_params(cmd, argv)
    if plain is not None:
        assert _typer(cmd, argv) == ("ok", plain)


def _complete(cmd: Command) -> list[str]:
    """A line giving every parameter of `cmd` a plain value."""
    argv = list(cmd.words)
    for p in cmd.params:
        value = {"int": "3", "float": "0.5", "str": (p.choices or ("v",))[0]}.get(p.type)
        if p.positional:
            argv.append(value or "v")
        elif p.type == "bool":
            argv.append(p.cli_flag)
        else:
            argv += [p.cli_flag, value or "v"]
            if p.multiple:
                argv += [p.cli_flag, "w"]
    return [*argv, "--dense", "--repo", "r"]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.name)
def test_every_command_reads_plain_lines_without_typer(cmd: Command) -> None:
    argv = _complete(cmd)
    plain = _plain_params(cmd, argv)
    if any(p.positional and p.multiple for p in cmd.params):
        assert plain is None  # typer reads variadic positionals
        return
    assert plain is not None
    assert _typer(cmd, argv) == ("ok", plain)


def test_the_write_line_of_the_benchmark_is_plain() -> None:
    cmd = command_by_words(("write",))
    assert cmd is not None
    argv = ["write", "--title", "T", "--type", "semantic", "--claim", "C.", "--dense"]
    plain = _plain_params(cmd, argv)
    assert plain is not None and plain["title"] == "T" and plain["tag"] is None
    assert _typer(cmd, argv) == ("ok", plain)


def test_a_shell_completion_request_goes_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = command_by_words(("write",))
    assert cmd is not None
    monkeypatch.setenv("_MEMHTML_COMPLETE", "bash_complete")
    assert _plain_params(cmd, ["write", "--title", "T", "--type", "semantic"]) is None


def test_a_cold_write_imports_neither_typer_nor_pydantic(tmp_path: Path) -> None:
    from memhtml.store.layout import init_repo

    init_repo(tmp_path / "m")
    code = (
        "import sys, io, json; from memhtml.cli.main import run; buf = io.StringIO();"
        "code = run(['write', '--title', 'T', '--type', 'semantic', '--claim', 'C.',"
        " '--dense'], stdout=buf);"
        "print(json.dumps([code, json.loads(buf.getvalue())['ok'],"
        " [m for m in ('typer', 'click', 'pydantic') if m in sys.modules]]))"
    )
    env = {**os.environ, "MEMHTML_ROOT": str(tmp_path / "m"), "MEMHTML_EMBED": "off"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip().splitlines()[-1] == "[0, true, []]"
