"""The host side of the guest's requests: reads of the pinned tree, and nothing else.

Every request a script can make arrives here as `(op, argument)` and is
answered from the `PinnedTree`: the listing, one file's text or bytes, its
size, a memory's fields, a memory's DOM, a parsed HTML string, and the bulk
`memories` request behind the helper's `corpus()`. Paths are resolved here
again, whatever the guest did first, so this module is the boundary. Each
distinct file read counts towards the files bound; reaching it, or the
deadline, stops the execution.

Answers are text with a one-digit tag (read by `call` in guest/sandbox.js):
0 a JSON value, 1 a JSON error the guest raises as a Node-style error,
2 text, 3 bytes as latin-1 text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

from memhtml.codemode.limits import ExecLimits, LimitHit
from memhtml.codemode.tree import GuestFsError, PinnedTree, tree_path

# Memories per answer of a `memories` request. The host parses the next chunk
# while the guest builds objects from the last one (two cores, two processes).
CHUNK: Final = 250


class LimitReachedError(Exception):
    """A bound was reached while answering: the execution ends with this limit."""

    def __init__(self, limit: LimitHit) -> None:
        super().__init__(limit.message())
        self.limit = limit


def _extract() -> ModuleType:
    """The lxml reader, imported on the first read (an empty script never loads lxml)."""
    from memhtml.codemode import extract

    return extract


def _json(value: Any) -> str:
    return "0" + json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Host:
    """Answers one execution's guest requests against one pinned tree."""

    def __init__(self, tree: PinnedTree, limits: ExecLimits, deadline: float) -> None:
        self.tree = tree
        self.limits = limits
        self.deadline = deadline
        self.read_paths: set[str] = set()
        self._queue: list[str] = []  # guest paths a `memories` request still has to answer
        self._ready: str | None = None  # the next chunk, prepared ahead
        self._deferred: LimitReachedError | None = None  # a bound the next chunk will reach
        self._ops: dict[str, Callable[[str], str]] = {
            "listing": lambda _arg: _json(self.tree.listing()),
            "read": self._read,
            "size": lambda arg: _json(self.tree.size(json.loads(arg))),
            "memory": self._memory,
            "memories": self._memories,
            "more": self._more,
            "dom": self._dom,
            "parse": lambda arg: _json(_extract().dom_tree(arg)),
        }

    @property
    def files_read(self) -> int:
        """Distinct files of the tree the script has read so far."""
        return len(self.read_paths)

    def handle(self, op: str, arg: str) -> str:
        """The tagged answer to one request (a LimitReachedError when a bound is reached)."""
        handler = self._ops.get(op)
        if handler is None:
            return "1" + json.dumps(GuestFsError("EINVAL", op or "call", "").to_data())
        try:
            return handler(arg)
        except GuestFsError as exc:
            return "1" + json.dumps(exc.to_data())
        except (ValueError, KeyError, TypeError):  # a malformed request is the guest's error
            return "1" + json.dumps(GuestFsError("EINVAL", op, "").to_data())

    # -- reads ------------------------------------------------------------------------
    def _count(self, path: str) -> None:
        if path not in self.read_paths:
            if len(self.read_paths) >= self.limits.max_files:
                bound = self.limits.max_files
                raise LimitReachedError(LimitHit("files", bound, bound + 1, "files"))
            self.read_paths.add(path)

    def _load(self, guest_path: str, shown: str | None = None) -> bytes:
        try:
            path, data = self.tree.read(guest_path)
        except GuestFsError as exc:
            if shown is not None:
                exc = GuestFsError(exc.code, exc.syscall, shown)
            raise exc from None
        self._count(path)
        return data

    def _read(self, arg: str) -> str:
        request = json.loads(arg)
        data = self._load(request["path"], request.get("shown"))
        if request.get("enc") == "utf8":
            return "2" + data.decode("utf-8", "replace")
        return "3" + data.decode("latin-1")

    def _memory(self, arg: str) -> str:
        request = json.loads(arg)
        return _json(_extract().memory_fields(self._load(request["path"], request.get("shown"))))

    def _dom(self, arg: str) -> str:
        return _json(_extract().dom_tree(self._load(json.loads(arg)["path"])))

    # -- corpus(): one request, answered in chunks --------------------------------------
    def _memories(self, arg: str) -> str:
        paths = json.loads(arg)
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise GuestFsError("EINVAL", "memories", "")
        self._queue = paths
        self._ready = None
        self._deferred = None
        return self._more("")

    def _more(self, _arg: str) -> str:
        if self._deferred is not None:
            raise self._deferred
        ready, self._ready = self._ready, None
        return ready if ready is not None else self._chunk()

    def prefetch(self) -> None:
        """Prepare the next chunk of a `memories` request before the guest asks for it.

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

    def _chunk(self) -> str:
        try:
            return self._read_chunk()
        except GuestFsError as exc:  # prepared ahead or not, the guest raises it on its request
            self._queue = []
            return "1" + json.dumps(exc.to_data())

    def _read_chunk(self) -> str:
        batch, self._queue = self._queue[:CHUNK], self._queue[CHUNK:]
        files = self.tree.files
        resolved = [(guest_path, tree_path(guest_path, "open")) for guest_path in batch]
        files.reader.blobs(files.entries[p] for _, p in resolved if p in files.entries)
        items = []
        fields = _extract().memory_fields
        for guest_path, path in resolved:
            if time.monotonic() > self.deadline:
                bound = self.limits.timeout_ms
                raise LimitReachedError(LimitHit("time", bound, bound, "ms"))
            _, data = self.tree.read_at(path, guest_path)
            self._count(path)
            items.append(fields(data))
        return _json({"items": items, "more": bool(self._queue)})
