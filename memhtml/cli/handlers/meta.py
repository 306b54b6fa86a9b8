"""Handlers that need no repository: manifest, help, agents-doc, and doctor on files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memhtml import __version__
from memhtml.cli import text
from memhtml.cli.main import Invocation
from memhtml.contracts.envelope import API_VERSION
from memhtml.contracts.errors import DocStaleError, InvalidFlagError, UnknownCommandError
from memhtml.surface.manifest import agents_markdown
from memhtml.surface.manifest import manifest as build_manifest
from memhtml.surface.table import COMMANDS, GLOBAL_PARAMS, command_by_words


def manifest(inv: Invocation) -> dict[str, Any]:
    """The full contract."""
    return build_manifest()


def help_command(inv: Invocation, command: list[str] | None = None) -> dict[str, Any]:
    """One command's entry (no words: the tool's name, version and list of commands)."""
    words = tuple(command or ())
    if not words:
        return {
            "name": "memhtml",
            "version": __version__,
            "api_version": API_VERSION,
            "commands": [{"name": c.name, "summary": c.summary} for c in COMMANDS],
        }
    cmd = command_by_words(words)
    if cmd is None:
        group = [c for c in COMMANDS if c.words[: len(words)] == words]
        if group:
            return {"commands": [{"name": c.name, "summary": c.summary} for c in group]}
        raise UnknownCommandError(
            f"no command {' '.join(words)!r}", suggestions=["memhtml manifest"]
        )
    return {"command": cmd.describe()}


def human_help_command(data: dict[str, Any]) -> str:
    """Help as text on a terminal: the overview, a group's commands, or one command's page."""
    if "command" in data:
        return text.command_page(data["command"], GLOBAL_PARAMS)
    if "version" in data:
        return text.overview(data["version"], data["commands"], GLOBAL_PARAMS)
    return text.group(data["commands"])


def agents_doc(inv: Invocation, check: bool = False, out: str = "AGENTS.md") -> dict[str, Any]:
    """Write AGENTS.md, or check that it is current."""
    target = Path(out)
    expected = agents_markdown()
    current = target.read_text(encoding="utf-8") if target.exists() else None
    if check:
        if current != expected:
            raise DocStaleError(
                f"{target} is stale: it does not match the command table",
                suggestions=["memhtml agents-doc"],
            )
        return {"path": str(target), "written": False, "current": True}
    written = current != expected
    if written:
        target.write_text(expected, encoding="utf-8")
    return {"path": str(target), "written": written, "current": True}


def doctor(
    inv: Invocation, paths: list[str] | None = None, fix: bool = False, strict: bool = False
) -> dict[str, Any]:
    """Validate the given files, report the health of the corpus, or repair it; with
    `strict`, a report that is not healthy is ERR_UNHEALTHY (exit 1) carrying the report."""
    from memhtml.ops.health import validate_files

    if paths:
        if fix:
            raise InvalidFlagError("--fix repairs the whole corpus; give no paths with it")
        data = validate_files(paths, repo=inv.repo)
    else:
        from memhtml.sleep.health import doctor as corpus_doctor

        data = corpus_doctor(inv.corpus(), fix=fix)
        if data.get("sleep_runs") and not fix:  # --fix settles a merge cut short: say so
            from memhtml.ops.doctor_checks import fix_plan

            data["fix_would"] = fix_plan(data)
    if strict and not data["healthy"]:
        from memhtml.ops.doctor_checks import unhealthy_error

        raise unhealthy_error(data)
    return data
