"""The code-mode worker: one QuickJS runtime in a process of its own.

`runner.py` starts it as `python -I -S worker.py <folder of _quickjs> <parent
pid> <folder of lxml>`: no site packages, no environment, nothing of memhtml
imported, only the standard library and the quickjs-ng binding's C module. A
process of its own is what makes the bounds hard: the binding refuses calls
into Python while its own time limit is set, and a script needs those calls
to read files, so the wall-time bound is the parent killing this process.
Memory is QuickJS's allocator limit, with an address-space limit as a
backstop; output is counted here before it leaves. The parent can kill the
worker at any moment, so nothing here needs cleaning up, and the worker dies
with its parent.

Everything a script makes happen runs here, under those bounds: HTML, the
guest's own strings (`parse` of /workspace/lib/nhp.mjs) and the files the
host reads for it (`memoryAt`, `corpus()`, `document`), is parsed in this
process with lxml and extract.py, both loaded on the first parse. A parse
that runs out of memory is the guest's `out of memory` (an InternalError it
may catch, as any failed allocation); one that runs past the deadline is
killed with the process. The host only resolves paths and reads blobs.

Frames on stdin/stdout: one kind byte, a 4-byte big-endian length, the payload.
    parent -> worker   i init (INIT, the script, the guest's JSON), r an answer
                       (tagged bytes: memhtml/codemode/host.py)
    worker -> parent   q a request ("op\\nargument"), o / e stdout / stderr text,
                       l the output bound reached (LIMIT), d done (DONE + error text)
The worker imports no json (nor re) until it parses: its start-up is part of
every execution.
"""

from __future__ import annotations

import os
import resource
import struct
import sys

TYPE_CHECKING = False  # `typing` imports `re`: a start-up cost the worker avoids
if TYPE_CHECKING:
    from typing import Any, Final

HEADER: Final = struct.Struct(">cI")
INIT: Final = struct.Struct(">IIII")  # memory MB, timeout ms, output bytes, script bytes
DONE: Final = struct.Struct(">iB")  # exit code, out of memory
LIMIT: Final = struct.Struct(">QQ")  # output bound, bytes reached
HERE: Final = os.path.dirname(os.path.abspath(__file__))
GUEST: Final = os.path.join(HERE, "guest")
CHUNK_LENGTH: Final = struct.Struct(">I")  # host.CHUNK_LENGTH
# A request naming one path (its JSON: PATH_MAX characters, escaped) is at most this long.
ARG_MAX: Final = 64 * 1024
UNREADABLE: Final = (
    '1{"code":"EIO","errno":-5,"syscall":"read","path":"","message":"EIO: i/o error, read"}'
)
TOO_LONG: Final = (
    '1{"code":"ENAMETOOLONG","errno":-36,"syscall":"open","path":"",'
    '"message":"ENAMETOOLONG: name too long, open"}'
)
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
    """Write one frame whole (the payload is not copied: it may be large)."""
    for part in (HEADER.pack(kind, len(payload)), payload):
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]


class Channel:
    """The two functions the guest gets from the host: requests, and output."""

    def __init__(self, lxml_folder: str | None = None) -> None:
        self.max_output = 1
        self.written = 0
        self.lxml_folder = lxml_folder
        self._extract: Any = None
        self._dumps: Any = None
        self.parse_ceiling: int | None = None  # the address space a parse may grow to
        self._ahead: tuple[Any, list[tuple[str, bool]]] | None = None  # (thread, [its answer])

    def ask(self, op: str, arg: str) -> bytes:
        """The parent's tagged answer to one request."""
        write_frame(1, b"q", f"{op}\n{arg}".encode("utf-8", "replace"))
        try:
            _kind, payload = read_frame(0)
        except EOFError:
            os._exit(0)  # the parent stopped the execution
        return payload

    def request(self, op: str, arg: str) -> str:
        """The answer guest/sandbox.js reads: a digit tag, then the body."""
        if op not in ("memories", "more"):
            self.settle()
        if op == "parse":
            return self._parsed(lambda x: x.dom_tree(arg))
        if len(arg) > ARG_MAX and op not in ("memories", "more"):
            # A path request this long holds a path over PATH_MAX: it never crosses.
            return TOO_LONG
        if op in ("memory", "dom"):
            answer = self.ask("blob", arg)
            if answer[:1] != b"5":
                return _text(answer)
            data = answer[1:]
            del answer
            return self._parsed(
                lambda x: x.memory_fields(data) if op == "memory" else x.dom_tree(data)
            )
        if op in ("memories", "more"):
            return self._corpus(op, arg)
        return _text(self.ask(op, arg))

    # -- corpus(): the next chunk is parsed while the guest builds the last one ---------
    def _corpus(self, op: str, arg: str) -> str:
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead[0].join()
        if op == "more" and ahead is not None:
            text, more = ahead[1][0]
        else:  # a new `memories` request drops what was parsed ahead for an earlier one
            text, more = self._chunk_text(self.ask(op, arg))
        if more and text[:1] == "0":
            import threading

            answer = self.ask("more", "")
            box = [(UNREADABLE, False)]  # what an unexpected failure of the thread leaves

            def parse_ahead() -> None:
                box[0] = self._chunk_text(answer)

            thread = threading.Thread(target=parse_ahead, daemon=True)
            thread.start()
            self._ahead = (thread, box)
        return text

    def _chunk_text(self, answer: bytes) -> tuple[str, bool]:
        """A `memories` chunk parsed into the guest's answer, and whether more follow."""
        if answer[:1] != b"4":
            return _text(answer), False
        return self._parsed(lambda x: _chunk(x, answer)), answer[1:2] == b"1"

    def settle(self) -> None:
        """Wait for a chunk parsed ahead (before any other parse: one parse at a time)."""
        if self._ahead is not None:
            self._ahead[0].join()

    def _parsed(self, parse: Any) -> str:
        """ "0" and the JSON of what `parse(extract)` returns; "6" when it ran out of memory.

        While it parses, the process may not grow past its size when the script
        started plus the script's memory bound (`parse_ceiling`): the parse counts
        against the memory the script's heap has taken, not beside it (a chunk
        parsed ahead holds the guest's heap to the same ceiling meanwhile).
        """
        if self._extract is None:
            self._load()  # outside the ceiling: lxml's own size is not the script's
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if self.parse_ceiling is not None:
            cap = max(self.parse_ceiling, address_space() or 0)
            resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
        try:
            return "0" + self._dumps(parse(self._extract))
        except MemoryError:
            return "6"
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    def _load(self) -> None:
        import importlib
        import json

        if self.lxml_folder and self.lxml_folder not in sys.path:
            sys.path.append(self.lxml_folder)
        sys.path.insert(0, HERE)
        try:
            self._extract = importlib.import_module("extract")
        finally:
            sys.path.remove(HERE)
        encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
        self._dumps = encoder.encode

    def write(self, fd: int, text: str) -> None:
        """Send stdout (1) or stderr (2) text, stopping the execution at the output bound."""
        text = str(text)
        kind = b"o" if fd == 1 else b"e"
        room = self.max_output - self.written
        # UTF-8 takes a byte or more per character: a longer text cannot fit, and only
        # what fits is worth encoding.
        data = text[: room + 1].encode("utf-8", "replace")
        if len(data) > room:
            if room > 0:
                write_frame(1, kind, data[:room])
            reached = self.written + max(len(text), len(data))
            write_frame(1, b"l", LIMIT.pack(self.max_output, reached))
            os._exit(0)
        self.written += len(data)
        write_frame(1, kind, data)


def _text(answer: bytes) -> str:
    """A host answer the guest reads as it is (a file's bytes decoded here)."""
    if answer[:1] == b"3":
        return "3" + answer[1:].decode("latin-1")
    if answer[:1] == b"2":
        return "2" + answer[1:].decode("utf-8", "replace")
    return answer.decode("utf-8", "replace")


def _chunk(extract: Any, answer: bytes) -> dict[str, Any]:
    """The fields of every file in a `memories` chunk (layout: host.py)."""
    items = []
    at = 2
    view = memoryview(answer)
    while at < len(answer):
        (size,) = CHUNK_LENGTH.unpack_from(answer, at)
        at += CHUNK_LENGTH.size
        items.append(extract.memory_fields(bytes(view[at : at + size])))
        at += size
    return {"items": items, "more": answer[1:2] == b"1"}


def _die_with_parent(parent: int) -> None:
    """End this process when its parent is gone.

    PR_SET_PDEATHSIG (Linux) has the kernel kill the worker, which works even
    while QuickJS holds the GIL in a tight loop; a watchdog thread (which needs
    the GIL) is the fallback elsewhere. ctypes is imported only here. `parent`
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


def address_space() -> int | None:
    """This process's mapped address space in bytes (None where /proc is not there)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def _bound_resources(memory_bytes: int, timeout_ms: int) -> int | None:
    """Set the process bounds; the address space they were set at (None: not measured)."""
    seconds = timeout_ms // 1000 + 3
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    used = address_space()
    if used is not None:
        ceiling = used + memory_bytes * 2 + 256 * 1024 * 1024
        try:
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
        except (OSError, ValueError):
            return None
    return used


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

    channel = Channel(argv[3] if len(argv) > 3 else None)
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
    channel.parse_ceiling = _bound_resources(memory_bytes, timeout_ms)
    if channel.parse_ceiling is not None:
        channel.parse_ceiling += memory_bytes
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
