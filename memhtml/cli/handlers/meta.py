"""Handlers that need no repository: manifest, help, agents-doc, and doctor on files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memhtml.cli.main import Invocation
from memhtml.cli.manifest import agents_markdown
from memhtml.cli.manifest import manifest as build_manifest
from memhtml.cli.table import COMMANDS, command_by_words
from memhtml.contracts.errors import DocStaleError, UnknownCommandError


def manifest(inv: Invocation) -> dict[str, Any]:
    """The full contract."""
    return build_manifest()


def help_command(inv: Invocation, command: list[str] | None = None) -> dict[str, Any]:
    """One command's entry (no words: the list of commands)."""
    words = tuple(command or ())
    if not words:
        return {"commands": [{"name": c.name, "summary": c.summary} for c in COMMANDS]}
    cmd = command_by_words(words)
    if cmd is None:
        group = [c for c in COMMANDS if c.words[: len(words)] == words]
        if group:
            return {"commands": [{"name": c.name, "summary": c.summary} for c in group]}
        raise UnknownCommandError(
            f"no command {' '.join(words)!r}", suggestions=["memhtml manifest"]
        )
    return {"command": cmd.describe()}


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


def doctor(inv: Invocation, paths: list[str] | None = None) -> dict[str, Any]:
    """Validate the given files, or report the health of the corpus."""
    from memhtml.ops.health import corpus_health, validate_files

    if paths:
        return validate_files(paths, repo=inv.repo)
    return corpus_health(inv.corpus())
