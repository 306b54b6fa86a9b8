"""The executor seam: serial runs every task here, in order, with Ray's failure semantics.

The Ray executor itself is exercised in tests/bench/test_ray.py (one local
cluster for every Ray test); these need no Ray.
"""

from __future__ import annotations

import operator
import pickle
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.analysis import fanout
from memhtml.contracts.errors import ExtraRequiredError


def test_serial_map_keeps_input_order_and_passes_shared() -> None:
    ex = fanout.Serial()
    assert ex.map(abs, [3, -1, -2]) == [3, 1, 2]
    assert ex.map(operator.add, [1, 2, 3], shared=10) == [11, 12, 13]
    assert list(ex.as_completed(abs, [-5, 6])) == [(0, 5), (1, 6)]
    assert ex.describe() == {"kind": "serial", "workers": 1}


@given(st.lists(st.integers(-1000, 1000), max_size=30))
def test_serial_map_equals_a_plain_loop(items: list[int]) -> None:
    assert fanout.Serial().map(abs, items) == [abs(i) for i in items]


def test_a_task_error_is_raised_as_itself() -> None:
    with pytest.raises(ValueError, match="invalid literal"):
        fanout.Serial().map(int, ["1", "x"])


def test_a_task_sys_exit_leaves_as_system_exit_with_its_message() -> None:
    """A harness stops on bad data with sys.exit(message): the driver exits with it."""
    with pytest.raises(SystemExit) as info:
        fanout.Serial().map(sys.exit, ["the data is wrong"])
    assert info.value.code == "the data is wrong"


def test_task_exit_travels_between_processes() -> None:
    exc = pickle.loads(pickle.dumps(fanout.TaskExit("bad data")))
    assert isinstance(exc, fanout.TaskExit) and exc.code == "bad data"


def test_worker_env_forwards_memhtml_settings_and_the_code_path(tmp_path: Path) -> None:
    env = {"MEMHTML_EMBED": "fake", "HOME": "/root", "PYTHONPATH": "/x", "AWS_SECRET": "s"}
    out = fanout.worker_env([tmp_path], env)
    assert out == {"MEMHTML_EMBED": "fake", "PYTHONPATH": f"{tmp_path}:/x"}


def test_ray_missing_is_a_typed_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ExtraRequiredError) as info:
        fanout.executor_for("local")
    assert info.value.details["extra"] == "cluster"
    assert "memhtml[cluster]" in " ".join(info.value.suggestions)
    # serial needs nothing
    assert fanout.executor_for(None).kind == "serial"
