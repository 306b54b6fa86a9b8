"""The host side of the guest's requests: reads of the pinned tree, and nothing else.

Every request a script can make through the worker arrives here as `(op,
argument)` and is answered from the `PinnedTree`: the listing, one file's
bytes (as text, as binary, or for the worker to parse), its size, and the
bulk `memories` request behind the helper's `corpus()`. Paths are resolved
here again, whatever the guest did first, so this module is the boundary.

The host parses nothing a script gives it and runs nothing a script chooses:
HTML is parsed in the worker (memhtml/codemode/extract.py), under the
script's memory bound and deadline. What the host does on a script's behalf
is bounded here: a path longer than PATH_MAX is ENAMETOOLONG; a file larger
than the script's memory bound is never read (the guest sees the allocation
fail, as an `out of memory` it may catch; uncaught, the report's `limit` is
`memory`); a `memories` answer holds at most CHUNK files or CHUNK_BYTES;
the blobs read stay under CACHE_BYTES; each distinct file read counts
towards the files bound, and reaching it, or the deadline, stops the
execution.

Answers are bytes with a one-byte tag (read by `Channel` in worker.py):
0 a JSON value, 1 a JSON error the guest raises as a Node-style error,
2 a file's bytes as UTF-8 text, 3 a file's bytes as binary, 4 a chunk of
files for the worker to parse, 5 one file for the worker to parse, 6 out of
memory.
"""

from __future__ import annotations

import json
import struct
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from memhtml.codemode.limits import ExecLimits, LimitHit
from memhtml.codemode.tree import PATH_MAX, FileTooLargeError, GuestFsError, PinnedTree

# Files per answer of a `memories` request, and the bytes one answer may carry
# (a larger file goes alone). The host reads the next chunk while the worker
# parses the last one (two cores, two processes).
CHUNK: Final = 250
CHUNK_BYTES: Final = 8 * 1024 * 1024
# A chunk's layout: "4", 1 if more follow, then per file a 4-byte length and its bytes.
CHUNK_LENGTH: Final = struct.Struct(">I")
OUT_OF_MEMORY: Final = b"6"


class LimitReachedError(Exception):
    """A bound was reached while answering: the execution ends with this limit."""

    def __init__(self, limit: LimitHit) -> None:
        super().__init__(limit.message())
        self.limit = limit


def _json(value: Any) -> bytes:
    return b"0" + json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _error(exc: GuestFsError) -> bytes:
    return b"1" + json.dumps(exc.to_data()).encode()


class Host:
    """Answers one execution's guest requests against one pinned tree."""

    def __init__(self, tree: PinnedTree, limits: ExecLimits, deadline: float) -> None:
        self.tree = tree
        self.limits = limits
        self.deadline = deadline
        # A file the script could not hold is not worth reading on its behalf.
        self.max_file_bytes = limits.memory_mb * 1024 * 1024
        self.read_paths: set[str] = set()
        self._queue: deque[str] = deque()  # guest paths a `memories` request still has to answer
        self._ready: bytes | None = None  # the next chunk, prepared ahead
        self._deferred: LimitReachedError | None = None  # a bound the next chunk will reach
        self._ops: dict[str, Callable[[str], bytes]] = {
            "listing": lambda _arg: _json(self.tree.listing()),
            "read": self._read,
            "size": lambda arg: _json(self.tree.size(arg)),  # the guest sends the bare path
            "blob": self._blob,
            "memories": self._memories,
            "more": self._more,
        }

    @property
    def files_read(self) -> int:
        """Distinct files of the tree the script has read so far."""
        return len(self.read_paths)

    def handle(self, op: str, arg: str) -> bytes:
        """The tagged answer to one request (a LimitReachedError when a bound is reached)."""
        handler = self._ops.get(op)
        if handler is None:
            return _error(GuestFsError("EINVAL", op[:64] or "call", ""))
        try:
            return handler(arg)
        except GuestFsError as exc:
            return _error(exc)
        except FileTooLargeError:
            return OUT_OF_MEMORY
        except (ValueError, KeyError, TypeError):  # a malformed request is the guest's error
            return _error(GuestFsError("EINVAL", op, ""))

    # -- reads ------------------------------------------------------------------------
    def _count(self, path: str) -> None:
        if path not in self.read_paths:
            if len(self.read_paths) >= self.limits.max_files:
                bound = self.limits.max_files
                raise LimitReachedError(LimitHit("files", bound, bound + 1, "files"))
            self.read_paths.add(path)

    def _load(self, request: dict[str, Any]) -> bytes:
        guest_path = request["path"]
        shown = request.get("shown")
        try:
            path = self.tree.resolve(guest_path)
        except GuestFsError as exc:
            if isinstance(shown, str) and exc.code != "ENAMETOOLONG":
                exc = GuestFsError(exc.code, exc.syscall, shown[:PATH_MAX])
            raise exc from None
        self._count(path)
        return self.tree.read_at(path, self.max_file_bytes)

    def _read(self, arg: str) -> bytes:
        request = json.loads(arg)
        data = self._load(request)
        return (b"2" if request.get("enc") == "utf8" else b"3") + data

    def _blob(self, arg: str) -> bytes:
        return b"5" + self._load(json.loads(arg))

    # -- corpus(): one request, answered in chunks --------------------------------------
    def _memories(self, arg: str) -> bytes:
        paths = json.loads(arg)
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise GuestFsError("EINVAL", "memories", "")
        self._queue = deque(paths)
        self._ready = None
        self._deferred = None
        return self._more("")

    def _more(self, _arg: str) -> bytes:
        if self._deferred is not None:
            raise self._deferred
        ready, self._ready = self._ready, None
        return ready if ready is not None else self._chunk()

    def prefetch(self) -> None:
        """Read the next chunk of a `memories` request before the guest asks for it.

        The files bound a prepared chunk reaches stops the script only when it
        asks for that chunk; the deadline stops it at once.
        """
        if self._queue and self._ready is None and self._deferred is None:
            try:
                self._ready = self._chunk()
            except LimitReachedError as stop:
                if stop.limit.name != "files":
                    raise
                self._deferred = stop

    def _chunk(self) -> bytes:
        try:
            return self._read_chunk()
        except GuestFsError as exc:  # prepared ahead or not, the guest raises it on its request
            self._queue.clear()
            return _error(exc)
        except FileTooLargeError:
            self._queue.clear()
            return OUT_OF_MEMORY

    def _take(self) -> list[tuple[str, str]]:
        """The next chunk's (guest path, tree path) pairs, at most CHUNK files or CHUNK_BYTES."""
        batch: list[tuple[str, str]] = []
        total = 0
        while self._queue and len(batch) < CHUNK:
            guest_path = self._queue[0]
            path = self.tree.resolve(guest_path)
            size = self.tree.file_size(path)
            if size > self.max_file_bytes:
                raise FileTooLargeError(path, size)
            if batch and total + size > CHUNK_BYTES:
                break
            self._queue.popleft()
            batch.append((guest_path, path))
            total += size
        return batch

    def _read_chunk(self) -> bytes:
        batch = self._take()
        self.tree.fetch([path for _, path in batch])
        parts = [b"4", b"1" if self._queue else b"0"]
        for _guest_path, path in batch:
            if time.monotonic() > self.deadline:
                bound = self.limits.timeout_ms
                raise LimitReachedError(LimitHit("time", bound, bound, "ms"))
            data = self.tree.read_at(path, self.max_file_bytes)
            self._count(path)
            parts += (CHUNK_LENGTH.pack(len(data)), data)
        return b"".join(parts)
