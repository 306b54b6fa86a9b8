"""`doctor` with the sleep runs in view: a night or a merge that is stuck is not healthy.

The corpus checks live in memhtml.ops.health; this adds what only sleep knows.
A run is stuck when its process is gone before it finished (`interrupted`), when
it ended with a phase or the engine failing (`failed`) and its branch still waits,
or when a merge was cut short (`merge-interrupted`: main moved but the ledger and
the record did not follow, or main never moved and the record still says so).
`doctor --fix` finishes or undoes an interrupted merge (memhtml.sleep.merge
`settle_merges`); a stuck night is for a person to resume, merge or discard, so
it is reported with the commands, never changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from memhtml.ops.corpus import Corpus


def _ever_slept(root: Path) -> bool:
    """True when a run ever kept a record here (`runs.scratch_root`, read without loading
    the sleep engine: a store that never slept pays nothing for these checks)."""
    return (root / ".git" / "memhtml-sleep").is_dir()


def stuck_runs(corpus: Corpus) -> list[dict[str, Any]]:
    """Every run that needs someone: what is wrong and the commands that settle it."""
    if not _ever_slept(corpus.root):
        return []
    from memhtml.sleep import runs

    git = corpus.git
    found: list[dict[str, Any]] = []
    for run_id in runs.run_ids(git, corpus.root):
        tip = runs.ref_sha(git, runs.ref_of(run_id))
        record = runs.load_record(corpus.root, run_id)
        if record is None:
            continue  # a branch without a record finished (or was made by hand): not stuck
        state = runs.shown_status(record, tip)
        branch = runs.branch_of(run_id)
        if state == "interrupted":
            why = "its process ended before the night finished"
            fixes = [f"memhtml sleep resume {run_id}", f"git branch -D {branch}  (discard it)"]
        elif state == "failed" and tip is not None:
            failed = [r["phase"] for r in record.results if r.get("status") == "failed"]
            why = (
                f"the night ended with a fault: {record.error}"
                if record.error
                else f"{len(failed)} phase(s) failed: {', '.join(failed)}"
            )
            fixes = [
                f"memhtml sleep review {run_id}",
                f"memhtml sleep resume {run_id}  (runs the failed phases again)",
                f"git branch -D {branch}  (discard it)",
            ]
        elif state == "merge-interrupted":
            why = "its merge was cut short before the ledger and the record followed main"
            fixes = ["memhtml doctor --fix", f"memhtml sleep merge {run_id}"]
        else:
            continue
        found.append({"run_id": run_id, "status": state, "why": why, "suggestions": fixes})
    return found


def doctor(corpus: Corpus, *, fix: bool = False) -> dict[str, Any]:
    """The corpus health report (after `--fix` repairs) with the stuck sleep runs added;
    not healthy while one is stuck."""
    settled: list[dict[str, Any]] | None = None
    if fix:
        repairs = corpus.fix()
        settled = _settle(corpus)
        data = {**corpus.health(), "mode": "fix", "repairs": {**repairs, "sleep": settled}}
    else:
        data = dict(corpus.health())
    stuck = stuck_runs(corpus)
    data["sleep_runs"] = stuck
    if stuck:
        data["healthy"] = False
        if any(s["status"] == "merge-interrupted" for s in stuck):
            data["repairable"] = True
        suggestions = list(data.get("suggestions") or [])
        for item in stuck:
            suggestions += [s for s in item["suggestions"] if s not in suggestions]
        data["suggestions"] = suggestions
    return data


def _settle(corpus: Corpus) -> list[dict[str, Any]]:
    """Finish or undo interrupted merges, unless a sleep command is running right now."""
    if not _ever_slept(corpus.root):
        return []
    from memhtml.sleep import runs
    from memhtml.sleep.merge import settle_merges

    try:
        with runs.sleep_lock(corpus.root):
            return settle_merges(corpus)
    except runs.SleepInProgressError:
        return [{"outcome": "skipped", "why": "a sleep command holds the sleep lock"}]
