"""Unless OPENBLAS_NUM_THREADS says otherwise, a process that scans vectors runs OpenBLAS on one
thread: the CLI and the MCP server by the variable, any other process at its first scan."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


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


# A large scan splits its rows over threads, and its answer does not depend on how many.


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(min_value=0, max_value=40_000),
    dim=st.sampled_from([1, 3, 8, 384]),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_a_split_scan_gives_the_same_bits_on_any_number_of_threads(
    rows: int, dim: int, seed: int
) -> None:
    import numpy as np

    from memhtml.embed import blas

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dim)).astype(np.float32)
    vector = rng.standard_normal(dim).astype(np.float32)
    answers = []
    real = blas.thread_budget
    try:
        for threads in (1, 2, 3, 4):
            blas.thread_budget = lambda n=threads: n
            answers.append(blas.split_matvec(matrix, vector))
    finally:
        blas.thread_budget = real
    assert all(np.array_equal(answers[0], other) for other in answers[1:])
    # Hypothesis found OpenBLAS giving other last bits for a whole short-vector product
    # (16,385 x 3) than for its blocks: the scan is defined block by block, never as that.
    assert np.allclose(answers[0], matrix @ vector, rtol=1e-5, atol=1e-5)


def test_a_large_scan_runs_on_more_than_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import numpy as np

    from memhtml.embed import blas

    pooled: list[tuple[str, list[int]]] = []  # each part: its thread and its blocks' starts
    real = blas._blocks

    def spy(matrix: np.ndarray, vector: np.ndarray, starts: range) -> list[np.ndarray]:
        pooled.append((threading.current_thread().name, list(starts)))
        return real(matrix, vector, starts)

    monkeypatch.setattr(blas, "thread_budget", lambda: 3)
    monkeypatch.setattr(blas, "_blocks", spy)
    rows = 5 * blas.SPLIT_MIN_ROWS + 5  # six blocks, the last of five rows
    matrix = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    vector = np.ones(4, dtype=np.float32)
    assert np.array_equal(blas.split_matvec(matrix, vector), matrix @ vector)
    step = blas.SPLIT_MIN_ROWS
    assert sorted(starts for _, starts in pooled) == [
        [0, step],
        [2 * step, 3 * step],
        [4 * step, 5 * step],
    ]
    helpers = [name for name, _ in pooled if name.startswith("memhtml-scan")]
    assert len(helpers) == 2  # two parts on the pool, the first on the caller's thread
    scan_threads = [t for t in threading.enumerate() if t.name.startswith("memhtml-scan")]
    assert scan_threads and all(t.daemon for t in scan_threads)  # nothing to wait for at exit
    pooled.clear()
    small = matrix[: blas.SPLIT_MIN_ROWS]
    assert np.array_equal(blas.split_matvec(small, vector), small @ vector)
    assert pooled == []  # one product, on the caller's thread


def test_a_failing_part_raises_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from memhtml.embed import blas

    monkeypatch.setattr(blas, "thread_budget", lambda: 2)
    matrix = np.ones((2 * blas.SPLIT_MIN_ROWS, 4), dtype=np.float32)
    with pytest.raises(ValueError):
        blas.split_matvec(matrix, np.ones(5, dtype=np.float32))  # the dimensions disagree


def test_with_openblas_on_several_threads_the_scan_is_not_split(tmp_path: Path) -> None:
    # The user's OPENBLAS_NUM_THREADS splits the product at OpenBLAS's own boundaries;
    # splitting it again would move the last bits, so one product it stays.
    code = (
        "import numpy as np; from memhtml.embed import blas\n"
        "m = np.random.default_rng(0).standard_normal((11433, 384)).astype(np.float32)\n"
        "v = np.random.default_rng(1).standard_normal(384).astype(np.float32)\n"
        "same = np.array_equal(blas.split_matvec(m, v), m @ v)\n"
        "print(blas.blas_threads(), same,"
        " any(t.name.startswith('memhtml-scan') for t in __import__('threading').enumerate()))"
    )
    assert _run(code, tmp_path, "2") == ["2", "True", "False"]
    assert _run(code, tmp_path, None) == ["1", "True", "True"]
