"""Run ids, branches, the run record, the sleep lock, and reading a run back from git.

A run is `sleep/<run-id>` (a branch) plus a small record outside the tree,
`.git/memhtml-sleep/<run-id>/run.json` (its base, options and per-phase
outcomes), next to the run's scratch index. git is the source of truth: the
phases a branch completed are the `Memhtml-Phase` trailers over base..tip, and
the record can be rebuilt from the branch when it is lost.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.errors import InvalidFlagError, PathNotFoundError, WriteConflictError
from memhtml.sleep.phase import PHASE_ORDER
from memhtml.store.branch import LogEntry, list_refs, log_range, ref_sha
from memhtml.store.files import write_atomic
from memhtml.store.git import Git
from memhtml.store.lock import RepoLock

BRANCH_PREFIX: Final = "sleep/"
REF_PREFIX: Final = "refs/heads/" + BRANCH_PREFIX
SCRATCH_DIR: Final = "memhtml-sleep"  # under .git: never part of any tree
SLEEP_DIR: Final = ".memhtml/sleep"  # committed: reports and pending ledgers
RUN_TRAILER: Final = "Memhtml-Run"
PHASE_TRAILER: Final = "Memhtml-Phase"
COUNTS_TRAILER: Final = "Memhtml-Counts"
MAX_ORDINAL: Final = 1000
_RUN_ID = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-([2-9]|[1-9]\d+))?$")


class RunNotFoundError(PathNotFoundError):
    """No sleep run of that id: no `sleep/<run-id>` branch (ERR_PATH_NOT_FOUND)."""


class SleepInProgressError(WriteConflictError):
    """Another `sleep run`, `resume` or `merge` holds the sleep lock (ERR_WRITE_CONFLICT)."""


def parse_date(raw: str) -> str:
    """A run date `YYYY-MM-DD` (InvalidFlagError otherwise)."""
    text = raw.strip()
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise InvalidFlagError(f"--date {raw!r} is not a date (YYYY-MM-DD)")


def check_run_id(run_id: str) -> str:
    """A well-formed run id (`YYYY-MM-DD` or `YYYY-MM-DD-N`); RunNotFoundError otherwise."""
    if not _RUN_ID.match(run_id or ""):
        raise RunNotFoundError(
            f"{run_id!r} is not a sleep run id (YYYY-MM-DD or YYYY-MM-DD-N)",
            suggestions=["memhtml sleep status"],
        )
    return run_id


def date_of(run_id: str) -> str:
    """The run date a run id starts with."""
    match = _RUN_ID.match(run_id)
    return match.group(1) if match else "1970-01-01"


def instant_of(run_date: str) -> str:
    """Midnight UTC of the run date: the `at` every stamp of the run uses."""
    return f"{run_date}T00:00:00Z"


def branch_of(run_id: str) -> str:
    """`sleep/<run-id>`."""
    return BRANCH_PREFIX + run_id


def ref_of(run_id: str) -> str:
    """`refs/heads/sleep/<run-id>`."""
    return REF_PREFIX + run_id


def report_path(run_id: str) -> str:
    """The committed report (also what `memhtml://sleep/{run_id}` serves)."""
    return f"{SLEEP_DIR}/{run_id}.html"


def ledger_path(run_id: str) -> str:
    """The committed pending ledger."""
    return f"{SLEEP_DIR}/{run_id}.pending.jsonl"


def changes_path(run_id: str) -> str:
    """The committed manifest of the run's changes and vetoes (memhtml.sleep.changes)."""
    return f"{SLEEP_DIR}/{run_id}.changes.jsonl"


def scratch_root(root: Path) -> Path:
    """Where runs keep what is not committed (inside .git)."""
    return root / ".git" / SCRATCH_DIR


def scratch_dir(root: Path, run_id: str) -> Path:
    """One run's scratch folder: record, run index, private git index."""
    return scratch_root(root) / run_id


def run_ids(git: Git, root: Path) -> list[str]:
    """Every run that has a branch or a record, oldest first."""
    ids = {name[len(REF_PREFIX) :] for name in list_refs(git, REF_PREFIX)}
    base = scratch_root(root)
    if base.is_dir():
        ids |= {d.name for d in base.iterdir() if (d / "run.json").is_file()}
    return sorted((i for i in ids if _RUN_ID.match(i)), key=_order_key)


def _order_key(run_id: str) -> tuple[str, int]:
    match = _RUN_ID.match(run_id)
    assert match is not None
    return match.group(1), int(match.group(2) or 1)


def new_run_id(git: Git, root: Path, run_date: str, head: str | None) -> str:
    """The first free id of `date`, `date-2`, `date-3`, ...

    Taken: a branch of that name, a run record whose branch still exists, or
    a report or ledger of that name in HEAD (a merged run whose branch is gone).
    """
    branches = list_refs(git, REF_PREFIX)
    committed: set[str] = set()
    if head is not None:
        committed = {e.path for e in git.ls_tree(head, [SLEEP_DIR + "/"])}
    for ordinal in range(1, MAX_ORDINAL + 1):
        run_id = run_date if ordinal == 1 else f"{run_date}-{ordinal}"
        taken = ref_of(run_id) in branches or bool(
            {report_path(run_id), ledger_path(run_id), changes_path(run_id)} & committed
        )
        if not taken:
            return run_id
    raise WriteConflictError(f"no free sleep run id for {run_date} after {MAX_ORDINAL}")


@dataclass
class RunRecord:
    """What a run remembers outside the tree (rebuilt from the branch when lost)."""

    run_id: str
    base: str
    target: str | None  # the branch the run was taken from (merge goes back there)
    date: str
    at: str
    phases: list[str]
    deep: bool = False
    max_llm_calls: int | None = None
    status: str = "running"  # running | review | failed | merging | merged
    pid: int | None = None
    started_at: str = ""
    ended_at: str | None = None
    head: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    merged_at: str | None = None
    merge_commit: str | None = None
    reconstructed: bool = False
    error: str | None = None  # what stopped the night outside any phase
    merge_from: str | None = None  # main's commit a merge in flight started from
    # A merge that refused changes: their ids, what it left out with them (and why), and
    # the branch tip that was reviewed (`head` is then the rebuilt night that landed).
    refused: list[str] = field(default_factory=list)
    left_out: list[dict[str, Any]] = field(default_factory=list)
    reviewed_head: str | None = None

    @property
    def branch(self) -> str:
        """`sleep/<run-id>`."""
        return branch_of(self.run_id)

    def result(self, phase: str) -> dict[str, Any] | None:
        """The last recorded outcome of `phase`."""
        return next((r for r in reversed(self.results) if r.get("phase") == phase), None)

    def put_result(self, outcome: dict[str, Any]) -> None:
        """Record (or replace) one phase's outcome, kept in run order."""
        self.results = [r for r in self.results if r.get("phase") != outcome["phase"]]
        self.results.append(outcome)
        self.results.sort(key=lambda r: PHASE_ORDER.index(r["phase"]))

    def to_data(self) -> dict[str, Any]:
        """JSON-ready (the results are plain dicts already: no deep copy)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def record_file(root: Path, run_id: str) -> Path:
    """`.git/memhtml-sleep/<run-id>/run.json`."""
    return scratch_dir(root, run_id) / "run.json"


def save_record(root: Path, record: RunRecord) -> None:
    """Write the record atomically."""
    data = json.dumps(record.to_data(), separators=(",", ":")) + "\n"
    write_atomic(record_file(root, record.run_id), data.encode("utf-8"))


def load_record(root: Path, run_id: str) -> RunRecord | None:
    """The record as saved, or None (absent or unreadable)."""
    try:
        raw = json.loads(record_file(root, run_id).read_text(encoding="utf-8"))
        names = set(RunRecord.__dataclass_fields__)
        return RunRecord(**{k: v for k, v in raw.items() if k in names})
    except (OSError, ValueError, TypeError):
        return None


def phase_commits(entries: list[LogEntry], run_id: str) -> list[tuple[LogEntry, str | None]]:
    """Each commit with the phase its trailers name (None: not a phase commit of this run)."""
    out: list[tuple[LogEntry, str | None]] = []
    for entry in entries:
        runs = entry.trailers.get(RUN_TRAILER, [])
        phases = [p for p in entry.trailers.get(PHASE_TRAILER, []) if p in PHASE_ORDER]
        out.append((entry, phases[-1] if phases and run_id in runs else None))
    return out


def counts_of(entry: LogEntry) -> dict[str, int]:
    """The `Memhtml-Counts` trailer (malformed or absent: {})."""
    values = entry.trailers.get(COUNTS_TRAILER, [])
    try:
        raw = json.loads(values[-1]) if values else {}
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        str(k): int(v) for k, v in raw.items() if isinstance(v, int | float) and not math.isnan(v)
    }


def reconstruct(git: Git, run_id: str) -> RunRecord:
    """A record rebuilt from the branch alone (its base: the parent of its first run commit)."""
    tip = ref_sha(git, ref_of(run_id))
    if tip is None:
        raise RunNotFoundError(f"no sleep run {run_id} (no branch {branch_of(run_id)})")
    chain = log_range(git, tip, first_parent=True)
    tagged = [e for e, phase in phase_commits(chain, run_id) if phase is not None]
    base = tagged[0].parents[0] if tagged and tagged[0].parents else tip
    run_date = date_of(run_id)
    return RunRecord(
        run_id=run_id,
        base=base,
        target=None,
        date=run_date,
        at=instant_of(run_date),
        phases=list(PHASE_ORDER),
        status="review",
        head=tip,
        reconstructed=True,
    )


def find_run(git: Git, root: Path, run_id: str) -> tuple[RunRecord, str]:
    """The run's record (saved, else rebuilt) and its branch tip; RunNotFoundError otherwise."""
    check_run_id(run_id)
    tip = ref_sha(git, ref_of(run_id))
    record = load_record(root, run_id)
    if (
        tip is None
        and record is not None
        and record.status == "merged"
        and record.head
        and git.resolve_commit(record.head) is not None
    ):
        return record, record.head  # a merged run's branch is deleted; main holds what landed
    if tip is None:
        raise RunNotFoundError(
            f"no sleep run {run_id} (no branch {branch_of(run_id)})",
            suggestions=["memhtml sleep status", "git branch --list 'sleep/*'"],
        )
    if record is None:
        record = reconstruct(git, run_id)
    return record, tip


def completed_phases(git: Git, record: RunRecord, tip: str) -> dict[str, str]:
    """Phase -> its last commit on base..tip (a phase is done iff a commit carries its trailer)."""
    done: dict[str, str] = {}
    for entry, phase in phase_commits(log_range(git, f"{record.base}..{tip}"), record.run_id):
        if phase is not None:
            done[phase] = entry.sha
    return done


def delete_branch(git: Git, run_id: str) -> bool:
    """Delete `sleep/<run-id>` (a merged run's: its commits are in main's history, the
    record keeps its base and tips); False when there is none."""
    tip = ref_sha(git, ref_of(run_id))
    if tip is None:
        return False
    git.run("update-ref", "-d", ref_of(run_id), tip, check=False)
    return ref_sha(git, ref_of(run_id)) is None


def discard_stale_scratch(root: Path, git: Git, run_id: str) -> None:
    """Remove the scratch folder of a run whose branch is gone (a reused id starts clean)."""
    folder = scratch_dir(root, run_id)
    if folder.exists() and ref_sha(git, ref_of(run_id)) is None:
        shutil.rmtree(folder, ignore_errors=True)


def drop_run_index(root: Path, run_id: str) -> bool:
    """Remove a run's scratch (run index, private git index), keeping its small record."""
    folder = scratch_dir(root, run_id)
    dropped = False
    if folder.is_dir():
        for item in folder.iterdir():
            if item.name == "run.json":
                continue
            if item.is_dir():
                shutil.rmtree(item, ignore_errors=True)
            else:
                item.unlink(missing_ok=True)
            dropped = True
    return dropped


def prune_scratch(root: Path, git: Git) -> list[str]:
    """Drop the scratch of runs whose branch is gone (`git branch -D` cannot know about it)."""
    base = scratch_root(root)
    if not base.is_dir():
        return []
    live = {name[len(REF_PREFIX) :] for name in list_refs(git, REF_PREFIX)}
    return [
        folder.name
        for folder in sorted(base.iterdir())
        if folder.is_dir() and folder.name not in live and drop_run_index(root, folder.name)
    ]


@contextmanager
def sleep_lock(root: Path) -> Iterator[None]:
    """One `sleep run`/`resume`/`merge` at a time; the agent's writes to main are not blocked."""
    lock = RepoLock(root / ".git" / "memhtml-sleep.lock")
    stack = ExitStack()
    try:
        stack.enter_context(lock.hold(timeout=0))
    except WriteConflictError as exc:
        raise SleepInProgressError(
            f"another sleep command holds the sleep lock ({exc.message})",
            suggestions=["wait for it to finish", "memhtml sleep status"],
        ) from None
    with stack:
        yield


def pid_alive(pid: int | None) -> bool:
    """True when a process of that id runs (a run record's writer)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def shown_status(record: RunRecord, tip: str | None) -> str:
    """The status a person is shown: a run whose writer is gone is `interrupted` (a night)
    or `merge-interrupted` (a merge), one whose branch is gone `discarded`."""
    if record.status in ("running", "merging") and not pid_alive(record.pid):
        return "interrupted" if record.status == "running" else "merge-interrupted"
    if tip is None and record.status != "merged":
        return "discarded"
    return record.status
