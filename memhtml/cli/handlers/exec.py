"""Handler for `exec`: choose the script's door, run it, return the report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from memhtml.cli.main import Invocation
from memhtml.contracts.errors import (
    InputTooLargeError,
    InvalidFlagError,
    MissingArgumentError,
    ScriptNotFoundError,
    UnexpectedArgumentError,
)
from memhtml.contracts.limits import MAX_SCRIPT_CHARS

_HINT = ["memhtml help exec"]


def read_script(stdin: str | None, file: str | None, script: str | None) -> str:
    """The script from exactly one door: --file, --script, or stdin (`-` or no door)."""
    if stdin is not None and stdin != "-":
        raise UnexpectedArgumentError(
            f"unexpected argument {stdin!r}: give the script with --file, --script, or - for stdin",
            suggestions=_HINT,
        )
    if file is not None and script is not None:
        raise InvalidFlagError("give --file or --script, not both", suggestions=_HINT)
    if stdin is not None and (file is not None or script is not None):
        raise InvalidFlagError(
            "- reads stdin: give it without --file or --script", suggestions=_HINT
        )
    if file is not None:
        path = Path(file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScriptNotFoundError(
                f"cannot read the script {file}: {exc}", suggestions=_HINT
            ) from exc
    elif script is not None:
        text = script
    elif sys.stdin is None or sys.stdin.isatty():
        raise MissingArgumentError(
            "no script: give --script, --file, or pipe one on stdin", suggestions=_HINT
        )
    else:
        text = sys.stdin.read()
    if not text.strip():
        raise MissingArgumentError("the script is empty", suggestions=_HINT)
    if len(text) > MAX_SCRIPT_CHARS:
        door = "--file" if file is not None else "--script" if script is not None else "stdin"
        raise InputTooLargeError(
            f"{door}: the script is {len(text):,} characters; at most {MAX_SCRIPT_CHARS:,} are"
            " accepted",
            suggestions=["move data the script embeds into memories it reads"],
            details={"field": door, "limit": MAX_SCRIPT_CHARS, "length": len(text)},
        )
    return text


def run_script(
    inv: Invocation,
    *,
    stdin: str | None = None,
    file: str | None = None,
    script: str | None = None,
    sha: str | None = None,
    timeout_ms: int = 30_000,
    memory_mb: int = 512,
) -> dict[str, Any]:
    """Run the script over one commit of the corpus (memhtml.codemode)."""
    text = read_script(stdin, file, script)
    from memhtml.codemode import ExecLimits, run_exec

    limits = ExecLimits(timeout_ms=timeout_ms, memory_mb=memory_mb)
    with inv.corpus() as corpus:
        return run_exec(corpus.git, text, sha=sha, limits=limits).to_data()


def human_run_script(data: dict[str, Any]) -> str:
    """The script's own output for a person, then one line about the run."""
    parts = [data["stdout"].rstrip("\n")] if data["stdout"] else []
    if data["stderr"]:
        parts.append(data["stderr"].rstrip("\n"))
    stopped = f", stopped by the {data['limit']['name']} bound" if data["limit"] else ""
    parts.append(
        f"[exit {data['exit_code']} in {data['duration_ms']} ms, {data['files_read']} files"
        f" read at {data['sha'][:12]}{stopped}]"
    )
    return "\n".join(parts)
