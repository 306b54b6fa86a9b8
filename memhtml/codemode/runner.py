"""`run_exec`: one script, one pinned tree, one worker process, one report.

The sequence: start the worker (it boots QuickJS and the guest sources while
the host resolves the commit), pin the commit, rewrite the script's imports,
send the init frame, then serve the worker's frames until it reports done,
dies, or a bound is reached. The wall-time bound is the deadline of this
loop: past it the worker is killed, whatever it was doing (a busy loop never
yields, and the binding refuses calls into Python under its own time limit,
so only the process boundary can stop it).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

from memhtml.codemode.host import Host, LimitReachedError
from memhtml.codemode.imports import rewrite_imports
from memhtml.codemode.limits import MAX_OUTPUT_BYTES, ExecLimits, LimitHit
from memhtml.codemode.report import ExecReport, stopped_exit_code
from memhtml.codemode.tree import PinnedTree
from memhtml.codemode.worker import DONE, HEADER, INIT, LIMIT, write_frame
from memhtml.contracts.errors import InputTooLargeError, MissingArgumentError, SandboxError
from memhtml.contracts.limits import MAX_SCRIPT_CHARS
from memhtml.store.git import Git

WORKER: Final = Path(__file__).with_name("worker.py")
GUEST: Final = Path(__file__).with_name("guest")
_STDERR_KEEP: Final = 16 * 1024
# Bytes of the tree an execution read past which the freed heap is handed back.
RELEASE_AFTER_BYTES: Final = 16 * 1024 * 1024


def _quickjs_folder() -> str:
    """Where the quickjs-ng binding's C module is (found without importing it)."""
    spec = importlib.util.find_spec("_quickjs")
    if spec is None or spec.origin is None:
        raise SandboxError(
            "the QuickJS runtime (the quickjs-ng package) is not installed",
            suggestions=["pip install quickjs-ng"],
        )
    return str(Path(spec.origin).parent)


def _lxml_folder() -> str:
    """Where lxml is (found without importing it): the worker parses HTML with it."""
    spec = importlib.util.find_spec("lxml")
    if spec is None or not spec.submodule_search_locations:
        raise SandboxError("lxml is not installed", suggestions=["pip install lxml"])
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


class FrameTooLargeError(Exception):
    """The worker announced a frame larger than the parent will hold."""

    def __init__(self, size: int) -> None:
        super().__init__(f"a frame of {size} bytes")
        self.size = size


class _Worker:
    """The worker process and its frame stream."""

    def __init__(self) -> None:
        argv = [sys.executable, "-I", "-S", str(WORKER), _quickjs_folder(), str(os.getpid())]
        self.max_frame = MAX_OUTPUT_BYTES  # until the limits are known
        self.proc = subprocess.Popen(
            [*argv, _lxml_folder()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd="/",
            env={"TZ": "UTC", "LC_ALL": "C.UTF-8"},
            close_fds=True,
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        assert self.proc.stderr is not None
        self.to = self.proc.stdin.fileno()
        self.frm = self.proc.stdout.fileno()
        self.err = self.proc.stderr.fileno()
        self.buffer = bytearray()
        self.stderr = bytearray()
        self.poll = select.poll()  # not select(): a long-lived server may hold fds past 1024
        self.poll.register(self.frm, select.POLLIN)
        self.poll.register(self.err, select.POLLIN)

    def send(self, kind: bytes, payload: bytes) -> bool:
        """Write a frame; False when the worker is gone."""
        try:
            write_frame(self.to, kind, payload)
        except (BrokenPipeError, OSError):
            return False
        return True

    def frame(self, deadline: float) -> tuple[bytes, bytes] | None:
        """The next frame; None at the deadline; (b"", b"") when the worker has exited.

        A frame announced larger than `max_frame` is FrameTooLargeError before
        any of it is buffered.
        """
        while True:
            if len(self.buffer) >= HEADER.size:
                kind, size = HEADER.unpack_from(self.buffer)
                if size > self.max_frame:
                    raise FrameTooLargeError(size)
                if len(self.buffer) >= HEADER.size + size:
                    payload = bytes(self.buffer[HEADER.size : HEADER.size + size])
                    del self.buffer[: HEADER.size + size]
                    if not self.buffer:
                        self.buffer = bytearray()  # let a large frame's buffer go
                    return kind, payload
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready = {fd for fd, _ in self.poll.poll(left * 1000)}
            if self.err in ready:
                chunk = os.read(self.err, 65536)
                if not chunk:
                    self.poll.unregister(self.err)
                elif len(self.stderr) < _STDERR_KEEP:
                    self.stderr += chunk
            if self.frm in ready:
                chunk = os.read(self.frm, 1 << 20)
                if not chunk:
                    return b"", b""
                self.buffer += chunk

    def close(self) -> None:
        """Kill the worker (if it still runs) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _release_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc), after an execution read much.

    The blobs a script read are freed with the tree, but glibc keeps the heap
    they grew (its mmap threshold rises with the first large free), so a
    long-lived server would keep an execution's reads as resident memory.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):  # not glibc
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def _seed(sha: str) -> list[int]:
    digest = hashlib.sha256(sha.encode()).digest()
    return [int.from_bytes(digest[:4], "big"), int.from_bytes(digest[4:8], "big")]


class _Run:
    """The serve loop of one execution: output, requests, and how it ended."""

    def __init__(self, worker: _Worker, host: Host, limits: ExecLimits) -> None:
        self.worker = worker
        self.host = host
        self.limits = limits
        self.out: list[str] = []
        self.err: list[str] = []
        self.size = 0
        self.limit: LimitHit | None = None
        self.done: tuple[int, str, bool] | None = None  # exit code, error text, out of memory

    def _output(self, kind: bytes, payload: bytes) -> bool:
        room = self.limits.max_output_bytes - self.size
        text = payload[: max(room, 0)].decode("utf-8", "replace")
        (self.out if kind == b"o" else self.err).append(text)
        self.size += len(payload)
        if self.size > self.limits.max_output_bytes:
            self.limit = LimitHit("output", self.limits.max_output_bytes, self.size, "bytes")
            return False
        return True

    def serve(self, started: float, deadline: float) -> None:
        """Run until done, a bound, or the worker's death."""
        while True:
            try:
                frame = self.worker.frame(deadline)
            except FrameTooLargeError as big:
                # Only a request can be this large, and what a script passes in counts
                # towards its memory: more than its bound could never have been held.
                reached = -(-big.size // (1024 * 1024))
                self.limit = LimitHit("memory", self.limits.memory_mb, reached, "MB")
                return
            if frame is None:
                self._timed_out(started)
                return
            kind, payload = frame
            if kind in (b"o", b"e"):
                if not self._output(kind, payload):
                    return
            elif kind == b"q":
                op, _, arg = payload.decode("utf-8", "replace").partition("\n")
                try:
                    answer = self.host.handle(op, arg)
                    if not self.worker.send(b"r", answer):
                        return
                    del answer
                    self.host.prefetch()
                except LimitReachedError as stop:
                    self.limit = stop.limit
                    if stop.limit.name == "time":
                        self._timed_out(started)
                    return
            elif kind == b"l":
                bound, reached = LIMIT.unpack_from(payload)
                self.limit = LimitHit("output", bound, max(reached, self.size), "bytes")
                return
            elif kind == b"d":
                code, oom = DONE.unpack_from(payload)
                self.done = (code, payload[DONE.size :].decode("utf-8", "replace"), bool(oom))
                return
            else:  # the worker exited without reporting
                return

    def _timed_out(self, started: float) -> None:
        elapsed = round((time.monotonic() - started) * 1000)
        self.limit = LimitHit("time", self.limits.timeout_ms, max(elapsed, 0), "ms")


def run_exec(
    git: Git,
    script: str,
    *,
    sha: str | None = None,
    limits: ExecLimits | None = None,
) -> ExecReport:
    """Run `script` (an ES module) against the tree of `sha` (default HEAD); see the module doc.

    A blank script is ERR_MISSING_ARGUMENT; a ref that names no commit is
    ERR_INVALID_MEMORY; a sandbox that cannot start or dies without a report
    is ERR_SANDBOX. Anything the script does, throwing included, is a report.
    """
    if not script.strip():
        raise MissingArgumentError(
            "the script is empty", suggestions=["memhtml exec --script '<code>'"]
        )
    if len(script) > MAX_SCRIPT_CHARS:
        raise InputTooLargeError(
            f"the script is {len(script):,} characters; at most {MAX_SCRIPT_CHARS:,} are accepted",
            suggestions=["move data the script embeds into memories it reads"],
            details={"field": "script", "limit": MAX_SCRIPT_CHARS, "length": len(script)},
        )
    limits = limits or ExecLimits()
    worker = _Worker()
    tree: PinnedTree | None = None
    try:
        tree = PinnedTree.pin(git, sha)
        started = time.monotonic()  # reading the script's imports is its time already
        deadline = started + limits.timeout_ms / 1000
        try:
            source = rewrite_imports(script, deadline)
        except TimeoutError:
            return _timed_out_early(tree, limits, started)
        files = {
            "/workspace/lib/corpus.mjs": (GUEST / "corpus.js").read_text(encoding="utf-8"),
            "/workspace/lib/nhp.mjs": (GUEST / "dom.js").read_text(encoding="utf-8"),
        }
        script_bytes = source.encode("utf-8", "replace")
        guest = {
            "now_ms": tree.commit_time * 1000,
            "seed": _seed(tree.commit),
            "script": script,
            "files": files,
        }
        sizes = (limits.memory_mb, limits.timeout_ms, limits.max_output_bytes, len(script_bytes))
        init = INIT.pack(*sizes) + script_bytes + json.dumps(guest).encode("utf-8", "replace")
        host = Host(tree, limits, deadline)
        worker.max_frame = max(limits.memory_mb * 1024 * 1024, limits.max_output_bytes) + (1 << 16)
        run = _Run(worker, host, limits)
        if worker.send(b"i", init):
            run.serve(started, deadline)
        duration = round((time.monotonic() - started) * 1000)
        worker.close()
        return _report(tree, run, worker, limits, duration)
    finally:
        worker.close()
        if tree is not None:
            tree.close()
            if tree.bytes_read > RELEASE_AFTER_BYTES:
                _release_freed_memory()


def _timed_out_early(tree: PinnedTree, limits: ExecLimits, started: float) -> ExecReport:
    """The report of a script whose deadline passed before it could start."""
    elapsed = round((time.monotonic() - started) * 1000)
    limit = LimitHit("time", limits.timeout_ms, elapsed, "ms")
    return ExecReport(
        sha=tree.commit,
        ref=tree.ref,
        exit_code=stopped_exit_code(limit),
        stdout="",
        stderr=limit.message() + "\n",
        duration_ms=elapsed,
        limits=limits,
        limit=limit,
    )


def _report(
    tree: PinnedTree, run: _Run, worker: _Worker, limits: ExecLimits, duration: int
) -> ExecReport:
    stdout, stderr = "".join(run.out), "".join(run.err)
    limit = run.limit
    if limit is None and run.done is None:
        code = worker.proc.returncode
        raise SandboxError(
            f"the sandbox stopped without a report (exit status {code})",
            details={"stderr": worker.stderr.decode("utf-8", "replace")[-4000:]},
        )
    if limit is None and run.done is not None:
        code, error, oom = run.done
        if error:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + error + "\n"
        if oom:
            limit = LimitHit("memory", limits.memory_mb, limits.memory_mb, "MB")
        else:
            return ExecReport(
                sha=tree.commit,
                ref=tree.ref,
                exit_code=code,
                stdout=stdout,
                stderr=stderr,
                duration_ms=duration,
                limits=limits,
                files_read=run.host.files_read,
            )
    assert limit is not None
    stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + limit.message() + "\n"
    return ExecReport(
        sha=tree.commit,
        ref=tree.ref,
        exit_code=stopped_exit_code(limit),
        stdout=stdout,
        stderr=stderr,
        duration_ms=duration,
        limits=limits,
        files_read=run.host.files_read,
        limit=limit,
    )
