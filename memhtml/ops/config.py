"""Configuration read from the environment, in one place."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from memhtml.contracts.dates import format_instant, normalize_datetime
from memhtml.contracts.errors import InvalidFlagError

DEFAULT_ROOT: Final = "~/memhtml"
DEFAULT_COVERAGE_FLOOR: Final = 0.5

Clock = Callable[[], str]


def resolve_root(repo: str | os.PathLike[str] | None) -> Path:
    """--repo, else $MEMHTML_ROOT, else ~/memhtml (absolute, user-expanded)."""
    raw = os.fspath(repo) if repo is not None else os.environ.get("MEMHTML_ROOT") or DEFAULT_ROOT
    return Path(raw).expanduser().absolute()


def make_clock(now: str | None = None) -> Clock:
    """A clock answering canonical UTC instants; fixed by `now` or $MEMHTML_NOW."""
    fixed = now or os.environ.get("MEMHTML_NOW")
    if fixed:
        value = normalize_datetime(fixed)
        if value is None:
            raise InvalidFlagError(f"MEMHTML_NOW / --now: {fixed!r} is not an ISO instant")
        if len(value) == 10:
            value += "T00:00:00Z"
        return lambda: value
    return lambda: format_instant(datetime.now(UTC))


def coverage_floor() -> float:
    """Share of chunks with vectors below which the vector arm is dropped."""
    raw = os.environ.get("MEMHTML_VECTOR_COVERAGE_FLOOR")
    try:
        return min(1.0, max(0.0, float(raw))) if raw else DEFAULT_COVERAGE_FLOOR
    except ValueError:
        return DEFAULT_COVERAGE_FLOOR


def hook_time_limit_ms() -> int | None:
    """$MEMHTML_HOOK_TIME_LIMIT_MS: the hard bound of every hook event (None: the defaults)."""
    raw = (os.environ.get("MEMHTML_HOOK_TIME_LIMIT_MS") or "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def embedder_name(explicit: str | None = None) -> str:
    """The configured embedder name (explicit, else $MEMHTML_EMBED, else local)."""
    return (explicit or os.environ.get("MEMHTML_EMBED") or "local").strip().lower()


def prefer_single_threaded_blas() -> None:
    """Run numpy's BLAS on one thread unless the user chose otherwise.

    Called by the CLI and the MCP server before numpy loads; any other process
    is switched at its first vector scan (memhtml.embed.blas, which says why).
    A search's matrix products are small or memory-bound; OpenBLAS's helper
    threads spin-wait after each one and take the second core from SQLite and
    the embedder (measured on 2 cores: docs/benchmarks.md, "Costs behind the
    code").
    """
    # memhtml.embed.blas.ENV, spelled here: importing it would load the embed package.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
