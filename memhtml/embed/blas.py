"""How many threads numpy's OpenBLAS may use for memhtml's vector scans.

A search's exact vector scan is one matrix-vector product (``matrix @
query``: 10k x 384 float32 is 15 MB, 100k is 150 MB). It is memory-bound, and
it runs beside the fts arm on another thread while a query embedding may hold
both cores. OpenBLAS splits such a product over every core and its threads
then wait on each other and on the rest of the search: on this project's
2-core machine the 10k scan took 8-10 ms with two BLAS threads against 2.6-3.6
ms with one, and 43-49 against 30-33 ms at 100k, under the same load
(docs/benchmarks.md). Each output is one row's dot product either way, so the
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
import itertools
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


# The fewest rows a part of a split scan gets, and the row alignment of the parts.
SPLIT_MIN_ROWS: Final = 4096
_ALIGN: Final = 64


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
    two can: at 100k x 384 the product took 18.9 ms on one thread against 11.3
    ms split in two, 1.07 against 0.75 ms at 10k (bench/split_scan.py). The
    parts (as many as `thread_budget` allows) run on our own daemon threads
    (`_ScanPool`), which block instead of spinning, so unlike OpenBLAS's
    threads (above) they cost nothing while they wait for a core.
    Parts start at multiples of 64 rows, so with OpenBLAS on one thread each
    row's dot product goes through the same kernel path as in one product:
    the answer is bit-identical (tests/embed/test_blas.py holds that). Where
    OpenBLAS runs on several threads (the user's `OPENBLAS_NUM_THREADS`) it
    splits the product itself, at its own boundaries, so the scan is not
    split again (nor under a BLAS other than OpenBLAS, whose kernels were
    not checked).
    """
    import numpy as np

    rows, threads = int(matrix.shape[0]), thread_budget()
    parts = min(threads, rows // SPLIT_MIN_ROWS)
    if parts < 2 or not _blas_on_one_thread():
        return matrix @ vector
    step = _ALIGN * -(-rows // (parts * _ALIGN))  # rows per part, rounded up to _ALIGN
    bounds = [min(rows, i * step) for i in range(parts + 1)]
    pool = _scan_pool(threads - 1)
    later = [
        pool.submit(functools.partial(np.matmul, matrix[a:b], vector))
        for a, b in itertools.pairwise(bounds[1:])
    ]
    first = matrix[: bounds[1]] @ vector
    return np.concatenate([first, *(f.result() for f in later)])
