"""Build the typer application from the command table.

Each table entry becomes a typer command whose signature is generated from its
`Param`s, so the table is the only place a flag is declared.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer

from memhtml.surface.spec import Command, Param
from memhtml.surface.table import COMMANDS, GLOBAL_PARAMS

_PY_TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}

Runner = Callable[[Command, dict[str, Any]], None]


def _typer_param(p: Param) -> inspect.Parameter:
    base = _PY_TYPES[p.type]
    annotation: Any = list[base] | None if p.multiple else (base if p.required else base | None)  # type: ignore[valid-type]
    if p.type == "bool" and not p.multiple:
        annotation = bool
    help_text = p.help + (f" [one of: {', '.join(p.choices)}]" if p.choices else "")
    if p.range_text:
        help_text += f" [{p.range_text}]"
    if p.max_count is not None:
        help_text += f" [at most {p.max_count:,} times]"
    if p.positional:
        default: Any = typer.Argument(
            ... if p.required else None, help=help_text, metavar=p.metavar, show_default=False
        )
    elif p.type == "bool" and p.default is None:
        # tri-state: --x / --no-x / neither
        annotation = bool | None
        default = typer.Option(None, f"{p.cli_flag}/--no-{p.cli_flag[2:]}", help=help_text)
    elif p.type == "bool":
        default = typer.Option(bool(p.default), p.cli_flag, help=help_text)
    else:
        default = typer.Option(
            ... if p.required else p.default,
            p.cli_flag,
            help=help_text,
            metavar=p.metavar,
            show_default=False,
        )
    return inspect.Parameter(
        p.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def _callback(cmd: Command, runner: Runner) -> Callable[..., None]:
    def invoke(**kwargs: Any) -> None:
        runner(cmd, kwargs)

    params = [_typer_param(p) for p in (*cmd.params, *GLOBAL_PARAMS)]
    invoke.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    invoke.__name__ = cmd.name.replace(" ", "_").replace("-", "_")
    invoke.__doc__ = cmd.summary
    return invoke


def _group() -> None:
    """memhtml"""


def build_app(runner: Runner, only: Command | None = None) -> typer.Typer:
    """A typer app whose commands all call `runner(command, params)`.

    With `only`, the app holds just that command: typer builds a coercion
    adapter per parameter, so building the one command a process runs keeps
    a cold start short (the full app is built for unknown-command errors).
    """
    app = typer.Typer(add_completion=False, no_args_is_help=False, help="memhtml")
    # A callback keeps the app a group even when it holds one command.
    app.callback()(_group)
    subapps: dict[str, typer.Typer] = {}
    for cmd in COMMANDS if only is None else (only,):
        words = cmd.words
        target = app
        if len(words) == 2:
            if words[0] not in subapps:
                subapps[words[0]] = typer.Typer(add_completion=False)
                subapps[words[0]].callback()(_group)
                app.add_typer(subapps[words[0]], name=words[0])
            target = subapps[words[0]]
        target.command(words[-1], help=cmd.summary)(_callback(cmd, runner))
    return app
