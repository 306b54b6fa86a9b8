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


def review(
    inv: Invocation, run_id: str | None = None, serve: bool = False, html: str | None = None
) -> dict[str, Any]:
    """A run's changes; or its review page, written (--html) or served (--serve)."""
    from memhtml.sleep.review import review as sleep_review

    corpus = inv.corpus()
    data = sleep_review(corpus, run_id)
    if html is not None:
        from memhtml.sleep.page import write_page

        data = {**data, "html": write_page(data, html)}
    if serve:
        import sys

        from memhtml.ops.corpus import open_corpus
        from memhtml.sleep.serve import ReviewServer

        server = ReviewServer(lambda: open_corpus(inv.repo), str(data["run_id"]))
        print(f"review page: {server.url}  (Ctrl-C stops it)", file=sys.stderr, flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()
        data = {**data, "served": True, "merged_from_page": server.merged}
    return data


def merge(
    inv: Invocation, run_id: str, skip_gate: bool = False, refuse: list[str] | None = None
) -> dict[str, Any]:
    """Gate and merge (without the refused changes)."""
    import sys

    from memhtml.sleep.merge import merge as sleep_merge

    return sleep_merge(
        inv.corpus(), run_id, skip_gate=skip_gate, refuse=refuse, progress=sys.stderr.isatty()
    )


def lift(inv: Invocation, ids: str) -> dict[str, Any]:
    """Lift standing refusals."""
    from memhtml.sleep.rebuild import split_ids
    from memhtml.sleep.refusals import lift as sleep_lift

    return sleep_lift(inv.corpus(), split_ids(ids))


def status(inv: Invocation) -> dict[str, Any]:
    """The latest run."""
    from memhtml.sleep.review import status as sleep_status

    return sleep_status(inv.corpus())


def plan(inv: Invocation, deep: bool = False, llm: str | None = None) -> dict[str, Any]:
    """What a run would do now (the model phases count their candidates when one is bound)."""
    from memhtml.sleep.plan import plan as sleep_plan

    return sleep_plan(inv.corpus(), deep=deep, llm=llm)


def _nonzero(counts: dict[str, Any] | None) -> str:
    """A phase's counts as `name=value` words, the zeros left out."""
    return " ".join(f"{k}={v}" for k, v in (counts or {}).items() if v)


def human_run(data: dict[str, Any]) -> str:
    """A summary for a person at a terminal."""
    lines = [
        f"sleep {data['run_id']} ({data['status']}): {len(data['commits'])} commit(s),"
        f" {len(data['failed_phases'])} failed, branch {data['branch'] or '-'}"
    ]
    for p in data["phases"]:
        counts = _nonzero(p.get("counts"))
        commit = (p.get("commit_sha") or "")[:12] or "-"
        detail = f"  ({p['detail']})" if p.get("detail") else ""
        lines.append(
            f"  {p['ordinal']:2d} {p['phase']:20s} {p['status']:8s} {commit:12s} {counts}{detail}"
        )
    if data.get("degraded"):
        lines.append(f"{_RED}{_BOLD}degraded:{_OFF} {data['degraded_reason']}")
    for r in data.get("unfinished_runs") or []:
        lines.append(
            f"{_BOLD}note:{_OFF} run {r['run_id']} is {r['status']}; finish it with"
            f" `{r['resume']}` (or discard it: `{r['discard']}`)"
        )
    if data.get("branch") and not data.get("dry_run"):
        lines.append(f"review: memhtml sleep review {data['run_id']}  (or --serve for the page)")
    return "\n".join(lines)


def human_resume(data: dict[str, Any]) -> str:
    """As `sleep run`'s."""
    return human_run(data)


def human_status(data: dict[str, Any]) -> str:
    """The latest night and its phases, then every night known with what to do next."""
    if data.get("run_id") is None:
        return "no sleep run yet: `memhtml sleep plan` says what one would do"
    lines = [
        f"latest: sleep {data['run_id']} ({data['status']}), {data['commits']} commit(s),"
        f" branch {data.get('branch') or '-'}"
    ]
    for p in data["phases"]:
        counts = _nonzero(p.get("counts"))
        lines.append(f"  {p['phase']:20s} {p['status']:8s} {counts}")
    known = data.get("runs") or []
    if known:
        lines.append("runs:")
        lines += [f"  {r['run_id']}  {r['status']}" for r in known]
    return "\n".join(lines)


def human_merge(data: dict[str, Any]) -> str:
    """What landed, what was refused and left out, and the gates' figures."""
    head = str(data.get("head_sha") or "")[:12]
    lines = [f"sleep {data['run_id']} merged ({data.get('mode')}): main at {head}"]
    gate = data.get("gate") or {}
    if gate.get("skipped"):
        lines.append("  gates: skipped (--skip-gate)")
    else:
        fixture, corpus = gate.get("fixture") or {}, gate.get("corpus") or {}
        lines.append(
            f"  fixture gate: passed={fixture.get('passed')} mrr={fixture.get('mrr')}"
            f" inversions={fixture.get('inversions')}"
        )
        lines.append(
            f"  corpus gate: passed={corpus.get('passed')} twins={corpus.get('twins')}"
            f" checked_merges={corpus.get('checked_merges')}"
            f" regressions={corpus.get('regression_count')}"
        )
    for r in data.get("refused") or []:
        lines.append(
            f"  refused {r['id']}  {r['summary']}  (stands; `memhtml sleep lift {r['id']}`)"
        )
    for r in data.get("left_out") or []:
        lines.append(f"  left out {r['id']}  {r['summary']}: {r['why']}")
    lines.append(
        f"  marks applied {data.get('marks_applied')}, pending {data.get('marks_pending')}"
    )
    return "\n".join(lines)


def human_lift(data: dict[str, Any]) -> str:
    """The refusals lifted."""
    lines = [f"lifted {len(data['lifted'])} refusal(s); {data['standing']} still stand"]
    lines += [f"  {r['id']}  {r.get('summary', '')}" for r in data["lifted"]]
    return "\n".join(lines)


_RED, _GREEN, _CYAN, _BOLD, _DIM, _OFF = (
    "\x1b[31m",
    "\x1b[32m",
    "\x1b[36m",
    "\x1b[1m",
    "\x1b[2m",
    "\x1b[0m",
)
_SHOWN_CHANGES = 50  # changes shown with their diff on a terminal (the envelope has all)


def _diff_line(line: str) -> str:
    if line.startswith(("+++", "---")):
        return f"{_BOLD}{line}{_OFF}"
    if line.startswith("@@"):
        return f"{_CYAN}{line}{_OFF}"
    if line.startswith("+"):
        return f"{_GREEN}{line}{_OFF}"
    if line.startswith("-"):
        return f"{_RED}{line}{_OFF}"
    return line


def human_review(data: dict[str, Any]) -> str:
    """Like `git log -p` for people: one change at a time, its reason, the diff of its text."""
    from memhtml.sleep.changeview import reason_lines

    lines = [f"sleep {data['run_id']} ({data['status']}): {data['diff_stat'] or 'no changes'}"]
    changes = data.get("changes") or []
    shown = [c for c in changes if not c.get("derived")][:_SHOWN_CHANGES]
    for c in shown:
        lines.append("")
        lines.append(f"{_BOLD}change {c['id']}{_OFF}  {c['phase']} {c['kind']}")
        lines.append(f"    {c['summary']}")
        lines += [f"    {_DIM}{r}{_OFF}" for r in reason_lines(c.get("reason") or {})]
        if c.get("depends_on"):
            lines.append(f"    rests on: {', '.join(c['depends_on'])}")
        for f in c["files"]:
            lines += ["    " + _diff_line(d) for d in f["diff"]]
    rest = len(changes) - len(shown)
    if rest:
        lines.append(f"\n({rest} more change(s): derived, or past the first {_SHOWN_CHANGES})")
    if not changes:
        for p in data["phases"]:  # a run recorded before changes were: its files by phase
            kinds = " ".join(f"{k}={v}" for k, v in p["by_kind"].items())
            if kinds:
                lines.append(f"  {p['phase']:20s} {p['status']:8s} {kinds}")
    vetoes = data.get("vetoes_by_guard") or {}
    if vetoes:
        lines.append("")
        lines.append(f"considered and vetoed ({len(data.get('vetoed') or [])}):")
        lines += [f"    {k}: {v}" for k, v in vetoes.items()]
    for item in data.get("left_out") or []:
        lines.append(f"left out {item['id']} ({item['summary']}): {item['why']}")
    standing = data.get("standing_refusals") or []
    if standing:
        lines.append("")
        lines.append(f"standing refusals ({len(standing)}; `memhtml sleep lift ID` lifts one):")
        lines += [f"    {r['id']}  {r.get('summary', '')}" for r in standing[:20]]
    if changes and data["status"] not in ("merged",):
        lines.append("")
        lines.append(
            f"merge: memhtml sleep merge {data['run_id']}"
            f"   refuse some: memhtml sleep merge {data['run_id']} --refuse ID[,ID...]"
        )
    return "\n".join(lines)


def human_plan(data: dict[str, Any]) -> str:
    """The verdict and its signals, then one line per phase that would run."""
    verdict = data.get("verdict") or "nothing-to-do"
    color = _GREEN if verdict == "would-change" else _DIM
    lines = [f"sleep plan at {str(data['head_sha'])[:12]}: {color}{_BOLD}{verdict}{_OFF}"]
    if data.get("refused"):
        lines.append(f"  {_RED}{data['refused']}{_OFF}")
    for signal in data.get("signals") or []:
        lines.append(f"  because {signal}")
    for item in data.get("unchecked") or []:
        lines.append(f"  {_DIM}not counted: {item}{_OFF}")
    for p in data["phases"]:
        if not p.get("would_run"):
            lines.append(
                f"  {p['ordinal']:2d} {p['phase']:20s} {_DIM}skip: {p.get('reason')}{_OFF}"
            )
            continue
        counts = _nonzero(p.get("counts"))
        lines.append(f"  {p['ordinal']:2d} {p['phase']:20s} {counts}")
    return "\n".join(lines)
