"""Parsing many memories on every core: the one parallel parser of the index layer.

Parsing is pure CPU and its results pickle cheaply, so a large change set is
parsed in forked worker processes, chunk by chunk, and the results come back
in input order (the index's duplicate rule depends on path order). A rebuild
hands each worker a chunk of (path, blob id), and the worker reads the blobs
itself (memhtml.index.indexer.tree_rows_chunk); an update with a large change
set (a sync that received a thousand memories) and a sleep phase that rewrote
the corpus call `project_many` / `parse_many`. Below `PARALLEL_MIN` items, or
on one core, or where fork is unavailable, the same functions run inline. A
worker runs each chunk with the cycle collector paused (`_gc_paused`) and
keeps the objects it inherited out of the collector's reach.

Workers end with their parent however it ends (PR_SET_PDEATHSIG), and the
repository lock's descriptors are closed in every forked child (see
memhtml.store.lock), so a killed parent never leaves a worker holding the
store.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from types import TracebackType

    from memhtml.html import MemoryDocument
    from memhtml.index.project import Parsed

PARALLEL_MIN: Final = 400  # below this, forking costs more than it saves
CHUNK: Final = 250  # items per task: small enough to balance, large enough to amortize pickling
MAX_WORKERS: Final = 4

T = TypeVar("T")
R = TypeVar("R")
Job = Callable[[], list[Any]]


def usable_cpus() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _start_worker(parent: int) -> None:
    """In a new worker: be killed with the parent, and leave the parent's objects out of
    the cycle collector (they are shared copy-on-write; a collection would visit them all)."""
    import gc

    gc.freeze()
    _die_with_parent(parent)


def _gc_paused(fn: Callable[[list[T]], list[R]], chunk: list[T]) -> list[R]:
    """`fn(chunk)` with the cycle collector paused (in a worker).

    Parsing makes many container objects and few cycles: collections during a
    chunk cost ~10 % of the parse and free next to nothing. Whatever cycles a
    chunk leaves are collected after it, as usual.
    """
    import gc

    gc.disable()
    try:
        return fn(chunk)
    finally:
        gc.enable()


def _die_with_parent(parent: int) -> None:
    """In a worker: be killed when the parent dies, however it dies.

    A worker that outlives a SIGKILLed parent is useless (nobody reads its
    results) and holds memory; Linux's PR_SET_PDEATHSIG ends it with its parent.
    """
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: the pool's own shutdown is all there is
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)


def _fork_pool(n_items: int, min_items: int) -> Any:
    """A fork-based process pool, or None when inline is the better choice."""
    import multiprocessing

    cpus = usable_cpus()
    if n_items < min_items or cpus < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=min(cpus, MAX_WORKERS),
        mp_context=multiprocessing.get_context("fork"),
        initializer=_start_worker,
        initargs=(os.getpid(),),
    )


class ParsePool:
    """Runs a module-level function over chunks of items, on forked workers or inline.

    `submit` returns a job: calling it gives that chunk's results (waiting for
    the worker, or computing them inline). Collect jobs in submission order to
    keep the input's order. Leaving the `with` block cancels what is pending.
    """

    def __init__(self, n_items: int, *, min_items: int | None = None) -> None:
        self._pool = _fork_pool(n_items, PARALLEL_MIN if min_items is None else min_items)

    @property
    def parallel(self) -> bool:
        """True when chunks run in worker processes."""
        return self._pool is not None

    def submit(self, fn: Callable[[list[T]], list[R]], chunk: list[T]) -> Callable[[], list[R]]:
        """Start `fn(chunk)`; the returned callable waits for and returns its result."""
        if self._pool is None:
            return functools.partial(fn, chunk)
        return self._pool.submit(_gc_paused, fn, chunk).result

    def close(self, *, abandon: bool = False) -> None:
        """Stop the workers (pending chunks are cancelled). With `abandon` (the caller is
        unwinding: an error, SIGTERM) the workers are killed instead of waited for: their
        results are unwanted, and a worker forked while another thread held a lock it
        needs would never finish, leaving the process waiting for it at exit."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        if abandon:
            _kill_workers(pool)
        pool.shutdown(wait=not abandon, cancel_futures=True)

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(abandon=exc_type is not None)


def _kill_workers(pool: Any) -> None:
    """Kill an abandoned pool's workers and let its manager thread see them gone.

    The workers share one result pipe. A worker killed in the middle of writing a
    result leaves a partial message, and the executor's manager thread would wait in
    `recv` for the rest forever, since this process holds the pipe's write end too
    (and the interpreter's exit joins that thread). So once the workers are dead,
    this process closes its write end: the `recv` ends in EOF, the executor marks
    itself broken, and its thread ends. (ProcessPoolExecutor's `_processes` and
    `_result_queue` are private; any other shape is left to the plain shutdown.)
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(OSError, AttributeError, ValueError):
            process.kill()
    for process in processes:
        with contextlib.suppress(OSError, AttributeError, ValueError, AssertionError):
            process.join(5)
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        with contextlib.suppress(OSError):
            writer.close()


def map_chunks(
    fn: Callable[[list[T]], list[R]],
    items: Sequence[T],
    *,
    chunk: int | None = None,
    min_items: int | None = None,
) -> list[R]:
    """`fn` over `items` in chunks (CHUNK), results flattened in input order; in workers
    from `min_items` (PARALLEL_MIN) items on."""
    chunk = CHUNK if chunk is None else chunk
    min_items = PARALLEL_MIN if min_items is None else min_items
    with ParsePool(len(items), min_items=min_items) as pool:
        jobs = [pool.submit(fn, list(items[i : i + chunk])) for i in range(0, len(items), chunk)]
        return [result for job in jobs for result in job()]


# -- the two workloads ------------------------------------------------------------------
def parse_chunk(contents: list[bytes]) -> list[MemoryDocument]:
    """Parse each content (a worker's task)."""
    from memhtml.html import parse_memory

    return [parse_memory(data) for data in contents]


def project_chunk(
    items: list[tuple[str, str | None, bytes]],
) -> list[tuple[str, str | None, Parsed]]:
    """Parse and project each (path, blob sha, bytes) (a worker's task)."""
    from memhtml.index.project import project_bytes

    return [(path, sha, project_bytes(path, data, sha)) for path, sha, data in items]


def parse_many(contents: Sequence[bytes]) -> list[MemoryDocument]:
    """Parse every content, in order; in worker processes when there are many."""
    return map_chunks(parse_chunk, contents)


def project_many(
    items: Sequence[tuple[str, str | None, bytes]],
) -> list[tuple[str, str | None, Parsed]]:
    """Parse and project every (path, blob sha, bytes), in order; in workers when many."""
    return map_chunks(project_chunk, items)
