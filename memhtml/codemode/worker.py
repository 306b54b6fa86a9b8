"""The code-mode worker: one QuickJS runtime in a process of its own.

`runner.py` starts it as `python -I -S worker.py <folder of _quickjs>`: no
site packages, no environment, nothing of memhtml imported, only the
standard library and the quickjs-ng binding's C module. A process of its own
is what makes the bounds hard: the binding refuses calls into Python while
its own time limit is set, and a script needs those calls to read files, so
the wall-time bound is the parent killing this process. Memory is QuickJS's
allocator limit, with an address-space limit as a backstop; output is
counted here before it leaves. The parent can kill the worker at any moment,
so nothing here needs cleaning up, and the worker dies with its parent.

Frames on stdin/stdout: one kind byte, a 4-byte big-endian length, the payload.
    parent -> worker   i init (INIT, the script, the guest's JSON), r an answer
    worker -> parent   q a request ("op\\nargument"), o / e stdout / stderr text,
                       l the output bound reached (LIMIT), d done (DONE + error text)
The worker imports no json (nor re): its start-up is part of every execution.
"""

from __future__ import annotations

import os
import resource
import struct
import sys

TYPE_CHECKING = False  # `typing` costs the worker's start-up ~15 ms (it imports re)
if TYPE_CHECKING:
    from typing import Any, Final

HEADER: Final = struct.Struct(">cI")
INIT: Final = struct.Struct(">IIII")  # memory MB, timeout ms, output bytes, script bytes
DONE: Final = struct.Struct(">iB")  # exit code, out of memory
LIMIT: Final = struct.Struct(">QQ")  # output bound, bytes reached
GUEST: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest")
# The guest sources, evaluated as one script after OFFSET newlines: a stack
# frame's line number says which source it is in, and guest/sandbox.js maps it
# back to the file a reader would look for. A script's own lines stay below.
SOURCES: Final = (
    ("sandbox.js", "memhtml:sandbox"),
    ("fs.js", "node:fs"),
    ("dom.js", "/workspace/lib/nhp.mjs"),
    ("corpus.js", "/workspace/lib/corpus.mjs"),
)
OFFSET: Final = 100_000
SCRIPT: Final = "/workspace/script.mjs"
STACK_BYTES: Final = 4 * 1024 * 1024  # of the main thread's 8 MiB
ERROR_TEXT_MAX: Final = 64 * 1024
UNSETTLED_EXIT: Final = 13  # Node's exit code for a top-level await that never settles


def read_exact(fd: int, size: int) -> bytes:
    """Exactly `size` bytes from `fd` (EOFError when the other side went away)."""
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> tuple[bytes, bytes]:
    """One (kind, payload) frame."""
    kind, size = HEADER.unpack(read_exact(fd, HEADER.size))
    return kind, read_exact(fd, size)


def write_frame(fd: int, kind: bytes, payload: bytes) -> None:
    """Write one frame whole."""
    view = memoryview(HEADER.pack(kind, len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


class Channel:
    """The two functions the guest gets from the host: requests, and output."""

    def __init__(self) -> None:
        self.max_output = 1
        self.written = 0

    def request(self, op: str, arg: str) -> str:
        """Ask the parent; its answer is the tagged text guest/sandbox.js reads."""
        write_frame(1, b"q", f"{op}\n{arg}".encode("utf-8", "replace"))
        try:
            _kind, payload = read_frame(0)
        except EOFError:
            os._exit(0)  # the parent stopped the execution
        return payload.decode("utf-8", "replace")

    def write(self, fd: int, text: str) -> None:
        """Send stdout (1) or stderr (2) text, stopping the execution at the output bound."""
        data = str(text).encode("utf-8", "replace")
        kind = b"o" if fd == 1 else b"e"
        if self.written + len(data) > self.max_output:
            keep = self.max_output - self.written
            if keep > 0:
                write_frame(1, kind, data[:keep])
            write_frame(1, b"l", LIMIT.pack(self.max_output, self.written + len(data)))
            os._exit(0)
        self.written += len(data)
        write_frame(1, kind, data)


def _die_with_parent(parent: int) -> None:
    """End this process when its parent is gone.

    PR_SET_PDEATHSIG (Linux) has the kernel kill the worker, which works even
    while QuickJS holds the GIL in a tight loop; a watchdog thread (which needs
    the GIL) is the fallback elsewhere. ctypes costs ~9 ms of start-up. `parent`
    is the pid the runner passed: a parent that died before this line ran has
    already been replaced by the reaper, so os.getppid() here would miss it.
    """
    import _thread
    import time

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
            if os.getppid() != parent:  # the parent died before the prctl took effect
                os._exit(0)
            return
        except OSError:
            pass

    def watch() -> None:
        while True:
            time.sleep(0.25)
            if os.getppid() != parent:
                os._exit(0)

    _thread.start_new_thread(watch, ())


def _bound_resources(memory_bytes: int, timeout_ms: int) -> None:
    seconds = timeout_ms // 1000 + 3
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    try:
        with open("/proc/self/statm") as statm:
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        ceiling = used + memory_bytes * 2 + 256 * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
    except (OSError, ValueError):
        pass


def run(ctx: Any, control: Any, source: str, memory_bytes: int) -> tuple[int, str | None, bool]:
    """Run the script as a module, then its jobs and timers, as Node's event loop would.

    Returns (exit code, error text, out of memory).
    """
    import _quickjs

    def out_of_memory() -> bool:
        usage = ctx.memory()
        return bool(usage["malloc_size"] >= memory_bytes * 0.9)

    try:
        promise = ctx.module(source)
    except (_quickjs.JSException, _quickjs.StackOverflow) as exc:
        return 1, str(control("map", str(exc))), out_of_memory()
    try:
        control("settle", promise)
        while True:
            while ctx.execute_pending_job():
                pass
            status = control("status")
            if status in ("rejected", "exited"):
                break
            if not control("timer"):
                break
    except (_quickjs.JSException, _quickjs.StackOverflow) as exc:
        return 1, str(exc), out_of_memory()
    if status == "rejected":
        try:
            oom = bool(control("oom")) or out_of_memory()
            error = control("error")
        except _quickjs.JSException:
            oom, error = out_of_memory(), "Uncaught error (its text could not be formatted)"
        return 1, str(error), oom
    if status == "pending":
        return UNSETTLED_EXIT, f"Warning: Detected unsettled top-level await in {SCRIPT}", False
    return int(control("exit_code")), None, False


def boot_source() -> tuple[str, str]:
    """The guest sources as one script, and their line table for the stack mapping."""
    parts: list[str] = []
    table: list[str] = []
    line = OFFSET + 1
    for name, shown in SOURCES:
        with open(os.path.join(GUEST, name), encoding="utf-8") as handle:
            text = handle.read().rstrip("\n") + ";\n"  # no ASI across sources
        table.append(f"[{line},{shown!r}]".replace("'", '"'))
        parts.append(text)
        line += text.count("\n")
    return "\n" * OFFSET + "".join(parts), "[" + ",".join(table) + "]"


def main(argv: list[str]) -> None:
    """Boot the runtime, wait for the script, run it, report, exit."""
    sys.path.insert(0, argv[1])
    _die_with_parent(int(argv[2]) if len(argv) > 2 else os.getppid())
    import _quickjs

    channel = Channel()
    ctx = _quickjs.Context()
    ctx.set_max_stack_size(STACK_BYTES)
    ctx.add_callable("__memhtml_host", channel.request)
    ctx.add_callable("__memhtml_write", channel.write)
    source, table = boot_source()
    ctx.eval(f"globalThis.__memhtml_sources = {table}")
    ctx.eval(source)
    control = ctx.get("__memhtml_control")
    ctx.eval("delete globalThis.__memhtml_control; delete globalThis.__memhtml_boot")

    _kind, payload = read_frame(0)
    memory_mb, timeout_ms, channel.max_output, size = INIT.unpack_from(payload)
    script = payload[INIT.size : INIT.size + size].decode("utf-8", "replace")
    control("configure", payload[INIT.size + size :].decode("utf-8", "replace"))
    memory_bytes = memory_mb * 1024 * 1024
    _bound_resources(memory_bytes, timeout_ms)
    ctx.set_memory_limit(memory_bytes)
    try:
        code, error, oom = run(ctx, control, script, memory_bytes)
    except MemoryError:
        code, error, oom = 1, "RangeError: out of memory", True
    except Exception as exc:  # the binding failing is still this script's report
        usage = ctx.memory()["malloc_size"]
        code, error, oom = 1, f"InternalError: {exc}", usage >= memory_bytes * 0.9
    text = (error or "")[:ERROR_TEXT_MAX].encode("utf-8", "replace")
    write_frame(1, b"d", DONE.pack(code, oom) + text)
    os._exit(0)  # a large heap is not worth freeing one object at a time


if __name__ == "__main__":
    main(sys.argv)
