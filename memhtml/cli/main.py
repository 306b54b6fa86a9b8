"""Entry point: parse with typer, call one handler, print exactly one envelope.

Exit codes: 0 success, 2 usage error, 1 runtime failure. Usage errors answer
with an envelope too, never with typer's prose.

Global flags (`--repo`, `--dense`, `--json`) go before or after the command
words: the ones given before are moved behind the words before typer parses.
On a terminal (stdout a TTY, neither --json nor --dense) a command with a
`human_*` renderer prints text instead of the envelope; that is how bare
`memhtml`, `--help` and `--version` read there. Off a terminal every answer
is one envelope: bare `memhtml` is the manifest, `--help` the `help` entry,
and `--version` the `help` overview, whose data carries `version` and
`api_version`.
"""

from __future__ import annotations

import errno
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, Final, NoReturn, TextIO, cast

from memhtml import __version__
from memhtml.contracts.envelope import failure, render, success
from memhtml.contracts.errors import (
    InputTooLargeError,
    InvalidFlagError,
    MemhtmlError,
    MissingArgumentError,
    UnexpectedArgumentError,
    UnknownCommandError,
    UsageError,
)
from memhtml.contracts.logs import configure, get_logger
from memhtml.ops.signals import Terminated, terminate_as_exception
from memhtml.surface.spec import Command, Param, RawOutput
from memhtml.surface.table import COMMANDS, GLOBAL_PARAMS, command_by_words
from memhtml.telemetry import span

log = get_logger("memhtml")


class Invocation:
    """What every handler receives besides its own parameters: the global flags."""

    def __init__(self, repo: str | None, dense: bool, json_output: bool, stdout: TextIO) -> None:
        self.repo = repo
        self.dense = dense
        self.json_output = json_output
        self.stdout = stdout
        self._opened: list[Any] = []
        # True in the `memhtml` process itself (main), False for `run` called in-process:
        # only the process's owner may end it early (the hook's time bound).
        self.owns_process = _PROCESS["owned"]

    @property
    def interactive(self) -> bool:
        """True when a person is reading stdout and no JSON was asked for."""
        return on_terminal(self.stdout, dense=self.dense, json_output=self.json_output)

    def corpus(self, *, embedder: str | None = None, require_repo: bool = True) -> Any:
        """Open the corpus at the resolved root (the composition root lives in memhtml.ops)."""
        from memhtml.ops.corpus import open_corpus

        corpus = open_corpus(self.repo, embedder=embedder, require_repo=require_repo)
        self._opened.append(corpus)
        return corpus

    def close(self) -> None:
        """Close every corpus the command opened: a checkpoint still running ends, and
        SQLite folds its log into the database, before the process exits. The command's
        outcome stands: a failure here is logged (the log stays, and the next open reads it)."""
        while self._opened:
            try:
                self._opened.pop().close()
            except Exception as exc:
                log.warning("closing the corpus failed: %s", exc)


def on_terminal(stdout: TextIO, *, dense: bool, json_output: bool) -> bool:
    """The one test of whether a person reads the answer: stdout is a terminal and neither
    --json nor --dense asked for the envelope. Then a command prints its text view
    (memhtml.cli.views) and an error its text; otherwise one envelope, always."""
    return not dense and not json_output and stdout.isatty()


_PROCESS = {"owned": False}  # set by `main`: this process is the `memhtml` command itself

_LOG_LEVELS: Final = ("CRITICAL", "FATAL", "ERROR", "WARN", "WARNING", "INFO", "DEBUG", "NOTSET")


def _configure_logging() -> None:
    """stderr, `memhtml: LEVEL message`, at MEMHTML_LOG's level (WARNING by default); set up
    when `logging` is first used (memhtml.contracts.logs), at once when a level is asked."""
    asked = os.environ.get("MEMHTML_LOG")
    level = (asked or "WARNING").upper()
    configure(
        now=asked is not None,
        stream=sys.stderr,
        level=level if level in _LOG_LEVELS else "WARNING",
        format="memhtml: %(levelname)s %(message)s",
    )


def _global_flags(argv: Sequence[str]) -> tuple[bool, bool]:
    return "--dense" in argv, "--json" in argv


_HELP_FLAGS: Final = ("--help", "-h")
_COMPLETE_VAR: Final = "_MEMHTML_COMPLETE"  # typer's shell-completion switch for prog "memhtml"
_VERSION_FLAG: Final = "--version"


def _opens_a_group(words: Sequence[str]) -> bool:
    n = len(words)
    return any(len(c.words) > n and c.words[:n] == tuple(words) for c in COMMANDS)


class _Line:
    """A command line with the global flags given before the command words moved behind them."""

    def __init__(self, argv: Sequence[str]) -> None:
        by_flag = {p.cli_flag: p for p in GLOBAL_PARAMS}
        self.globals: list[str] = []
        self.version = False
        words: list[str] = []
        i = 0
        while i < len(argv):
            token = argv[i]
            if token == _VERSION_FLAG and not words:
                self.version = True
                i += 1
                continue
            if token.startswith("-") and token != "-":
                flag, eq, _ = token.partition("=")
                param = by_flag.get(flag)
                if param is None:
                    break  # not a global flag: typer judges it where it stands
                width = 1 if param.type == "bool" or eq or i + 1 == len(argv) else 2
                self.globals += argv[i : i + width]
                i += width
                continue
            words.append(token)
            i += 1
            if command_by_words(tuple(words)) is not None or not _opens_a_group(words):
                break
        self.words = words
        self.rest = list(argv[i:])

    @property
    def bare(self) -> bool:
        """No command words and nothing after the global flags."""
        return not self.words and not self.rest

    @property
    def argv(self) -> list[str]:
        """What typer parses: command words, then the global flags, then the rest."""
        return [*self.words, *self.globals, *self.rest]


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
        self.repo: str | None = None  # the command's --repo, to name a full disk's file system
        self.raw: str | None = None


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


def _check_bounds(cmd: Command, params: dict[str, Any]) -> None:
    """The table's documented ranges, enforced before any handler runs."""
    for p in cmd.params:
        value = params.get(p.name)
        if p.range_text is None or value is None or isinstance(value, (bool, list)):
            continue
        if p.out_of_range(value):
            where = f"within {p.range_text}" if ".." in p.range_text else p.range_text
            raise InvalidFlagError(
                f"{p.label}: {value} is out of range; it must be {where}",
                suggestions=[f"memhtml help {cmd.name}"],
            )


def _check_counts(cmd: Command, params: dict[str, Any]) -> None:
    """The table's bounds on repeated values (memhtml.contracts.limits), before anything else."""
    for p in cmd.params:
        value = params.get(p.name)
        if p.max_count is not None and isinstance(value, list) and len(value) > p.max_count:
            from memhtml.contracts.limits import too_many_message

            raise InputTooLargeError(
                too_many_message(p.label, len(value), p.max_count),
                suggestions=[f"memhtml help {cmd.name}"],
                details={"field": p.label, "limit": p.max_count, "count": len(value)},
            )


def _run_command(cmd: Command, params: dict[str, Any], out: _Outcome, stdout: TextIO) -> None:
    globals_ = {p.name: params.pop(p.name) for p in GLOBAL_PARAMS}
    _check_counts(cmd, params)
    _check_choices(cmd, params)
    _check_bounds(cmd, params)
    inv = Invocation(globals_["repo"], bool(globals_["dense"]), bool(globals_["json"]), stdout)
    out.repo = globals_["repo"]
    handler = _load_handler(cmd.handler)
    try:
        with span(f"memhtml {cmd.name}", command=cmd.name):
            data = handler(inv, **params)
    finally:
        inv.close()
    if isinstance(data, RawOutput):
        out.raw = data.text
        return
    out.payload = success(cmd.response_type, data)
    if inv.interactive:
        from memhtml.cli.views import render

        out.human = render(cmd.name, cmd.handler, data)


def _plain_params(cmd: Command, argv: Sequence[str]) -> dict[str, Any] | None:
    """The parameters typer would pass for an ordinary command line, or None.

    Importing typer and building even one command costs a cold start tens of
    milliseconds, more than a `write` spends on its own work. A command line
    made only of the command's words, its long flags each with a plain value
    (`--flag value`, the value not starting with `-`), its switches and its
    positionals is read here; anything else (a refused or repeated flag, an
    `=` spelling, a value that needs a conversion rule, a missing required
    parameter) goes to typer, which answers or refuses it as before.
    tests/cli/test_plain_parse.py checks that both read every line alike.
    """
    if os.environ.get(_COMPLETE_VAR) is not None:
        return None  # a shell-completion request is typer's
    if tuple(argv[: len(cmd.words)]) != cmd.words:
        return None
    params = (*cmd.params, *GLOBAL_PARAMS)
    flags: dict[str, tuple[Param, bool]] = {}
    for p in params:
        if not p.positional:
            flags[p.cli_flag] = (p, True)
            if p.type == "bool" and p.default is None:  # tri-state: --x / --no-x
                flags["--no-" + p.cli_flag[2:]] = (p, False)
    positionals = [p for p in cmd.params if p.positional]
    if any(p.multiple for p in positionals):
        return None
    values: dict[str, Any] = {}
    loose: list[str] = []
    tokens = list(argv[len(cmd.words) :])
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or token == "-":
            loose.append(token)
            continue
        found = flags.get(token)
        if found is None:
            return None
        p, on = found
        if p.type == "bool":
            if p.name in values:
                return None
            values[p.name] = on
            continue
        if i == len(tokens) or tokens[i].startswith("-"):
            return None
        value = _plain_value(p, tokens[i])
        i += 1
        if value is None:
            return None
        if p.multiple:
            values.setdefault(p.name, []).append(value)
        elif p.name in values:
            return None
        else:
            values[p.name] = value
    if len(loose) > len(positionals):
        return None
    for p, token in zip(positionals, loose, strict=False):
        value = _plain_value(p, token)
        if value is None:
            return None
        values[p.name] = value
    out: dict[str, Any] = {}
    for p in params:
        if p.name in values:
            out[p.name] = values[p.name]
        elif p.required:
            return None
        elif p.type == "bool" and not p.multiple and p.default is not None:
            out[p.name] = bool(p.default)
        else:
            out[p.name] = p.default
    return out


def _plain_value(p: Param, token: str) -> Any:
    """`token` as `p`'s type when its spelling is plain (None: typer must convert it)."""
    if p.type == "str":
        return token
    if not token.isascii():
        return None
    if p.type == "int":
        return int(token) if token.isdigit() else None
    if p.type == "float":
        whole, _, frac = token.partition(".")
        return float(token) if whole.isdigit() and (not frac or frac.isdigit()) else None
    return None


def _run_plain(cmd: Command, params: dict[str, Any], out: _Outcome, stdout: TextIO) -> None:
    """`_run_command` for a line read without typer, with the outcomes typer's `main` gives
    a command's exceptions (it ran the command before; see typer.core._main)."""
    try:
        _run_command(cmd, params, out, stdout)
    except EOFError as exc:
        sys.stderr.write("\n")
        sys.stderr.flush()
        raise UsageError("aborted") from exc
    except KeyboardInterrupt:
        return  # typer answers Exit(130) as a return value: no result
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        from typer._click.utils import PacifyFlushWrapper

        sys.stdout = cast(TextIO, PacifyFlushWrapper(sys.stdout))
        sys.stderr = cast(TextIO, PacifyFlushWrapper(sys.stderr))
        sys.exit(1)


def _run_typer(target: Command | None, app_argv: list[str], out: _Outcome, stdout: TextIO) -> None:
    """Parse with typer (the one command `target`, or the whole app) and run the command."""
    from typer.main import get_command

    from memhtml.cli.app import build_app

    click_cmd = get_command(build_app(lambda c, p: _run_command(c, p, out, stdout), target))
    try:
        click_cmd.main(app_argv, prog_name="memhtml", standalone_mode=False)
    except MemhtmlError:
        raise
    except Exception as exc:
        if type(exc).__module__.startswith(("typer", "click")) and hasattr(exc, "exit_code"):
            if type(exc).__name__ in ("Exit", "Abort"):
                raise UsageError("aborted") from exc
            raise _usage_error(exc, app_argv) from exc
        raise


def run(argv: Sequence[str], stdout: TextIO | None = None) -> int:
    """Run one command line; print one envelope to `stdout`; return the exit code."""
    stdout = stdout or sys.stdout
    line = _Line(argv)
    argv = line.argv
    dense, json_output = _global_flags(argv)
    person = on_terminal(stdout, dense=dense, json_output=json_output)
    out = _Outcome()
    try:
        if line.version:
            if person:
                stdout.write(f"memhtml {__version__}\n")
                stdout.flush()
                return 0
            argv = ["help", *line.globals]
        elif line.bare:
            # A person at a terminal gets the short text overview; a program the manifest.
            argv = ["help" if person else "manifest", *line.globals]
        elif any(a in _HELP_FLAGS for a in argv):
            words = _words_before_flags(argv)
            argv = ["help", *words, *(a for a in argv if a in ("--dense", "--json"))]
        app_argv = argv
        target = command_by_words(_words_before_flags(app_argv))
        plain = _plain_params(target, app_argv) if target is not None else None
        if target is not None and plain is not None:
            _run_plain(target, plain, out, stdout)
        else:
            _run_typer(target, app_argv, out, stdout)
    except MemhtmlError as err:
        if err.code in ("ERR_STORAGE", "ERR_GIT", "ERR_UNKNOWN"):  # a full disk underneath?
            err = _typed(err, out)
        out.payload = failure(err.code, err.message, err.suggestions, err.details or None)
        out.exit_code = err.exit_code
    except KeyboardInterrupt:
        out.payload = failure("ERR_UNKNOWN", "interrupted")
        out.exit_code = 1
    except Terminated as stop:  # SIGTERM: the write door rolled back on the way here
        out.payload = failure("ERR_UNKNOWN", str(stop))
        out.exit_code = 1
    except Exception as exc:  # the adapter is the one place a stray exception becomes a code
        log.debug("unexpected failure", exc_info=True)
        typed = _typed(exc, out)
        out.payload = failure(typed.code, typed.message, typed.suggestions, typed.details or None)
        out.exit_code = typed.exit_code
    return _finish(out, dense, stdout, person=person)


def _typed(exc: BaseException, out: _Outcome) -> MemhtmlError:
    """`exc` as a typed error; a full disk names the memory root's file system."""
    from memhtml.ops.config import resolve_root
    from memhtml.ops.errors import as_memhtml_error

    return as_memhtml_error(exc, root=resolve_root(out.repo))


def _finish(out: _Outcome, dense: bool, stdout: TextIO, *, person: bool = False) -> int:
    """Print the outcome (one envelope, or a person's text) and return the exit code.

    On a terminal (`person`) a failure reads as text (message, code, details, what to
    try); piped, it is the error envelope, unchanged."""
    if out.raw is not None:  # a handler's own protocol (hook): printed as it is
        stdout.write(out.raw)
        stdout.flush()
        return out.exit_code
    if out.payload is None:
        out.payload = failure("ERR_UNKNOWN", "the command produced no result")
        out.exit_code = 1
    if out.human is None and person and out.payload.get("ok") is False:
        from memhtml.cli.views import error_text

        out.human = error_text(out.payload)
    if out.human is not None:
        from memhtml.cli.views import for_terminal  # loaded already: it made out.human

        stdout.write(for_terminal(out.human.rstrip("\n")) + "\n")
    else:
        stdout.write(render(out.payload, dense=dense) + "\n")
    stdout.flush()
    return out.exit_code


# The CLI process's young-generation threshold for the cyclic garbage collector
# (Python's default is 700 allocations). A command's start allocates tens of
# thousands of objects that live until it exits (modules, classes, functions):
# a cold `write` ran ~36 collections that found nothing, ~4 % of its time. A
# collection still runs every this many allocations, so a long command's cyclic
# garbage stays bounded.
GC_YOUNG_THRESHOLD: Final = 20_000


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console-script entry point."""
    from memhtml.ops.config import prefer_single_threaded_blas

    _PROCESS["owned"] = True
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    prefer_single_threaded_blas()
    terminate_as_exception()
    _configure_logging()
    from memhtml import telemetry

    telemetry.start("memhtml-cli")  # no OTEL_EXPORTER_OTLP_ENDPOINT: nothing is imported
    _exit(run(sys.argv[1:] if argv is None else argv))


def _exit(code: int) -> NoReturn:
    """End the process with `code`, skipping the interpreter's teardown when nothing is left.

    By now the envelope is printed and every corpus the command opened is
    closed (`Invocation.close`). What the interpreter would still do is free
    every module and object one by one, a sizeable share of a cold `write`
    (docs/benchmarks.md, "Costs behind the code"). So, unless a thread that is
    not a daemon still runs
    (then the ordinary exit waits for it), the exit handlers run (logging's
    flush, temporary directories' clean-up, worker pools) and the process
    ends with `os._exit`.
    """
    import atexit
    import threading

    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe or a failing handler: let the ordinary exit report it
        sys.exit(code)
    os._exit(code)


__all__ = ["COMMANDS", "Invocation", "main", "run"]
