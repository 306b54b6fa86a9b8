"""Fan independent tasks out: in this process (serial) or over a Ray cluster, one code path.

A caller builds its list of tasks, calls ``executor.map(fn, items)`` (results
in input order) or ``executor.as_completed(fn, items)`` (``(index, result)``
pairs as each task finishes), and merges. `Serial` calls ``fn`` here, one
item after the other; `RayCluster` ships ``fn`` and each item to a Ray worker
(one CPU per task) and gathers the answers. Building the tasks, merging them
and handling a failure are the caller's and the same lines for both: the
executor is the only thing a ``--ray`` flag changes.

What a task must be for the two to agree: ``fn`` a module-level function
(Ray pickles it by reference and the worker imports its module), the item and
the result picklable, and the answer a function of the item alone (seeded,
no state shared with other tasks: each task builds its own stores in its own
temporary directory). ``shared`` is one read-only value every task receives
as its first argument (a captured arm set, a tuning task): Ray stores it once
in the object store instead of once per task.

A task that raises raises the same exception from the executor under both:
the Ray path unwraps Ray's error to its cause. ``SystemExit`` (a harness
stopping on bad data) travels as `TaskExit` and leaves the driver as
``SystemExit`` again, since a Ray worker that exits would be reported as a
crash instead of a message.

Ray is the optional ``cluster`` extra (``pip install 'memhtml[cluster]'``);
nothing here imports it before a `RayCluster` is made.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, TypeVar

from memhtml.contracts.errors import ExtraRequiredError

T = TypeVar("T")
R = TypeVar("R")

LOCAL: Final = "local"  # `--ray` without an address: start a local cluster
# Forwarded to every worker, so a task sees the embedder / model / data settings the
# driver sees even on a cluster started elsewhere.
FORWARDED_ENV_PREFIXES: Final[tuple[str, ...]] = ("MEMHTML_",)
# Modest: tasks hand back question rows and a capture, not bulk data.
OBJECT_STORE_BYTES: Final = 512 * 1024 * 1024


class TaskExit(Exception):  # noqa: N818  (it carries a SystemExit, not an error of ours)
    """A task called ``sys.exit(message)``; the driver raises ``SystemExit(message)``."""

    def __init__(self, code: object) -> None:
        super().__init__(code)
        self.code = code


def call(fn: Callable[..., R], shared: Any, item: Any, with_shared: bool) -> R:
    """Run one task the same way in both executors (a SystemExit becomes `TaskExit`)."""
    try:
        return fn(shared, item) if with_shared else fn(item)
    except SystemExit as exc:
        raise TaskExit(exc.code) from None


class Executor(Protocol):
    """What a fan-out caller needs: a worker count, results as they land, a close."""

    kind: str
    workers: int

    def as_completed(
        self, fn: Callable[..., R], items: Sequence[Any], *, shared: Any = None
    ) -> Iterator[tuple[int, R]]: ...

    def map(self, fn: Callable[..., R], items: Sequence[Any], *, shared: Any = None) -> list[R]: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class _Base:
    kind = "serial"
    workers = 1

    def as_completed(
        self, fn: Callable[..., R], items: Sequence[Any], *, shared: Any = None
    ) -> Iterator[tuple[int, R]]:
        raise NotImplementedError

    def map(self, fn: Callable[..., R], items: Sequence[Any], *, shared: Any = None) -> list[R]:
        """Every result, in input order (a failure raises after the tasks before it landed)."""
        out: dict[int, R] = {}
        for i, result in self.as_completed(fn, items, shared=shared):
            out[i] = result
        return [out[i] for i in range(len(items))]

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "workers": self.workers}

    def close(self) -> None:
        return None

    def __enter__(self: Any) -> Any:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Serial(_Base):
    """Each task in this process, in order."""

    kind = "serial"
    workers = 1

    def as_completed(
        self, fn: Callable[..., R], items: Sequence[Any], *, shared: Any = None
    ) -> Iterator[tuple[int, R]]:
        with_shared = shared is not None
        for i, item in enumerate(items):
            try:
                yield i, call(fn, shared, item, with_shared)
            except TaskExit as exc:
                raise SystemExit(exc.code) from None


def require_ray() -> Any:
    """The ray module, or ExtraRequiredError naming the `cluster` extra."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ExtraRequiredError(
            "--ray needs the cluster extra, and ray is not installed",
            suggestions=["pip install 'memhtml[cluster]'", "or run without --ray (serial)"],
            details={"extra": "cluster", "missing": ["ray"]},
        ) from None


def worker_env(pythonpath: Sequence[Path] = (), env: Mapping[str, str] | None = None) -> dict:
    """The environment every worker gets: MEMHTML_* of this process and the code's paths."""
    source = os.environ if env is None else env
    out = {k: v for k, v in source.items() if k.startswith(FORWARDED_ENV_PREFIXES)}
    paths = [str(p) for p in pythonpath]
    if source.get("PYTHONPATH"):
        paths.append(source["PYTHONPATH"])
    if paths:
        out["PYTHONPATH"] = os.pathsep.join(paths)
    return out


class RayCluster(_Base):
    """Tasks on Ray workers, one CPU each.

    ``address`` None (or ``"local"``) starts a local cluster of ``workers``
    CPUs (default: this machine's CPU count) and stops it on `close`; an
    address (``auto``, ``host:port``, ``ray://host:10001``) joins a running
    cluster, whose nodes must see the same code and data paths. When Ray is
    already initialised in this process (a test fixture, a notebook) that
    session is used and left running.
    """

    kind = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        pythonpath: Sequence[Path] = (),
    ) -> None:
        self.address = None if address in (None, LOCAL) else address
        started = time.perf_counter()
        ray = require_ray()
        self._ray = ray
        self._owned = False
        if not ray.is_initialized():
            # No usage report leaves this machine (there is no network here anyway).
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            kwargs: dict[str, Any] = {
                "address": self.address,
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": "warning",
                "runtime_env": {"env_vars": worker_env(pythonpath)},
            }
            if self.address is None:
                kwargs["num_cpus"] = workers or os.cpu_count() or 1
                kwargs["object_store_memory"] = OBJECT_STORE_BYTES
            ray.init(**kwargs)
            self._owned = True
        self.startup_s = time.perf_counter() - started
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def as_completed(
        self, fn: Callable[..., R], items: Sequence[Any], *, shared: Any = None
    ) -> Iterator[tuple[int, R]]:
        ray = self._ray
        with_shared = shared is not None
        remote = ray.remote(num_cpus=1, max_retries=0)(call)
        shared_ref = ray.put(shared) if with_shared else None
        refs = [remote.remote(fn, shared_ref, item, with_shared) for item in items]
        index = {ref: i for i, ref in enumerate(refs)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as err:
                        cause = err.cause
                        if isinstance(cause, TaskExit):
                            raise SystemExit(cause.code) from None
                        if isinstance(cause, BaseException):
                            raise cause from None
                        raise
                    yield index[ref], result
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "workers": self.workers,
            "address": self.address or LOCAL,
            "startup_s": round(self.startup_s, 3),
        }

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False


def executor_for(
    ray: str | None, *, workers: int | None = None, pythonpath: Sequence[Path] = ()
) -> Serial | RayCluster:
    """`Serial` when ``ray`` is None; else a `RayCluster` (``"local"``: a local cluster)."""
    if ray is None:
        return Serial()
    return RayCluster(ray, workers=workers, pythonpath=pythonpath)


__all__ = [
    "LOCAL",
    "Executor",
    "RayCluster",
    "Serial",
    "TaskExit",
    "call",
    "executor_for",
    "require_ray",
    "worker_env",
]
