"""memhtml sets OpenBLAS to one thread once it scans vectors, as MEMHTML_BLAS_THREADS says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.embed.blas import DEFAULT_THREADS, wanted_threads


@given(st.integers(-5, 64))
def test_a_count_is_taken_and_zero_or_less_leaves_blas_alone(n: int) -> None:
    assert wanted_threads(str(n)) == (n if n > 0 else None)
    assert wanted_threads(f" {n} ") == (n if n > 0 else None)


def test_unset_or_blank_means_one_and_garbage_leaves_blas_alone() -> None:
    assert wanted_threads(None) == DEFAULT_THREADS == 1
    assert wanted_threads("") == 1
    assert wanted_threads("many") is None


def _threads_after(code: str, env_value: str | None, tmp_path: Path) -> list[str]:
    """Run `code` in a fresh interpreter; it prints OpenBLAS's threads before and after."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MEMHTML_BLAS_THREADS", "OPENBLAS_NUM_THREADS")
    }
    env["OPENBLAS_NUM_THREADS"] = "2"  # a known start, whatever the machine
    if env_value is not None:
        env["MEMHTML_BLAS_THREADS"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


SCRIPT = """
import numpy
from memhtml.embed.blas import blas_threads, limit_blas_threads
before = blas_threads()
print(before, limit_blas_threads(), blas_threads(), limit_blas_threads())
"""


def test_limit_sets_openblas_once(tmp_path: Path) -> None:
    before, set_to, after, again = _threads_after(SCRIPT, None, tmp_path)
    if before == "None":
        pytest.skip("this numpy has no OpenBLAS")
    assert (before, set_to, after, again) == ("2", "1", "1", "1")


def test_zero_leaves_openblas_as_it_was(tmp_path: Path) -> None:
    before, set_to, after, _ = _threads_after(SCRIPT, "0", tmp_path)
    if before == "None":
        pytest.skip("this numpy has no OpenBLAS")
    assert (before, set_to, after) == ("2", "None", "2")


def test_a_search_with_vectors_sets_it(tmp_path: Path) -> None:
    code = f"""
import memhtml
from memhtml.embed.blas import blas_threads
from memhtml.store.layout import init_repo
from pathlib import Path
root = Path({str(tmp_path / "memory")!r}); init_repo(root)
with memhtml.open(root, embedder="fake") as c:
    c.write(title="pool", claim="The pool drains at night.")
    import numpy
    before = blas_threads()
    c.search("when does the pool drain")
    print(before, blas_threads())
"""
    before, after = _threads_after(code, None, tmp_path)
    if before == "None":
        pytest.skip("this numpy has no OpenBLAS")
    assert (before, after) == ("2", "1")
