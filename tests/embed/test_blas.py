"""Unless OPENBLAS_NUM_THREADS says otherwise, a process that scans vectors runs OpenBLAS on one
thread: the CLI and the MCP server by the variable, any other process at its first scan."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(code: str, tmp_path: Path, openblas: str | None) -> list[str]:
    """Run `code` in a fresh interpreter with OPENBLAS_NUM_THREADS set or unset."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if openblas is not None:
        env["OPENBLAS_NUM_THREADS"] = openblas
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


# Two threads first (through OpenBLAS's own setter), then memhtml's limit, twice.
SCRIPT = """
import numpy
from memhtml.embed.blas import _SETTERS, _call, blas_threads, limit_blas_threads
_call(_SETTERS, 2)
print(blas_threads(), limit_blas_threads(), blas_threads(), limit_blas_threads())
"""


def test_a_library_process_is_set_to_one_thread_once(tmp_path: Path) -> None:
    before, set_to, after, again = _run(SCRIPT, tmp_path, None)
    if before == "None":
        pytest.skip("this numpy has no OpenBLAS")
    assert (before, set_to, after, again) == ("2", "1", "1", "1")


def test_the_users_setting_is_left_alone(tmp_path: Path) -> None:
    before, set_to, after, _ = _run(SCRIPT, tmp_path, "3")
    if before == "None":
        pytest.skip("this numpy has no OpenBLAS")
    assert (before, set_to, after) == ("2", "None", "2")


def test_a_search_with_vectors_sets_it(tmp_path: Path) -> None:
    code = f"""
import memhtml, numpy
from memhtml.embed.blas import _SETTERS, _call, blas_threads
from memhtml.store.layout import init_repo
from pathlib import Path
root = Path({str(tmp_path / "memory")!r})
init_repo(root)
with memhtml.open(root, embedder="fake") as c:
    c.write(title="pool", claim="The pool drains at night.")
    _call(_SETTERS, 2)
    before = blas_threads()
    c.search("when does the pool drain")
    print(before, blas_threads())
"""
    before, after = _run(code, tmp_path, None)
    if before == "None":
        pytest.skip("this numpy has no OpenBLAS")
    assert (before, after) == ("2", "1")


def test_the_cli_sets_the_variable_before_numpy_loads(tmp_path: Path) -> None:
    code = """
import os
from memhtml.ops.config import prefer_single_threaded_blas
prefer_single_threaded_blas()
import numpy
from memhtml.embed.blas import blas_threads, limit_blas_threads
print(os.environ["OPENBLAS_NUM_THREADS"], blas_threads(), limit_blas_threads())
"""
    value, threads, set_to = _run(code, tmp_path, None)
    assert value == "1" and set_to == "None"
    assert threads in ("1", "None")  # one thread from the start, or no OpenBLAS at all
