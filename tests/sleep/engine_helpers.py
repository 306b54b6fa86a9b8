"""Stand-in phases and git helpers for the engine's tests.

The engine is tested with small phases defined here (registered by name ahead
of `memhtml.sleep.phases`), so its contract is checked whatever the real
phases do; the idempotence and kill tests run the real ones.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memhtml.html import set_meta
from memhtml.sleep.phase import PHASE_ORDER, PhaseOutcome, SleepContext, Touched

DATE = "2026-03-02"


def git(root: Path, *args: str, check: bool = True) -> str:
    """Run git in `root`; stdout text."""
    return subprocess.run(
        ["git", *args], cwd=root, check=check, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class StandIn:
    """A phase whose body is a function of the context."""

    name: str
    body: Callable[[SleepContext], PhaseOutcome] = lambda _ctx: PhaseOutcome()
    needs_model: bool = False
    commits: bool = True
    deep_only: bool = False
    calls: list[SleepContext] = field(default_factory=list)

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        self.calls.append(ctx)
        return self.body(ctx)

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        return {"counts": {"files": len(ctx.view.paths("areas/"))}}


def registry(**bodies: Any) -> dict[str, Any]:
    """Every phase but preflight and report as a no-op stand-in, `bodies` overriding by name.

    A keyword is the phase name with underscores (`dedup_merge=...`); its value
    a body function or a ready StandIn.
    """
    out: dict[str, Any] = {}
    for name in PHASE_ORDER:
        if name in ("preflight", "report"):
            continue
        given = bodies.get(name.replace("-", "_"))
        if isinstance(given, StandIn):
            out[name] = given
        elif given is not None:
            out[name] = StandIn(name, given)
        else:
            out[name] = StandIn(name)
    return out


def stamp(path: str, name: str = "memhtml-confidence", value: str = "0.5") -> Callable[..., Any]:
    """A body that sets a head meta on `path` (a head-only rewrite)."""

    def body(ctx: SleepContext) -> PhaseOutcome:
        text = ctx.view.read(path).decode()
        ctx.view.write(path, set_meta(text, name, value).encode())
        return PhaseOutcome(
            counts={"stamped": 1}, touched=[Touched(path, "rewritten")], subject="stamp one"
        )

    return body


def archive(path: str, reason: str = "stale") -> Callable[..., Any]:
    """A body that archives `path` through the planner (inbound links follow)."""
    from memhtml.contracts.ops import ArchiveOp

    def body(ctx: SleepContext) -> PhaseOutcome:
        out = ctx.planner.archive(ArchiveOp(op="archive", path=path, reason=reason))
        return PhaseOutcome(
            counts={"archived": 1},
            touched=[Touched(out["archive_path"], "archived", path)],
            subject=f"archive {path}",
        )

    return body


def worktree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file git does not ignore (tracked or not), by path."""
    listed = git(root, "ls-files", "-co", "--exclude-standard", "-z")
    return {
        p: hashlib.sha256((root / p).read_bytes()).hexdigest()
        for p in listed.split("\0")
        if p and (root / p).is_file()
    }


def state_rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the state plane."""
    conn = sqlite3.connect(str(root / ".memhtml" / "state.db"))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables}
    finally:
        conn.close()


def seed(corpus: Any) -> dict[str, str]:
    """A small corpus: two twins, a linked pair, a plain memory."""
    a = corpus.write(title="Port A", type="semantic", claim="The api listens on port 8080.")
    b = corpus.write(title="Port B", type="semantic", claim="The api listens on port 9090.")
    c = corpus.write(title="Drain", type="procedural", claim="Drain the VIP before the deploy.")
    d = corpus.write(title="Cache", type="semantic", claim="The cache keeps entries for a day.")
    corpus.link(d["path"], "relates_to", c["path"])
    return {"a": a["path"], "b": b["path"], "c": c["path"], "d": d["path"]}
