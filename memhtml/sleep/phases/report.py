"""Phase 17, report: the run's committed HTML report, readable in a browser.

`.memhtml/sleep/<run-id>.html` (also what `memhtml://sleep/{run_id}` serves)
holds one section per phase with its status, counts, detail and the files it
touched. It is deliberately not a memory (no `memhtml-*` head, outside the
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
    if not counts:
        return "<p>No counts.</p>"
    rows = "".join(
        f'<dt>{escape(str(k))}</dt><dd><data value="{escape(str(v))}">{escape(str(v))}</data></dd>'
        for k, v in counts.items()
    )
    return f"<dl>{rows}</dl>"


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
    run_id: str, base_sha: str, results: Sequence[Mapping[str, Any]], *, dry_run: bool
) -> str:
    """The report's HTML."""
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
        "</head>",
        "<body>",
        "<article>",
        f"<h1>Sleep run {escape(run_id)}</h1>",
        f"<p><mark>{escape(run_id)} ran {len(results)} phases: {committed} committed,"
        f" {len(failed)} failed, {skipped} skipped.</mark> {where}</p>",
    ]
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
            + _touched(r.get("touched") or [])
            + "</section>"
        )
    parts += ["</article>", "</body>", "</html>", ""]
    return "\n".join(parts)


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

        text = redact(render(ctx.run_id, ctx.base_sha, results, dry_run=ctx.dry_run))
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
