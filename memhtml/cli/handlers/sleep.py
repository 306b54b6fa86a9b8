"""Handlers for the sleep group: thin calls into memhtml.sleep."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation
from memhtml.contracts.errors import PartialFailureError


def _failed(data: dict[str, Any]) -> dict[str, Any]:
    """A run with a failed phase exits 1; its details are the whole run."""
    if data.get("failed_phases"):
        names = ", ".join(data["failed_phases"])
        raise PartialFailureError(
            f"sleep run {data['run_id']}: {len(data['failed_phases'])} phase(s) failed ({names});"
            " the other phases ran and the report is committed",
            suggestions=[
                f"memhtml sleep review {data['run_id']}",
                f"memhtml sleep resume {data['run_id']}",
            ],
            details=data,
        )
    return data


def run(
    inv: Invocation,
    *,
    date: str | None = None,
    phases: str | None = None,
    dry_run: bool = False,
    deep: bool = False,
    max_llm_calls: int | None = None,
    llm: str | None = None,
) -> dict[str, Any]:
    """One night on a branch."""
    from memhtml.sleep.engine import run as sleep_run

    data = sleep_run(
        inv.corpus(),
        date=date,
        phases=phases,
        dry_run=dry_run,
        deep=deep,
        max_llm_calls=max_llm_calls,
        llm=llm,
    )
    return _failed(data)


def resume(inv: Invocation, run_id: str, llm: str | None = None) -> dict[str, Any]:
    """Finish an interrupted run."""
    from memhtml.sleep.engine import resume as sleep_resume

    return _failed(sleep_resume(inv.corpus(), run_id, llm=llm))


def review(inv: Invocation, run_id: str | None = None) -> dict[str, Any]:
    """Classify what a run touched."""
    from memhtml.sleep.review import review as sleep_review

    return sleep_review(inv.corpus(), run_id)


def merge(inv: Invocation, run_id: str, skip_gate: bool = False) -> dict[str, Any]:
    """Gate and merge."""
    from memhtml.sleep.merge import merge as sleep_merge

    return sleep_merge(inv.corpus(), run_id, skip_gate=skip_gate)


def status(inv: Invocation) -> dict[str, Any]:
    """The latest run."""
    from memhtml.sleep.review import status as sleep_status

    return sleep_status(inv.corpus())


def plan(inv: Invocation, deep: bool = False, llm: str | None = None) -> dict[str, Any]:
    """What a run would do now (the model phases count their candidates when one is bound)."""
    from memhtml.sleep.plan import plan as sleep_plan

    return sleep_plan(inv.corpus(), deep=deep, llm=llm)


def human_run(data: dict[str, Any]) -> str:
    """A summary for a person at a terminal."""
    lines = [
        f"sleep {data['run_id']} ({data['status']}): {len(data['commits'])} commit(s),"
        f" {len(data['failed_phases'])} failed, branch {data['branch'] or '-'}"
    ]
    for p in data["phases"]:
        counts = " ".join(f"{k}={v}" for k, v in p["counts"].items() if v)
        commit = (p.get("commit_sha") or "")[:12] or "-"
        detail = f"  ({p['detail']})" if p.get("detail") else ""
        lines.append(
            f"  {p['ordinal']:2d} {p['phase']:20s} {p['status']:8s} {commit:12s} {counts}{detail}"
        )
    return "\n".join(lines)


def human_review(data: dict[str, Any]) -> str:
    """Files by kind, per phase."""
    lines = [f"sleep {data['run_id']} ({data['status']}): {data['diff_stat'] or 'no changes'}"]
    for p in data["phases"]:
        kinds = " ".join(f"{k}={v}" for k, v in p["by_kind"].items())
        lines.append(f"  {p['phase']:20s} {p['status']:8s} {kinds}")
        for f in p["files"][:10]:
            origin = f" <- {f['from_path']}" if f.get("from_path") else ""
            lines.append(f"      {f['kind']:9s} {f['path']}{origin}")
        if len(p["files"]) > 10:
            lines.append(f"      ... and {len(p['files']) - 10} more")
    return "\n".join(lines)


def human_plan(data: dict[str, Any]) -> str:
    """One line per phase."""
    lines = [
        f"sleep plan at {str(data['head_sha'])[:12]}"
        + (f": {data['refused']}" if data.get("refused") else "")
    ]
    for p in data["phases"]:
        rest = {
            k: v for k, v in p.items() if k not in ("phase", "ordinal", "commits", "needs_model")
        }
        lines.append(f"  {p['ordinal']:2d} {p['phase']:20s} {rest}")
    return "\n".join(lines)
