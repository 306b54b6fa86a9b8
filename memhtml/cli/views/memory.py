"""Terminal views of the write doors and reads: init, write, apply, read, list, correct,
archive, link."""

from __future__ import annotations

from typing import Any, Final

from memhtml.cli.text import WIDTH, clip, columns, paragraph, plural, sha, when

MAX_OPS_SHOWN: Final = 50


def vectors_note(data: dict[str, Any]) -> list[str]:
    """A line when a write's vectors did not all follow (pending, or the embedder failed)."""
    vectors = data.get("vectors") or {}
    pending, error = vectors.get("pending") or 0, vectors.get("error")
    if not pending and not error:
        return []
    why = f": {error}" if error else ""
    return [f"  vectors: {pending} chunk(s) wait for the embedder{why} (memhtml index embed)"]


def _committed(data: dict[str, Any]) -> str:
    return f" (commit {sha(data['commit_sha'])})" if data.get("commit_sha") else ""


def init(data: dict[str, Any]) -> str:
    """What was scaffolded (or that nothing needed to be)."""
    root = data.get("root", "")
    if data.get("cloned_from"):
        lines = [f"cloned {data['cloned_from']} into {root}"]
        index = data.get("index") or {}
        if index:
            lines.append(f"  indexed {plural(index.get('projected', 0), 'memory', 'memories')}")
        return "\n".join(lines)
    created = data.get("created") or []
    if not data.get("created_repo") and not created:
        return f"{root} is already a memory root: nothing to do"
    head = "initialized a new memory root" if data.get("created_repo") else "completed the root"
    lines = [f"{head} at {root}{_committed(data)}"]
    if created:
        lines.append(f"  created {', '.join(created)}")
    lines.append("  next: memhtml write --title ... --type semantic --claim ...")
    return "\n".join(lines)


def write(data: dict[str, Any]) -> str:
    """Where the memory landed, or which memory already says it."""
    if data.get("deduped"):
        return (
            f"already stored as {data.get('existing_path')}: the same claim is there;"
            " nothing was written"
        )
    lines = [f"wrote {data['path']}{_committed(data)}"]
    for c in data.get("conflicts") or []:
        lines.append(f"  conflicts with {c['path']}: {clip(c.get('claim') or '', 70)}")
    for n in data.get("near_duplicates") or []:
        lines.append(f"  near-duplicate of {n['path']}: {clip(n.get('claim') or '', 70)}")
    return "\n".join(lines + vectors_note(data))


def _op_line(r: dict[str, Any]) -> tuple[str, str]:
    """(outcome, what) for one op's result."""
    if r.get("skipped"):
        return "skipped", "not run: an earlier op failed and the batch is atomic"
    if not r.get("ok"):
        return "FAILED", f"{r.get('code')}: {r.get('error')}"
    op = r.get("op")
    if r.get("consolidated_into") is not None:
        return "ok", f"folded into op {r['consolidated_into']} (last wins)"
    if op == "write":
        if r.get("deduped"):
            return "ok", f"already stored as {r.get('existing_path')}"
        extra = f"; supersedes {r['superseded_path']}" if r.get("superseded_path") else ""
        return "ok", f"{r.get('path')} (new){extra}"
    if op == "correct":
        return "ok", f"{r.get('target_path')} -> {r.get('path')}"
    if op == "archive":
        return "ok", f"{r.get('path')} -> {r.get('archive_path')}"
    if op == "link":
        again = "" if r.get("created", True) else " (already there)"
        return "ok", f"{r.get('src_path')} {r.get('rel')} {r.get('dst_path')}{again}"
    return "ok", str(r.get("path") or "")


def apply(data: dict[str, Any]) -> str:
    """The batch: one line a op (what it did or why it failed), then what the checks found."""
    summary = data.get("summary") or {}
    counts = [
        f"{summary[k]} {k}"
        for k in ("written", "deduped", "corrected", "archived", "linked", "unchanged")
        if summary.get(k)
    ]
    failed, skipped = summary.get("failed", 0), summary.get("skipped", 0)
    if failed:
        counts.append(f"{failed} failed")
    if skipped:
        counts.append(f"{skipped} skipped")
    total = plural(summary.get("total", len(data.get("results", []))), "op")
    if data.get("commit_sha"):
        head = f"applied {total} in commit {sha(data['commit_sha'])}"
    elif data.get("aborted"):
        head = f"{total}: nothing was committed (an op failed and the batch is atomic)"
    else:
        head = f"applied {total}: nothing to commit"
    lines = [head + (f": {', '.join(counts)}" if counts else "")]
    rows = []
    notes: dict[int, list[str]] = {}
    results = data.get("results") or []
    for i, r in enumerate(results[:MAX_OPS_SHOWN]):
        outcome, what = _op_line(r)
        where = f"line {r['line']}" if r.get("line") is not None else f"op {r.get('index')}"
        rows.append([f"  {where}", str(r.get("op", "")), outcome, clip(what, WIDTH - 30)])
        said = [
            f"conflicts with {c['path']}: {clip(c.get('claim') or '', 60)}"
            for c in r.get("conflicts") or []
        ]
        said += [
            f"near-duplicate of {n['path']} (cosine {n.get('cosine', 0):.2f})"
            for n in r.get("near_duplicates") or []
        ]
        notes[i] = said
    shown = columns(rows)
    for i, line in enumerate(shown):
        lines.append(line)
        lines += [f"{'':10}{note}" for note in notes.get(i, [])]
    if len(results) > MAX_OPS_SHOWN:
        lines.append(f"  ... and {len(results) - MAX_OPS_SHOWN} more ops (--json for every one)")
    return "\n".join(lines + vectors_note(data))


def read(data: dict[str, Any]) -> str:
    """The memory as a page: title, where and what it is, its dates, the article, links."""
    metas = data.get("metas") or {}
    state = "archived" if data.get("archived") else (data.get("status") or "active")
    lines = [
        data.get("title") or "(untitled)",
        f"{data['path']} · {data.get('memory_type')} · {state}",
    ]
    dates = [f"created {when(data.get('created'))}", f"updated {when(data.get('updated'))}"]
    if data.get("event_at"):
        dates.append(f"happened {when(data['event_at'])}")
    lines.append(" · ".join(dates))
    facts = []
    for label, key in (
        ("confidence", "memhtml-confidence"),
        ("importance", "memhtml-importance"),
        ("task", "memhtml-task-status"),
        ("due", "memhtml-due"),
        ("valid from", "memhtml-valid-from"),
        ("valid until", "memhtml-valid-until"),
        ("superseded by", "memhtml-superseded-by"),
    ):
        if metas.get(key):
            facts.append(f"{label} {metas[key]}")
    if facts:
        lines.append(" · ".join(facts))
    for label, key in (("entities", "entities"), ("tags", "tags"), ("aliases", "aliases")):
        if data.get(key):
            lines += paragraph(f"{label}: {', '.join(data[key])}")
    lines.append("")
    lines += article_lines(data.get("article_html") or "") or paragraph(
        data.get("body_text", ""), 2
    )
    if data.get("links"):
        lines += ["", "links:"]
        lines += [f"  {link['rel']} -> {link['path']}" for link in data["links"]]
    for label, key in (("warnings", "warnings"), ("violations", "violations")):
        if data.get(key):
            lines += ["", f"{label}:"]
            lines += [f"  {w['code']}: {w['message']}" for w in data[key]]
    return "\n".join(lines)


def article_lines(article_html: str) -> list[str]:
    """The article's text, one paragraph a block, wrapped and indented (a reading view)."""
    from memhtml.cli.views.article import blocks

    out: list[str] = []
    for kind, text in blocks(article_html):
        if kind == "pre":
            out += ["    " + line for line in text.splitlines()]
        elif kind == "li":
            wrapped = paragraph(text, 4)
            out += ["  - " + wrapped[0][4:], *wrapped[1:]]
        else:
            out += paragraph(text, 2)
    return out


def list_(data: dict[str, Any]) -> str:
    """One row a memory: path, type, last update, title; the next page's cursor."""
    files = data.get("files") or []
    if not files:
        return "no memories match"
    rows = [["path", "type", "updated", "title"]]
    for f in files:
        kind = f.get("memory_type") or ""
        if f.get("task_status"):
            kind += f" ({f['task_status']})"
        if f.get("archived"):
            kind += " (archived)"
        rows.append(
            [f["path"], kind, (f.get("updated_at") or "")[:10], clip(f.get("title") or "", 50)]
        )
    lines = columns(rows)
    if data.get("next_cursor"):
        lines.append(
            f"{plural(len(files), 'memory', 'memories')} shown; the next page:"
            f" --cursor {data['next_cursor']}"
        )
    return "\n".join(lines)


_TITLE_FROM: Final = {
    "given": "given",
    "claim": "from the new claim",
    "original": "kept from the original",
}


def _relinked(data: dict[str, Any]) -> list[str]:
    lines = [
        f"  relinked {r['src_path']} {r['rel']} -> {r['to']}" for r in data.get("relinked") or []
    ]
    for r in data.get("links_left") or []:
        lines.append(f"  left {r['src_path']} {r['rel']} -> {r.get('from')}: {r.get('reason', '')}")
    return lines


def correct(data: dict[str, Any]) -> str:
    """Old path -> new path, the title's origin, what was archived and relinked."""
    lines = [f"corrected {data['target_path']} -> {data['path']}{_committed(data)}"]
    if data.get("title"):
        lines.append(
            f"  title: {data['title']} ({_TITLE_FROM.get(data.get('title_from', ''), '')})"
        )
    lines += [f"  archived {a}" for a in data.get("archived") or []]
    if data.get("reason"):
        lines.append(f"  reason: {data['reason']}")
    return "\n".join(lines + _relinked(data) + vectors_note(data))


def archive(data: dict[str, Any]) -> str:
    """Where the memory went, and the links that followed it."""
    lines = [f"archived {data['path']} -> {data['archive_path']}{_committed(data)}"]
    if data.get("reason"):
        lines.append(f"  reason: {data['reason']}")
    return "\n".join(lines + _relinked(data))


def link(data: dict[str, Any]) -> str:
    """The link, new or already there."""
    edge = f"{data['src_path']} {data['rel']} {data['dst_path']}"
    if not data.get("created", True):
        return f"already linked: {edge} (nothing to commit)"
    return f"linked {edge}{_committed(data)}"
