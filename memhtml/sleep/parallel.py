"""Parsing a large change set on every core: a phase that touches the whole corpus
(confidence decay rewrites every memory's head) would otherwise parse 10k files
on one core before they are validated and reprojected."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from memhtml.html import MemoryDocument

PARALLEL_MIN: Final = 400  # below this, forking costs more than it saves
CHUNK: Final = 250


def _parse_chunk(items: list[bytes]) -> list[MemoryDocument]:
    from memhtml.html import parse_memory

    return [parse_memory(data) for data in items]


def _die_with_parent(parent: int) -> None:
    """In a worker: end with the run, however it ends (PR_SET_PDEATHSIG on Linux)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def parse_many(contents: Sequence[bytes]) -> list[MemoryDocument]:
    """Parse every content, in order; in worker processes when there are many and cores to spare."""
    import multiprocessing

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (
        len(contents) < PARALLEL_MIN
        or (cpus or 1) < 2
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return _parse_chunk(list(contents))
    from concurrent.futures import ProcessPoolExecutor

    chunks = [list(contents[i : i + CHUNK]) for i in range(0, len(contents), CHUNK)]
    with ProcessPoolExecutor(
        max_workers=min(cpus or 2, 4),
        mp_context=multiprocessing.get_context("fork"),
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        return [doc for docs in pool.map(_parse_chunk, chunks) for doc in docs]
