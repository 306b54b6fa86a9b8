"""How many threads numpy's OpenBLAS may use for memhtml's vector scans.

A search's exact vector scan is one matrix-vector product (``matrix @
query``: 10k x 384 float32 is 15 MB, 100k is 150 MB). It is memory-bound, and
it runs beside the fts arm on another thread while a query embedding may hold
both cores. OpenBLAS splits such a product over every core and its threads
then wait on each other and on the rest of the search: on this project's
2-core machine the scan took longer with two BLAS threads than with one, at 10k
and at 100k, under the same load (docs/benchmarks.md, "Costs behind the
code"). Each output is one row's dot product either way, so the
similarities are bit-identical (checked on 50 queries at 10k and 100k).

So, unless the user chose (`OPENBLAS_NUM_THREADS` in the environment), a
process runs OpenBLAS on one thread: the CLI and the MCP server set that
variable before numpy loads (`ops.config.prefer_single_threaded_blas`), and
any other process (a library loop, a notebook) is switched at its first
vector scan through OpenBLAS's own setter (`limit_blas_threads`), once. numpy
builds without OpenBLAS (Accelerate, MKL) are left alone. OpenBLAS is found
among the libraries the process has loaded (`/proc/self/maps`), never loaded
by this module.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future

    import numpy.typing as npt

ENV: Final = "OPENBLAS_NUM_THREADS"  # the user's choice, read by OpenBLAS itself at load
# The setter's name in the OpenBLAS builds numpy ships (scipy-openblas, 64-bit
# ints), in older numpy wheels, and in a system OpenBLAS.
_SETTERS: Final = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GETTERS: Final = tuple(name.replace("_set_", "_get_") for name in _SETTERS)


def _openblas_paths() -> list[str]:
    """Loaded shared objects whose file name says OpenBLAS (Linux; elsewhere none)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    paths = {line.split(None, 5)[-1] for line in lines if "openblas" in line.lower()}
    return sorted(p for p in paths if p.startswith("/") and ".so" in os.path.basename(p))


def _call(names: tuple[str, ...], *args: int) -> int | None:
    """Call the first of `names` that a loaded OpenBLAS exports: its int answer (0 for a
    setter, which answers nothing); None when no loaded OpenBLAS exports any of them."""
    import ctypes

    for path in _openblas_paths():
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        except OSError:
            continue
        for name in names:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = None if args else ctypes.c_int
                answer = fn(*(ctypes.c_int(a) for a in args))
                return 0 if answer is None else int(answer)
    return None


def blas_threads() -> int | None:
    """OpenBLAS's current thread count, or None when the process has no OpenBLAS loaded."""
    return _call(_GETTERS)


@functools.cache
def limit_blas_threads() -> int | None:
    """Set OpenBLAS to one thread, once per process, unless `ENV` is set (numpy must be
    imported first). Returns 1 when it set it, None when it changed nothing (the user's
    or the CLI's own setting rules, or no OpenBLAS is loaded)."""
    if ENV in os.environ:
        return None
    return 1 if _call(_SETTERS, 1) is not None else None


# The rows of one block of a split scan (the fewest a part gets).
SPLIT_MIN_ROWS: Final = 4096


def thread_budget() -> int:
    """Threads one numeric job may use: the CPUs this process may run on, at most 4.

    Both the local model's intra-op threads (memhtml.embed.local) and a split
    scan's parts use it: past four, neither the BERT-mini matmuls nor the
    memory-bound scan gain, and more threads only take cores from the caller.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


class _ScanPool:
    """Daemon threads that run a scan's parts: they hold nothing a process must wait for
    at exit (the CLI ends without the interpreter's teardown when only daemons remain)."""

    def __init__(self, workers: int) -> None:
        import queue
        import threading

        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        for i in range(workers):
            threading.Thread(target=self._work, name=f"memhtml-scan-{i}", daemon=True).start()

    def _work(self) -> None:
        while True:
            future, job = self._jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(job())
                except BaseException as exc:
                    future.set_exception(exc)
            # Hold nothing between jobs: a finished job's closure keeps its rows (a view
            # of a corpus's mapped matrix) alive, and the file open, after the corpus closed.
            del future, job

    def submit(self, job: Callable[[], Any]) -> Future[Any]:
        from concurrent.futures import Future

        future: Future[Any] = Future()
        self._jobs.put((future, job))
        return future


@functools.cache
def _blas_on_one_thread() -> bool:
    """Whether OpenBLAS runs on one thread in this process (after `limit_blas_threads`)."""
    limit_blas_threads()
    return blas_threads() == 1


@functools.cache
def _scan_pool(workers: int) -> _ScanPool:
    """The scan's helper threads, started on first use and kept (a race makes a spare)."""
    return _ScanPool(workers)


def split_matvec(matrix: npt.NDArray[Any], vector: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``matrix @ vector``, its rows split over threads when the matrix is large.

    The scan is memory-bound, and one core cannot draw the memory bandwidth
    two can (docs/benchmarks.md, bench/split_scan.py). The parts (as many as
    `thread_budget` allows) run on our own daemon threads (`_ScanPool`), which
    block instead of spinning, so unlike OpenBLAS's threads (above) they cost
    nothing while they wait for a core.

    The answer must not depend on how many threads a machine lends, and
    OpenBLAS's result for a row is not a function of the row alone: with a
    short vector (a dimension of 3 or 8) its kernel's path, and so a row's
    last bits, depend on how many rows one call holds. So once a matrix has
    more than one block, the product is defined block by block, in fixed
    blocks of `SPLIT_MIN_ROWS` rows from the first row, one call each, and
    threads only share out whole blocks: one thread or four, the same calls
    on the same rows give the same bits (tests/embed/test_blas.py holds that).
    Where OpenBLAS runs on several threads (the user's `OPENBLAS_NUM_THREADS`)
    it splits the product itself, at its own boundaries, so the scan is left
    to it whole (as under a BLAS other than OpenBLAS, whose kernels were not
    checked).
    """
    import numpy as np

    rows = int(matrix.shape[0])
    if rows <= SPLIT_MIN_ROWS or not _blas_on_one_thread():
        return matrix @ vector
    starts = range(0, rows, SPLIT_MIN_ROWS)
    parts = min(thread_budget(), len(starts))
    if parts < 2:
        return np.concatenate(_blocks(matrix, vector, starts))
    share = -(-len(starts) // parts)  # blocks per part, rounded up
    groups = [starts[i : i + share] for i in range(0, len(starts), share)]
    pool = _scan_pool(thread_budget() - 1)
    later = [pool.submit(functools.partial(_blocks, matrix, vector, g)) for g in groups[1:]]
    first = _blocks(matrix, vector, groups[0])
    return np.concatenate([*first, *(block for f in later for block in f.result())])


def _blocks(
    matrix: npt.NDArray[Any], vector: npt.NDArray[Any], starts: range
) -> list[npt.NDArray[Any]]:
    """The products of the fixed blocks beginning at `starts`, one call each."""
    return [matrix[a : a + SPLIT_MIN_ROWS] @ vector for a in starts]
