"""Phase 17, report: the run's committed HTML report, readable in a browser.

`.memhtml/sleep/<run-id>.html` (also what `memhtml://sleep/{run_id}` serves)
holds one section per phase with its status, its non-zero counts, detail, and
every change it made with its reason, rendered as the review page renders them
(memhtml.sleep.page; the diffs stay on the branch and in `sleep review`), then
the vetoes counted by guard, and what a refusing merge refused and left out.
It is deliberately not a memory (no `memhtml-*` head, outside the
PARA folders, never indexed). Its bytes depend only on the run's outcomes,
never on a clock, so a resume that changes nothing writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, Final

from memhtml.sleep.phase import PHASE_ORDER, PhaseOutcome, SleepContext, Touched

SLEEP_DIR: Final = ".memhtml/sleep"
MAX_LISTED: Final = 500  # files listed per phase; `memhtml sleep review` lists every one


def report_path(run_id: str) -> str:
    """Where the report of `run_id` lives in the tree."""
    return f"{SLEEP_DIR}/{run_id}.html"


def _counts(counts: Mapping[str, Any]) -> str:
    shown = {k: v for k, v in counts.items() if v}  # a zero says nothing a reader needs
    if not shown:
        return ""
    rows = "".join(
        f'<dt>{escape(str(k))}</dt><dd><data value="{escape(str(v))}">{escape(str(v))}</data></dd>'
        for k, v in shown.items()
    )
    return f'<dl class="reason">{rows}</dl>'


def _touched(touched: Sequence[Mapping[str, Any]]) -> str:
    if not touched:
        return "<p>No files touched.</p>"
    items = []
    for t in touched[:MAX_LISTED]:
        origin = t.get("from_path")
        came = f" from <code>{escape(str(origin))}</code>" if origin else ""
        kind, path = escape(str(t.get("kind"))), escape(str(t.get("path")))
        items.append(f"<li>{kind}: <code>{path}</code>{came}</li>")
    more = len(touched) - MAX_LISTED
    tail = (
        f"<p>… and {more} more (<code>memhtml sleep review</code> lists every file).</p>"
        if more > 0
        else ""
    )
    return f"<ul>{''.join(items)}</ul>{tail}"


def render(
    run_id: str,
    base_sha: str,
    results: Sequence[Mapping[str, Any]],
    *,
    dry_run: bool,
    decided: Mapping[str, Any] | None = None,
    refusals: Mapping[str, Any] | None = None,
) -> str:
    """The report's HTML."""
    from memhtml.html.site_style import STYLESHEET
    from memhtml.sleep.changeview import veto_summary, veto_views
    from memhtml.sleep.page import EXTRA_STYLE, change_html

    changes = [c.to_data() for c in (decided or {}).get("changes") or []]
    for c in changes:  # the report names each file; the diff is the branch's
        c["files"] = [
            {"path": f["path"], "from_path": f["from_path"], "status": _status(f)}
            for f in c["files"]
        ]
    by_phase: dict[str, list[dict[str, Any]]] = {}
    for c in changes:
        by_phase.setdefault(str(c["phase"]), []).append(c)
    vetoes = veto_views((decided or {}).get("vetoes") or [])
    committed = sum(1 for r in results if r.get("commit_sha"))
    failed = [r for r in results if r.get("status") == "failed"]
    skipped = sum(1 for r in results if r.get("status") == "skipped")
    where = (
        "This was a dry run: nothing was written."
        if dry_run
        else f"The branch is <code>sleep/{escape(run_id)}</code>, based on"
        f" <code>{escape(base_sha[:12])}</code>; it reaches main only through"
        f" <code>memhtml sleep merge {escape(run_id)}</code>."
    )
    parts = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>Sleep run {escape(run_id)}</title>",
        f"<style>{STYLESHEET}{EXTRA_STYLE}</style>",
        "</head>",
        "<body>",
        "<article>",
        f"<h1>Sleep run {escape(run_id)}</h1>",
        f"<p><mark>{escape(run_id)} ran {len(results)} phases: {committed} committed,"
        f" {len(failed)} failed, {skipped} skipped.</mark> {where}</p>",
    ]
    if decided is not None:
        parts.append(
            f"<p>{len(changes)} change(s), {len(vetoes)} considered and vetoed;"
            f" <code>memhtml sleep review {escape(run_id)}</code> shows each diff, and"
            f" <code>memhtml sleep merge {escape(run_id)} --refuse ID</code> leaves a change"
            " out.</p>"
        )
    if failed:
        items = "".join(
            f"<li><code>{escape(str(r['phase']))}</code>: {escape(str(r.get('detail') or ''))}</li>"
            for r in failed
        )
        parts.append(
            f"<details open><summary>{len(failed)} phase(s) failed; every other commit is intact"
            f" and the later phases ran.</summary><ul>{items}</ul></details>"
        )
    rows = []
    for r in results:
        commit = str(r.get("commit_sha") or "")[:12] or "—"
        rows.append(
            f'<tr><td>{r.get("ordinal", "")}</td><td><a href="#phase-{escape(str(r["phase"]))}">'
            f"{escape(str(r['phase']))}</a></td><td>{escape(str(r.get('status')))}</td>"
            f"<td><code>{escape(commit)}</code></td><td>{int(r.get('llm_calls') or 0)}</td>"
            f"<td>{len(r.get('touched') or [])}</td></tr>"
        )
    parts.append(
        "<table><caption>Per-phase outcome, in run order</caption>"
        "<thead><tr><th>#</th><th>Phase</th><th>Status</th><th>Commit</th>"
        "<th>Model calls</th><th>Files</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    for r in results:
        name = str(r["phase"])
        detail = r.get("detail")
        parts.append(
            f'<section id="phase-{escape(name)}">'
            f"<h2>{r.get('ordinal', '')}. {escape(name)}: {escape(str(r.get('status')))}</h2>"
            + (f"<p>{escape(str(detail))}</p>" if detail else "")
            + _counts(r.get("counts") or {})
            + (
                "".join(change_html(c, form=False) for c in by_phase.get(name, []))
                if decided is not None
                else _touched(r.get("touched") or [])
            )
            + "</section>"
        )
    summary = veto_summary(vetoes)
    if summary:
        vrows = "".join(f"<tr><td>{escape(k)}</td><td>{v}</td></tr>" for k, v in summary.items())
        parts.append(
            f'<section id="vetoes"><h2>Considered and vetoed: {len(vetoes)}</h2>'
            f'<table class="vetoes"><tr><th>phase: guard</th><th>count</th></tr>{vrows}</table>'
            "</section>"
        )
    if refusals:
        items = "".join(
            f"<li><code>{escape(str(c['id']))}</code> {escape(str(c['summary']))}: refused</li>"
            for c in refusals.get("refused") or []
        ) + "".join(
            f"<li><code>{escape(str(c['id']))}</code> {escape(str(c['summary']))}: left out,"
            f" {escape(str(c['why']))}</li>"
            for c in refusals.get("left_out") or []
        )
        parts.append(f'<section id="refused"><h2>Refused at merge</h2><ul>{items}</ul></section>')
    parts += ["</article>", "</body>", "</html>", ""]
    return "\n".join(parts)


def _status(f: Mapping[str, Any]) -> str:
    if f.get("from_path"):
        return "moved"
    if f.get("before") is None:
        return "created"
    return "removed" if f.get("after") is None else "modified"


@dataclass(frozen=True)
class Report:
    """Commits the report file; on a dry run counts only."""

    name: str = "report"
    needs_model: bool = False
    commits: bool = True
    deep_only: bool = False

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Render the earlier phases' outcomes into the report file."""
        results = [r for r in ctx.results if r.get("phase") != self.name]
        from memhtml.domain.secrets import redact

        text = redact(
            render(
                ctx.run_id,
                ctx.base_sha,
                results,
                dry_run=ctx.dry_run,
                decided=ctx.decided,
                refusals=ctx.refusals,
            )
        )
        data = text.encode("utf-8")
        path = report_path(ctx.run_id)
        counts = {
            "phases": len(results),
            "committed": sum(1 for r in results if r.get("commit_sha")),
            "failed": sum(1 for r in results if r.get("status") == "failed"),
            "skipped": sum(1 for r in results if r.get("status") == "skipped"),
            "bytes": len(data),
        }
        touched: list[Touched] = []
        if not ctx.dry_run:
            existed = ctx.view.exists(path)
            if not existed or ctx.view.read(path) != data:
                ctx.view.write(path, data)
                touched.append(Touched(path, "rewritten" if existed else "created"))
        return PhaseOutcome(counts=counts, touched=touched, subject=f"record run {ctx.run_id}")

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """Always writes one file."""
        return {"would_commit": True, "files": 1, "phases": len(PHASE_ORDER) - 1}


PHASE = Report()
