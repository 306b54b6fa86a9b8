"""`memhtml doctor` on a terminal: healthy or not and why, each finding with what `--fix` will
do to it, the advisory notes apart, and (after `--fix`) what was repaired.

The verdict's reasons are memhtml.ops.doctor_checks.findings: the same words
`doctor --strict` fails with.
"""

from __future__ import annotations

from typing import Any, Final

from memhtml.cli.text import clip, listed, paragraph, plural, sha

MAX_SHOWN: Final = 10
MORE: Final = "--json lists them all"


def doctor(data: dict[str, Any]) -> str:
    """The report (files mode: each file; corpus mode: the store)."""
    if data.get("mode") == "files":
        return _files(data)
    from memhtml.ops.doctor_checks import findings, notes

    wrong = findings(data)
    verdict = "healthy" if data.get("healthy") else "NOT healthy"
    lines = [*_repairs(data["repairs"]), ""] if data.get("repairs") else []
    lines += paragraph(f"{verdict}: {'; '.join(wrong)}" if wrong else verdict)
    index = "index up to date" if data.get("index_fresh") else "index behind the tree"
    lines.append(f"  {data.get('root')} at HEAD {sha(data.get('head_sha'))}; {index}")
    lines += _findings(data)
    said = notes(data)
    if said:
        lines += ["", "notes (advisory, never unhealthy):", *_notes(data)]
    plan = data.get("fix_would") or []
    if plan:
        lines += ["", "doctor --fix would:", *(f"  - {p}" for p in plan)]
    elif not data.get("repairs") and not data.get("healthy"):
        lines += ["", "doctor --fix has nothing to repair here: each finding says what to do"]
    tips = [s for s in data.get("suggestions") or [] if s]
    if tips:
        lines += ["", *(("try: " if i == 0 else "     ") + t for i, t in enumerate(tips))]
    return "\n".join(lines)


def _files(data: dict[str, Any]) -> str:
    lines = []
    for f in data.get("files") or []:
        mark = "ok " if f["ok"] else "BAD"
        lines.append(
            f"{mark} {f['path']}" + (f" ({f['memory_type']})" if f.get("memory_type") else "")
        )
        lines += [f"      violation {v['code']}: {v['message']}" for v in f.get("violations") or []]
        lines += [f"      warning {w['code']}: {w['message']}" for w in f.get("warnings") or []]
    bad = sum(1 for f in data.get("files") or [] if not f["ok"])
    lines.append(
        "all valid"
        if not bad
        else f"{plural(bad, 'file')} {'breaks' if bad == 1 else 'break'} the memory format"
    )
    return "\n".join(lines)


def _section(title: str, items: list[str]) -> list[str]:
    return ["", f"{title}:", *listed(items, limit=MAX_SHOWN, more=MORE)] if items else []


def _findings(data: dict[str, Any]) -> list[str]:
    out: list[str] = []
    links = []
    for d in data.get("dangling") or []:
        links.append(f"{d['src_path']} {d['rel']} {d['dst_path']}")
        if d.get("rewrite_to") and not d.get("fix_leaves"):
            links.append(f"  --fix rewrites it to {d['rewrite_to']}")
        elif d.get("rewrite_to"):
            links.append(
                f"  --fix leaves it ({d['fix_leaves']}); it would point at {d['rewrite_to']}"
            )
        else:
            links.append(f"  --fix leaves it: {d.get('fix_leaves')}; edit or remove the link")
    out += _section("dangling links (their target is gone)", links)
    rows = []
    for r in data.get("orphan_access_fix") or [
        {"path": p, "move_to": None} for p in data.get("orphan_access_rows") or []
    ]:
        where = f"--fix moves it to {r['move_to']}" if r.get("move_to") else "nowhere to move it"
        rows.append(f"{r['path']}  ({where})")
    out += _section("usage rows of memories gone", rows)
    out += _section(
        "files that break the memory format",
        [
            f"{u['path']}: {u['violations'][0]['message'] if u.get('violations') else ''}"
            for u in data.get("unparseable") or []
        ],
    )
    out += _section(
        "format warnings",
        [
            f"{w['path']}: {x['code']}: {x['message']}"
            for w in data.get("warnings") or []
            for x in w["warnings"]
        ],
    )
    out += _section(
        "files the index never reads",
        [f"{u['path']}: {u['reason']}" for u in data.get("unseen") or []],
    )
    out += _section(
        "paths reused by another memory", [clip(str(r), 96) for r in data.get("path_reuse") or []]
    )
    if data.get("committed_planes"):
        out += _section("machine-local databases committed to git", data["committed_planes"])
    if data.get("stale_git_lock"):
        out += _section("stale git lock", [f"{data['stale_git_lock']}  (--fix removes it)"])
    if data.get("interrupted_batch"):
        paths = data["interrupted_batch"].get("paths") or []
        out += _section("a batch a killed command left (--fix settles it)", paths or ["(torn)"])
    if data.get("inbox_crowded") or data.get("inbox_tasks_crowded"):
        out += _section(
            "inbox",
            [
                f"{data.get('inbox_depth')} memories and {data.get('inbox_task_depth')} tasks wait"
                " in areas/inbox/: file them under projects/, areas/ or resources/ (git mv)"
            ],
        )
    if data.get("vector_coverage_low"):
        out += _section(
            "vectors",
            [
                f"coverage {data['vector_coverage']:.0%} is under the floor"
                f" {data['vector_coverage_floor']:.0%}: search drops the"
                " vector arm (memhtml index embed)"
            ],
        )
    if not data.get("embed_model_matches", True):
        out += _section(
            "vectors",
            [
                f"stored: {data.get('stored_embed_model')}, embedder:"
                f" {data.get('configured_embed_model')}"
                " (memhtml index migrate, or set MEMHTML_EMBED back)"
            ],
        )
    runs = []
    for r in data.get("sleep_runs") or []:
        runs.append(f"{r['run_id']} {r['status']}: {r.get('why', '')}")
        runs += [f"  try: {s}" for s in r.get("suggestions") or []]
    out += _section("sleep runs waiting for someone", runs)
    return out


def _notes(data: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for t in (data.get("overdue_tasks") or [])[:MAX_SHOWN]:
        out.append(f"  overdue: {t['path']} ({t.get('task_status')}, due {t.get('due_at')})")
    for b in (data.get("stale_blockers") or [])[:MAX_SHOWN]:
        out.append(f"  blocked by a {b['blocker_state']} task: {b['path']} <- {b['blocker_path']}")
    untyped = data.get("untyped_entities") or []
    if untyped:
        names = ", ".join(f"{u['entity_name']} ({plural(u['files'], 'file')})" for u in untyped)
        total = data.get("untyped_entity_total", len(untyped))
        more = f" and {total - len(untyped)} more" if total > len(untyped) else ""
        out += paragraph(
            f"entity names without a type: {names}{more}; write them as type:name"
            " (service:checkout-api) so --entity finds them",
            2,
        )
    if data.get("dirty"):
        out.append(
            f"  uncommitted: {', '.join(data['dirty'][:MAX_SHOWN])}"
            + (" ..." if len(data["dirty"]) > MAX_SHOWN else "")
        )
    return out


def _repairs(repairs: dict[str, Any]) -> list[str]:
    lines = ["doctor --fix repaired:"]
    done = []
    if repairs.get("relinked"):
        done.append(
            f"rewrote {plural(len(repairs['relinked']), 'dangling link')}"
            f" (commit {sha(repairs.get('commit_sha'))})"
        )
    if repairs.get("access_moved"):
        done.append(f"moved {plural(len(repairs['access_moved']), 'usage row')}")
    if repairs.get("interrupted_batch"):
        done.append("settled a killed command's batch")
    if repairs.get("temp_files_removed"):
        done.append(f"removed {plural(len(repairs['temp_files_removed']), 'temporary file')}")
    if repairs.get("stale_git_lock_removed"):
        done.append("removed a stale git lock")
    for s in repairs.get("sleep") or []:
        done.append(f"sleep merge {s.get('run_id', '')}: {s.get('outcome')}")
    lines += [f"  - {d}" for d in done] or ["  nothing needed repair"]
    for left in repairs.get("links_left") or []:
        lines.append(f"  left {left['src_path']} {left['rel']} {left['from']}: {left['reason']}")
    if repairs.get("access_left"):
        lines.append(
            f"  left {plural(len(repairs['access_left']), 'usage row')} with nowhere to go"
        )
    lines.append("after the repairs, the store is:")
    return lines
