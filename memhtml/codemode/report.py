"""`exec.report`: what one script produced, and under which bounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memhtml.codemode.limits import CORPUS_MOUNT, TIMEOUT_EXIT_CODE, ExecLimits, LimitHit


@dataclass(frozen=True)
class ExecReport:
    """One execution's result.

    The original's fields (`corpusMount`, `sha`, `exitCode`, `stdout`,
    `stderr`, `durationMs`, `timeoutMs`, `timedOut`) in this project's
    snake_case, plus the files the script read, the bound that stopped it
    (None when none did) and every bound in force. A script that throws is a
    report with a non-zero exit code and its stack in `stderr`, never an error.
    """

    sha: str
    ref: str
    exit_code: int
    stdout: str
    stderr: str
    duration_ms: int
    limits: ExecLimits
    files_read: int = 0
    limit: LimitHit | None = None

    @property
    def timed_out(self) -> bool:
        """True when the runtime cut the script off at its time bound."""
        return self.limit is not None and self.limit.name == "time"

    def to_data(self) -> dict[str, Any]:
        """The `exec.report` data."""
        return {
            "corpus_mount": CORPUS_MOUNT,
            "sha": self.sha,
            "ref": self.ref,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "duration_ms": self.duration_ms,
            "timeout_ms": self.limits.timeout_ms,
            "timed_out": self.timed_out,
            "files_read": self.files_read,
            "limit": None if self.limit is None else self.limit.to_data(),
            "limits": self.limits.to_data(),
        }


def stopped_exit_code(limit: LimitHit) -> int:
    """The exit code of a script a bound stopped: 124 for time (as the original), else 1."""
    return TIMEOUT_EXIT_CODE if limit.name == "time" else 1
