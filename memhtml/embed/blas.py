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
import os
from typing import Final

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
