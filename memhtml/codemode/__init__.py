"""Code mode: a read-only JavaScript sandbox over one pinned commit of the corpus.

`memhtml exec` and the MCP `exec` tool run an agent's ES module in QuickJS
(the quickjs-ng binding) in a worker process, with the corpus mounted
read-only at `/mnt/memhtml` as the tree of one commit, read through git's
object store, and the original's helper at `/workspace/lib/corpus.mjs`.
docs/code-mode.md is the cookbook; docs/design.md ("Code mode") the design.

    runner.run_exec   the entry point: pin, start, serve, report
    tree              the pinned commit's tree and guest path resolution
    host              the guest's requests, answered (the boundary)
    extract           a memory's fields and DOM, read on the host (lxml)
    imports           a script's `import` forms, rewritten onto the sandbox registry
    worker            the QuickJS process (standard library + the binding only)
    limits, report    the bounds and the `exec.report` data
    guest/            the JavaScript the worker evaluates before the script

Importing this package loads neither lxml nor QuickJS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memhtml.codemode.limits import (
    CORPUS_MOUNT,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_MS,
    MAX_MEMORY_MB,
    MAX_TIMEOUT_MS,
    MIN_MEMORY_MB,
    ExecLimits,
    LimitHit,
)

if TYPE_CHECKING:
    from memhtml.codemode.report import ExecReport
    from memhtml.store.git import Git


def run_exec(git: Git, script: str, **options: Any) -> ExecReport:
    """Run a script against a pinned commit (see `memhtml.codemode.runner.run_exec`)."""
    from memhtml.codemode.runner import run_exec as run

    return run(git, script, **options)


__all__ = [
    "CORPUS_MOUNT",
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT_MS",
    "MAX_MEMORY_MB",
    "MAX_TIMEOUT_MS",
    "MIN_MEMORY_MB",
    "ExecLimits",
    "LimitHit",
    "run_exec",
]
