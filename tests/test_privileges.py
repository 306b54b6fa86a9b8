"""The helper that makes file modes bind a test step, even as root."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.privileges import bound_by_file_modes


def test_a_mode_zero_file_refuses_the_step(tmp_path: Path) -> None:
    secret = tmp_path / "locked.txt"
    secret.write_text("x")
    secret.chmod(0)
    try:
        with pytest.raises(AssertionError, match="PermissionError"):
            bound_by_file_modes(secret.read_text)
    finally:
        secret.chmod(0o644)


def test_a_readable_file_is_read_and_the_result_comes_back(tmp_path: Path) -> None:
    (tmp_path / "open.txt").write_text("hello")
    assert bound_by_file_modes((tmp_path / "open.txt").read_text) == "hello"
