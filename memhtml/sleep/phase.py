"""The contract between the sleep engine and its phases.

A phase reads the run's index (a projection of the branch tip, kept current
after every phase commit) and the branch's tree, and stages its edits in a
tree view; it never commits, never touches the user's working tree, and never
writes the state plane. The engine commits the view's changes as one commit
with the phase's trailers, reprojects them into the run index, and appends the
phase's ledger marks (effects git cannot carry, applied only by a merge).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from memhtml.sleep.changes import ChangeLog

if TYPE_CHECKING:
    from memhtml.embed.base import Embedder
    from memhtml.ops.tree import TreeView
    from memhtml.ops.writes import Planner

Status = Literal["ok", "skipped", "failed"]
TouchKind = Literal["merged", "archived", "rewritten", "created", "moved"]

# The original's order (SLEEP-FACTS 1.6, plus placement-triage, the seventeenth).
PHASE_ORDER: tuple[str, ...] = (
    "preflight",
    "dedup-merge",
    "entity-resolution",
    "person-links",
    "relationship-mining",
    "edge-typing",
    "confidence-decay",
    "arc-synthesis",
    "retention-triage",
    "compress",
    "reprieve",
    "trace-consolidation",
    "task-detection",
    "placement-triage",
    "integrity",
    "state-export",
    "report",
)


@dataclass(frozen=True)
class Touched:
    """One file a phase changed, as `sleep review` classifies it."""

    path: str
    kind: TouchKind
    from_path: str | None = None


@dataclass(frozen=True)
class Part:
    """A commit of its own inside a phase: these paths' staged changes, this subject.

    The engine commits each part (in order) before the phase's own commit, which
    takes whatever is left (and the ledger marks). trace-consolidation lands each
    distilled memory this way, so a reviewer can take or drop one memory at a time.
    """

    subject: str
    paths: tuple[str, ...]
    body: tuple[str, ...] = ()


@dataclass
class PhaseOutcome:
    """What a phase did (or would do, on a dry run)."""

    status: Status = "ok"
    counts: dict[str, int] = field(default_factory=dict)
    detail: str | None = None
    touched: list[Touched] = field(default_factory=list)
    # Commit subject (the engine prefixes `memhtml(sleep(<phase>)): `) and body lines.
    subject: str = ""
    body: list[str] = field(default_factory=list)
    # Ledger marks: {"kind": ..., ...}; applied by `sleep merge`, discarded with the branch.
    marks: list[dict[str, Any]] = field(default_factory=list)
    # Commits of their own before the phase's commit (see Part); most phases have none.
    parts: list[Part] = field(default_factory=list)


@dataclass
class SleepContext:
    """What a phase may read and where it stages its edits."""

    run_id: str
    date: str  # YYYY-MM-DD, the run date
    at: str  # the instant every stamp of the run uses (midnight UTC of `date`)
    deep: bool
    dry_run: bool
    conn: sqlite3.Connection  # the run index; the run's copy of the state plane as `state`
    view: TreeView  # the branch tip plus this phase's staged changes
    planner: Planner  # the write doors' rules (archive, link, relink) bound to `view`
    embedder: Embedder | None = None
    llm: Any = None  # the model seam (None: MEMHTML_LLM=off)
    progress: Callable[[int, int], None] = lambda _done, _total: None
    # Earlier phases' outcomes in this run, in run order (the report phase reads them): each
    # {"phase", "ordinal", "status", "counts", "detail", "commit_sha", "llm_calls", "marks",
    #  "touched": [{"path", "kind", "from_path"}]}; a resume includes earlier invocations'.
    results: list[dict[str, Any]] = field(default_factory=list)
    # Added by the engine (fields are only ever appended):
    base_sha: str = ""  # the commit the run branched from
    max_llm_calls: int | None = None  # model calls this phase may still make (None: no cap)
    llm_calls: int = 0  # model calls this phase made: a model phase counts them here
    # The decisions this phase makes, each proposed before it is staged (memhtml.sleep.changes);
    # a proposal a person refused comes back None. The default allows and records everything.
    changes: ChangeLog = field(default_factory=ChangeLog)
    # The report phase's view of a merge that refuses changes: {"refused": [...], "left_out": [...]}
    # (None on an ordinary night).
    refusals: dict[str, Any] | None = None
    # The report's view of the night's decisions: {"changes": [Change], "vetoes": [Veto]}.
    decided: dict[str, Any] | None = None


class Phase(Protocol):
    """One curation step."""

    name: str
    needs_model: bool  # with no model it reports `skipped` and why, never a fake success
    commits: bool  # False for preflight and relationship-mining (index-only)
    deep_only: bool  # placement-triage runs only with --deep

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Do the work (on a dry run: count it, stage nothing)."""
        ...

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """What the phase would do now: cheap counts, or `unknown` with the reason."""
        ...
