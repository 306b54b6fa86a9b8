"""The query's embedding for a hook, made beside the hook's own work and handed over as a vector.

A prompt hook has ~half a second, and loading the local model (numpy,
onnxruntime, the session) takes most of that on this kind of machine. So the
load starts first, before the payload is read, and runs beside the lexical
search:

- in a hook process (`preload(fork=True)`) in a **forked child**: the import
  of numpy and onnxruntime is Python bytecode that holds the interpreter's
  lock, and on a thread it would slow the lexical search it should run beside.
  The child loads the model, waits for the query on a pipe, and writes the
  vector back (float32 bytes); it dies with its parent (PR_SET_PDEATHSIG)
  and never touches stdin or stdout (they are the host's);
- elsewhere (a library caller, a test) on a daemon thread.

The vector then enters the search through the embedder seam as an embedder
that answers that one vector (`given`), so retrieval is unchanged.
"""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Any

from memhtml.contracts.errors import ModelUnavailableError


class _Thread:
    """The model loading and the query embedding on a daemon thread."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.error: str | None = None
        self.vector: Any = None
        self._done = threading.Event()
        self._query: str | None = None
        self._asked = threading.Event()
        threading.Thread(target=self._run, name="memhtml-hook-model", daemon=True).start()

    def _run(self) -> None:
        try:
            from memhtml.embed.registry import get_embedder

            embedder = get_embedder(self.name)
            if embedder is not None:
                load = getattr(embedder, "load", None)
                if load is not None:
                    load()
                self._asked.wait()
                if self._query:
                    self.vector = embedder.embed_query(self._query)
        except Exception as exc:  # reported on stderr; the keyword answer stands
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    def embed(self, query: str) -> None:
        """Embed `query` once the model is loaded."""
        self._query = query
        self._asked.set()

    def wait(self, deadline: float) -> Any:
        """The vector, or None when it is not ready by `deadline` (time.monotonic)."""
        self._done.wait(max(0.0, deadline - time.monotonic()))
        return self.vector


class _Child:
    """The model loading and the query embedding in a forked child (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.error: str | None = None
        to_child, from_parent = os.pipe()[::-1]
        from_child, to_parent = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(to_child)
            os.close(from_child)
            _child(name, from_parent, to_parent)
        os.close(from_parent)
        os.close(to_parent)
        self._to = to_child
        self._from = from_child

    def embed(self, query: str) -> None:
        """Send `query` to the child (it embeds it once its model is loaded)."""
        try:
            os.write(self._to, query.encode("utf-8"))
        except OSError:  # the child is gone already: `wait` reads its EOF
            pass
        finally:
            os.close(self._to)

    def wait(self, deadline: float) -> Any:
        """The vector, or None when it is not back by `deadline` (time.monotonic)."""
        data = b""
        try:
            while True:
                left = max(0.0, deadline - time.monotonic())
                if not select.select([self._from], [], [], left)[0]:
                    self.error = None  # not ready in time
                    return None
                chunk = os.read(self._from, 1 << 16)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(self._from)
        if not data:
            self.error = "the model could not be loaded"
            return None
        import numpy as np

        return np.frombuffer(data, dtype=np.float32)


def _child(name: str, queries: int, vectors: int) -> None:
    """The child's whole life: load, read the query, embed, write the vector, exit."""
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)  # the host's payload is the parent's
        os.dup2(devnull, 1)  # the host's channel is the parent's
        _die_with(os.getppid())
        embedder = _one_query_model(name)
        if embedder is not None:
            load = getattr(embedder, "load", None)
            if load is not None:
                load()
            query = b""
            while chunk := os.read(queries, 1 << 16):
                query += chunk
            if query:
                import numpy as np

                vector = np.asarray(embedder.embed_query(query.decode("utf-8")), np.float32)
                os.write(vectors, vector.tobytes())
                code = 0
    except BaseException:  # the parent reads EOF: no vector
        pass
    finally:
        os._exit(code)


def _one_query_model(name: str) -> Any:
    """The model that embeds one query fastest: the local model without onnxruntime's graph
    optimizations (its session starts ~0.2-0.4 s sooner; one query costs ~60 ms more)."""
    if name == "local":
        from memhtml.embed.local import LocalEmbedder

        return LocalEmbedder(optimize=False)
    from memhtml.embed.registry import get_embedder

    return get_embedder(name)


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


def preload(*, fork: bool) -> None:
    """Start loading the configured embedding model now (a child process when `fork`)."""
    from memhtml.ops.config import embedder_name

    name = embedder_name()
    if name == "off" or name in _PENDING:
        return
    try:
        _PENDING[name] = _Child(name) if fork and hasattr(os, "fork") else _Thread(name)
    except OSError:  # no fork, no pipe: the query is embedded later, or not at all
        return


def start(name: str, query: str) -> _Thread | _Child:
    """The model of `name` (preloaded, or starting now) asked to embed `query`."""
    warm = _PENDING.pop(name, None) or _Thread(name)
    warm.embed(query)
    return warm


class Given:
    """An embedder that answers one query vector made elsewhere (for one search); the vector
    is set once it arrives, so the search's matrix can load before it does."""

    batch_size = 1

    def __init__(self, model_id: str, dim: int) -> None:
        self.model_id = model_id
        self.dim = dim
        self.vector: Any = None

    def embed_query(self, text: str) -> Any:
        """The vector made beside the hook's work."""
        if self.vector is None:
            raise ModelUnavailableError("the query's vector has not arrived")
        return self.vector

    def embed_documents(self, texts: Any) -> Any:
        """Never asked: a hook's search writes nothing."""
        raise ModelUnavailableError("a hook's precomputed embedder embeds no documents")


GIVEN = "hook-given"


def given(model_id: str, dim: int) -> Given:
    """A `Given` embedder registered as `GIVEN` (its name for `Corpus(embedder=...)`)."""
    from memhtml.embed.registry import register

    holder = Given(model_id, dim)
    register(GIVEN, lambda: holder)
    return holder
