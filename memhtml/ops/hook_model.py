"""The hybrid recall of a hook, run beside the keyword recall and handed back as hits.

A prompt hook has about half a second, and loading the local model (numpy,
onnxruntime, the session) takes most of that on this kind of machine. So the
model starts loading first, before the payload is read, and the whole hybrid
search (the query's embedding, the vector arm, the fused statement) runs
beside the lexical one:

- in a hook process (`preload(fork=True)`) in a **forked child**: importing
  numpy and onnxruntime is Python bytecode holding the interpreter's lock,
  and on a thread it would slow the keyword search it runs beside (measured:
  the parent's own numpy import took a third of a second on a busy machine).
  The child loads the model, reads the request (the query, the store) from a
  pipe, runs the search on its own connection and writes the hits back as
  JSON. It dies with its parent (PR_SET_PDEATHSIG) and never touches stdin or
  stdout (they are the host's). The parent never imports numpy at all;
- elsewhere (a library caller, a test) on a daemon thread.

The local model runs there without onnxruntime's graph optimizations: its
session starts sooner and one query costs a little more, the right trade for
one query (docs/benchmarks.md, "Costs behind the code"); the vector differs
from the optimized graph's by ~1e-7.
"""

from __future__ import annotations

import json
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Any

Run = Callable[[dict[str, Any]], list[list[str]] | None]


def _one_query_model(name: str) -> Any:
    """The configured model, built to answer one query fast (see the module docstring)."""
    if name == "local":
        from memhtml.embed.local import LocalEmbedder

        return LocalEmbedder(optimize=False)
    from memhtml.embed.registry import get_embedder

    return get_embedder(name)


def _load(name: str, *, own_process: bool) -> None:
    """Load the model `name` means. In a child of its own it is built for one query and
    registered under `name` there; on a thread the process's own instance is loaded."""
    from memhtml.embed.registry import get_embedder, register

    model = _one_query_model(name) if own_process else get_embedder(name)
    if model is None:
        return
    load = getattr(model, "load", None)
    if load is not None:
        load()
    if own_process:
        register(name, lambda: model)


class _Thread:
    """The model and the hybrid search on a daemon thread."""

    def __init__(self, name: str, run: Run) -> None:
        self.error: str | None = None
        self._run = run
        self._hits: list[list[str]] | None = None
        self._request: dict[str, Any] | None = None
        self._asked = threading.Event()
        self._done = threading.Event()
        threading.Thread(
            target=self._work, args=(name,), name="memhtml-hook-model", daemon=True
        ).start()

    def _work(self, name: str) -> None:
        try:
            _load(name, own_process=False)
            self._asked.wait()
            if self._request is not None:
                self._hits = self._run(self._request)
        except Exception as exc:  # reported on stderr; the keyword answer stands
            self.error = f"failed ({type(exc).__name__}: {exc})"
        finally:
            self._done.set()

    def ask(self, request: dict[str, Any]) -> None:
        """Run the hybrid search of `request` once the model is loaded."""
        self._request = request
        self._asked.set()

    def wait(self, deadline: float) -> list[list[str]] | None:
        """The hits, or None when they are not back by `deadline` (time.monotonic)."""
        self._done.wait(max(0.0, deadline - time.monotonic()))
        return self._hits


class _Child:
    """The model and the hybrid search in a forked child (see the module docstring)."""

    def __init__(self, name: str, run: Run) -> None:
        self.error: str | None = None
        requests_out, requests_in = os.pipe()
        answers_out, answers_in = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(requests_in)
            os.close(answers_out)
            _child(name, run, requests_out, answers_in)
        os.close(requests_out)
        os.close(answers_in)
        self._to = requests_in
        self._from = answers_out

    def ask(self, request: dict[str, Any]) -> None:
        """Send the request; the child runs it once its model is loaded."""
        try:
            os.write(self._to, json.dumps(request).encode("utf-8"))
        except OSError:  # the child is gone already: `wait` reads its EOF
            pass
        finally:
            os.close(self._to)

    def wait(self, deadline: float) -> list[list[str]] | None:
        """The hits, or None when they are not back by `deadline` (time.monotonic)."""
        data = b""
        try:
            while True:
                left = max(0.0, deadline - time.monotonic())
                if not select.select([self._from], [], [], left)[0]:
                    return None  # not ready in time
                chunk = os.read(self._from, 1 << 16)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(self._from)
        try:
            hits = json.loads(data)
        except ValueError:
            hits = None
        if not isinstance(hits, list):
            self.error = "could not run (the model or the index failed)"
            return None
        return hits


def _child(name: str, run: Run, requests: int, answers: int) -> None:
    """The child's whole life: load, read the request, search, write the hits, exit."""
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)  # the host's payload is the parent's
        os.dup2(devnull, 1)  # the host's channel is the parent's
        _die_with(os.getppid())
        # On a busy machine the parent's keyword answer is the one that must not wait: the
        # child yields the CPU to it (on an idle one each has a core and this changes nothing).
        os.nice(10)
        _load(name, own_process=True)
        raw = b""
        while chunk := os.read(requests, 1 << 16):
            raw += chunk
        if raw:
            hits = run(json.loads(raw))
            if hits is not None:
                os.write(answers, json.dumps(hits).encode("utf-8"))
                code = 0
    except BaseException:  # the parent reads EOF: the keyword answer stands
        pass
    finally:
        os._exit(code)


def _die_with(parent: int) -> None:
    """Be killed when the parent dies, however it dies (Linux's PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        return  # elsewhere: the closed pipe ends the child
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)


_PENDING: dict[str, _Thread | _Child] = {}


def preload(run: Run, *, fork: bool) -> None:
    """Start loading the configured embedding model now (in a child process when `fork`);
    `run` is the hybrid search it will run on the request `start(...).ask` sends."""
    from memhtml.ops.config import embedder_name

    name = embedder_name()
    if name == "off" or name in _PENDING:
        return
    try:
        _PENDING[name] = _Child(name, run) if fork and hasattr(os, "fork") else _Thread(name, run)
    except OSError:  # no fork, no pipe: the hybrid search starts later, on a thread
        return


def start(name: str, run: Run) -> _Thread | _Child:
    """The preloaded model of `name`, or one starting now on a thread."""
    return _PENDING.pop(name, None) or _Thread(name, run)
