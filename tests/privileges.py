"""Run a test's step as a process that file permissions bind, even when the suite runs as root.

CI runs as root, and root reads a file whatever its mode says (the DAC override
capabilities), so a `chmod 0` proves nothing there. The step runs instead in a
forked child that drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its
effective and permitted sets (the `capset` system call, Linux's capabilities(7)):
it is still root, owns what root owns, but a mode-0 file or folder refuses it
exactly as it refuses any user. As a non-root user the step runs in place.
"""

from __future__ import annotations

import ctypes
import os
import pickle
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_CAP_DAC_OVERRIDE = 1
_CAP_DAC_READ_SEARCH = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_file_override() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    header = _Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    mask = ~((1 << _CAP_DAC_OVERRIDE) | (1 << _CAP_DAC_READ_SEARCH)) & 0xFFFFFFFF
    data[0].effective &= mask
    data[0].permitted &= mask
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def bound_by_file_modes(step: Callable[[], T]) -> T:
    """`step()`, run where file modes bind the process; its result must pickle."""
    if os.geteuid() != 0:
        return step()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop the override, run, send the outcome, leave at once
        os.close(read_end)
        try:
            _drop_file_override()
            payload = pickle.dumps(("ok", step()))
        except BaseException as exc:
            payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
        with os.fdopen(write_end, "wb") as out:
            out.write(payload)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as incoming:
        raw = incoming.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(raw)
    if kind != "ok":
        raise AssertionError(f"the unprivileged step failed: {value}")
    return value  # type: ignore[no-any-return]
