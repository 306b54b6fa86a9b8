"""Entry point: parse with typer, call one handler, print exactly one envelope.

Exit codes: 0 success, 2 usage error, 1 runtime failure. Usage errors answer
with an envelope too, never with typer's prose.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from memhtml.cli.spec import Command
from memhtml.cli.table import COMMANDS, GLOBAL_PARAMS, command_by_words
from memhtml.contracts.envelope import failure, render, success
from memhtml.contracts.errors import (
    InvalidFlagError,
    MemhtmlError,
    MissingArgumentError,
    UnexpectedArgumentError,
    UnknownCommandError,
    UsageError,
)

log = logging.getLogger("memhtml")


class Invocation:
    """What every handler receives besides its own parameters: the global flags."""

    def __init__(self, repo: str | None, dense: bool, json_output: bool, stdout: TextIO) -> None:
        self.repo = repo
        self.dense = dense
        self.json_output = json_output
        self.stdout = stdout

    @property
    def interactive(self) -> bool:
        """True when a person is reading stdout and no JSON was asked for."""
        return not self.json_output and not self.dense and self.stdout.isatty()

    def corpus(self, *, embedder: str | None = None, require_repo: bool = True) -> Any:
        """Open the corpus at the resolved root (the composition root lives in memhtml.ops)."""
        from memhtml.ops.corpus import open_corpus

        return open_corpus(self.repo, embedder=embedder, require_repo=require_repo)


def _configure_logging() -> None:
    level = os.environ.get("MEMHTML_LOG", "WARNING").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level, logging.WARNING),
        format="memhtml: %(levelname)s %(message)s",
    )


def _global_flags(argv: Sequence[str]) -> tuple[bool, bool]:
    return "--dense" in argv, "--json" in argv


def _words_before_flags(argv: Sequence[str]) -> tuple[str, ...]:
    words: list[str] = []
    for token in argv:
        if token.startswith("-"):
            break
        words.append(token)
        if command_by_words(tuple(words)) is not None:
            return tuple(words)
    return tuple(words)


def _usage_error(exc: Exception, argv: Sequence[str]) -> UsageError:
    name = type(exc).__name__
    message = str(getattr(exc, "format_message", lambda: str(exc))())
    words = _words_before_flags(argv)
    hint = [f"memhtml help {' '.join(words)}" if command_by_words(words) else "memhtml manifest"]
    if name == "NoSuchOption":
        return InvalidFlagError(message, suggestions=hint)
    if name == "MissingParameter":
        return MissingArgumentError(message, suggestions=hint)
    if name in ("BadParameter", "BadOptionUsage", "BadArgumentUsage"):
        return InvalidFlagError(message, suggestions=hint)
    if "No such command" in message:
        return UnknownCommandError(message, suggestions=["memhtml manifest"])
    if "unexpected extra argument" in message:
        return UnexpectedArgumentError(message, suggestions=hint)
    return InvalidFlagError(message, suggestions=hint)


class _Outcome:
    def __init__(self) -> None:
        self.payload: dict[str, Any] | None = None
        self.exit_code = 0
        self.human: str | None = None


def _load_handler(spec: str) -> Any:
    module_name, _, func = spec.partition(":")
    return getattr(importlib.import_module(module_name), func)


def _check_choices(cmd: Command, params: dict[str, Any]) -> None:
    for p in cmd.params:
        if not p.choices:
            continue
        value = params.get(p.name)
        values = value if isinstance(value, list) else [value]
        for v in values:
            if v is not None and v not in p.choices:
                raise InvalidFlagError(
                    f"{p.cli_flag if not p.positional else p.name}: {v!r} is not one of "
                    f"{', '.join(p.choices)}",
                    suggestions=[f"memhtml help {cmd.name}"],
                )


def _run_command(cmd: Command, params: dict[str, Any], out: _Outcome, stdout: TextIO) -> None:
    globals_ = {p.name: params.pop(p.name) for p in GLOBAL_PARAMS}
    _check_choices(cmd, params)
    inv = Invocation(globals_["repo"], bool(globals_["dense"]), bool(globals_["json"]), stdout)
    handler = _load_handler(cmd.handler)
    data = handler(inv, **params)
    out.payload = success(cmd.response_type, data)
    if inv.interactive:
        module_name, _, func = cmd.handler.partition(":")
        human = getattr(importlib.import_module(module_name), f"human_{func}", None)
        if human is not None:
            out.human = human(data)


def run(argv: Sequence[str], stdout: TextIO | None = None) -> int:
    """Run one command line; print one envelope to `stdout`; return the exit code."""
    stdout = stdout or sys.stdout
    argv = list(argv)
    dense, _ = _global_flags(argv)
    out = _Outcome()
    try:
        if not argv or (argv[0] in ("--dense", "--json") and len(argv) == 1):
            argv = ["manifest", *argv]
        if any(a in ("--help", "-h") for a in argv):
            words = _words_before_flags(argv)
            argv = ["help", *words] + (["--dense"] if dense else [])
        app_argv = argv
        from typer.main import get_command

        from memhtml.cli.app import build_app

        target = command_by_words(_words_before_flags(app_argv))
        click_cmd = get_command(build_app(lambda c, p: _run_command(c, p, out, stdout), target))
        try:
            click_cmd.main(app_argv, prog_name="memhtml", standalone_mode=False)
        except MemhtmlError:
            raise
        except Exception as exc:
            if type(exc).__module__.startswith(("typer", "click")) and hasattr(exc, "exit_code"):
                if type(exc).__name__ in ("Exit", "Abort"):
                    raise UsageError("aborted") from exc
                raise _usage_error(exc, argv) from exc
            raise
    except MemhtmlError as err:
        out.payload = failure(err.code, err.message, err.suggestions, err.details or None)
        out.exit_code = err.exit_code
    except KeyboardInterrupt:
        out.payload = failure("ERR_UNKNOWN", "interrupted")
        out.exit_code = 1
    except Exception as exc:  # the adapter is the one place a stray exception becomes a code
        from memhtml.ops.errors import as_memhtml_error

        log.debug("unexpected failure", exc_info=True)
        typed = as_memhtml_error(exc)
        out.payload = failure(typed.code, typed.message, typed.suggestions)
        out.exit_code = typed.exit_code
    if out.payload is None:
        out.payload = failure("ERR_UNKNOWN", "the command produced no result")
        out.exit_code = 1
    if out.human is not None:
        stdout.write(out.human.rstrip("\n") + "\n")
    else:
        stdout.write(render(out.payload, dense=dense) + "\n")
    stdout.flush()
    return out.exit_code


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console-script entry point."""
    from memhtml.ops.config import prefer_single_threaded_blas

    prefer_single_threaded_blas()
    _configure_logging()
    sys.exit(run(sys.argv[1:] if argv is None else argv))


__all__ = ["COMMANDS", "Invocation", "main", "run"]
