"""The bounds a code-mode script runs under, and the report of a bound it reached.

Four bounds, each enforced by the host rather than trusted to the guest:
wall time (the worker process is killed at the deadline), memory (QuickJS's
allocator limit, with an address-space limit on the worker as a backstop),
output (stdout and stderr together), and files read (distinct files of the
pinned tree the script read). A script that reaches one is stopped and the
report names the bound, what it was and what was reached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from memhtml.contracts.errors import InvalidFlagError

CORPUS_MOUNT: Final = "/mnt/memhtml"

# The original's bounds (SURFACES-FACTS 3.4): 30 s by default, 600 s at most,
# and 0 refused because it would mean "unbounded".
DEFAULT_TIMEOUT_MS: Final = 30_000
MAX_TIMEOUT_MS: Final = 600_000
# The original sets no memory bound. 512 MB holds a 10k-memory corpus() map
# several times over (measured: ~60 MB) and refuses a 2 GB allocation.
DEFAULT_MEMORY_MB: Final = 512
MIN_MEMORY_MB: Final = 16
MAX_MEMORY_MB: Final = 4096
# The original returns stdout and stderr whole; an envelope of 10 MiB is
# already more than any agent reads.
DEFAULT_MAX_OUTPUT_BYTES: Final = 10 * 1024 * 1024
MAX_OUTPUT_BYTES: Final = 100 * 1024 * 1024
# Distinct files of the pinned tree; ten times the largest store we measure.
DEFAULT_MAX_FILES: Final = 100_000
MAX_FILES: Final = 10_000_000

# The exit code of a script the runtime cut off at its time bound (the
# original's, and `timeout(1)`'s).
TIMEOUT_EXIT_CODE: Final = 124

LimitName = Literal["time", "memory", "output", "files"]


@dataclass(frozen=True)
class ExecLimits:
    """The bounds of one execution (validated on construction)."""

    timeout_ms: int = DEFAULT_TIMEOUT_MS
    memory_mb: int = DEFAULT_MEMORY_MB
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    max_files: int = DEFAULT_MAX_FILES

    def __post_init__(self) -> None:
        _check("timeout_ms", self.timeout_ms, 1, MAX_TIMEOUT_MS)
        _check("memory_mb", self.memory_mb, MIN_MEMORY_MB, MAX_MEMORY_MB)
        _check("max_output_bytes", self.max_output_bytes, 1, MAX_OUTPUT_BYTES)
        _check("max_files", self.max_files, 1, MAX_FILES)

    def to_data(self) -> dict[str, int]:
        """The bounds in force, as the report carries them."""
        return {
            "timeout_ms": self.timeout_ms,
            "memory_mb": self.memory_mb,
            "max_output_bytes": self.max_output_bytes,
            "max_files": self.max_files,
        }


def _check(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidFlagError(
            f"{name}: {value!r} must be an integer within {low}..{high}",
            suggestions=["memhtml help exec"],
        )


@dataclass(frozen=True)
class LimitHit:
    """A bound the script reached: which, its value, and what was reached (same unit)."""

    name: LimitName
    bound: int
    reached: int
    unit: str

    def to_data(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {"name": self.name, "bound": self.bound, "reached": self.reached, "unit": self.unit}

    def message(self) -> str:
        """The line appended to the script's stderr (the time wording is the original's)."""
        if self.name == "time":
            return f"Execution timeout: exceeded {self.bound}ms limit"
        if self.name == "memory":
            return f"Memory limit: the script needed more than {self.bound} MB"
        if self.name == "output":
            return f"Output limit: more than {self.bound} bytes of stdout and stderr"
        return f"Files limit: the script read more than {self.bound} files"
