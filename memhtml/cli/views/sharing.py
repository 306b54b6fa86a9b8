"""Terminal views of sharing and the state plane: sync (and its conflicts), remote add, state
export, state import."""

from __future__ import annotations

from typing import Any

from memhtml.cli.text import clip, listed, paragraph, plural, sha


def sync(data: dict[str, Any]) -> str:
    """What came in, what went out, what was folded, where HEAD is now."""
    where = f"{data.get('remote')}/{data.get('branch')}"
    mode = data.get("mode")
    if mode == "up-to-date" and not data.get("sent"):
        head = f"{where}: already up to date"
    else:
        got = plural(data.get("received", 0), "commit")
        sent = plural(data.get("sent", 0), "commit")
        head = f"{where}: received {got} ({mode}), sent {sent}"
        if not data.get("pushed") and data.get("sent") == 0 and mode != "up-to-date":
            head += "; nothing pushed"
    lines = [head + f"; HEAD {sha(data.get('head_sha'))}"]
    files = {k: v for k, v in (data.get("files") or {}).items() if v}
    if files:
        lines.append("  files: " + ", ".join(f"{v} {k}" for k, v in files.items()))
    for f in data.get("folded") or []:
        lines.append(f"  folded {f['path']} into {f['into']} (the same fact, written twice)")
    checked = data.get("checked") or {}
    if checked.get("commits"):
        lines.append(
            f"  checked {plural(checked['commits'], 'incoming commit')}"
            f" ({plural(checked.get('paths', 0), 'path')})"
        )
    return "\n".join(lines)


def conflicts(details: dict[str, Any]) -> str:
    """A sync conflict's details: each path, both sides' claims, git's own words."""
    lines = [f"{plural(details.get('count', 0), 'conflicted file')}:"]
    for c in details.get("conflicts") or []:
        lines.append(f"  {c['path']}")
        lines.append(f"    ours:   {clip(c.get('ours') or '(no claim)', 80)}")
        lines.append(f"    theirs: {clip(c.get('theirs') or '(no claim)', 80)}")
        if c.get("git"):
            lines += paragraph(f"git: {c['git']}", 4)
    return "\n".join(lines)


def remote_add(data: dict[str, Any]) -> str:
    """The remote added, and every remote now known."""
    return (
        f"added remote {data['remote']} -> {data.get('url')}"
        f" (remotes: {', '.join(data.get('remotes') or [])}); next: memhtml sync"
    )


def state_export(data: dict[str, Any]) -> str:
    """Each sidecar written (or unchanged) and the commit."""
    commit = f" (commit {sha(data['commit_sha'])})" if data.get("commit_sha") else ""
    written = [s for s in data.get("sidecars") or [] if s.get("written")]
    head = (
        f"exported the usage plane{commit}"
        if written
        else "the sidecars are current: nothing to commit"
    )
    lines = [head]
    for s in data.get("sidecars") or []:
        state = "written" if s.get("written") else ("kept" if s.get("kept") else "unchanged")
        size = f"{plural(s.get('rows', 0), 'row')}, {s.get('bytes', 0):,} bytes"
        lines.append(f"  {s['path']}: {size} ({state})")
    return "\n".join(lines)


def state_import(data: dict[str, Any]) -> str:
    """Rows read and restored from the sidecars, and what was skipped."""
    if not data.get("files"):
        return "no sidecar to import (memhtml state export writes them)"
    lines = [
        f"imported {', '.join(data['files'])}: {plural(data.get('rows', 0), 'usage row')} read,"
        f" {data.get('restored', 0):,} restored"
    ]
    if data.get("corroboration_rows"):
        lines.append(
            f"  corroboration: {data['corroboration_rows']:,} read,"
            f" {data.get('corroboration_restored', 0):,} restored"
        )
    if data.get("followed"):
        lines.append(f"  {plural(len(data['followed']), 'row')} followed a memory that moved")
    if data.get("clamped"):
        lines.append(f"  {plural(data['clamped'], 'value')} clamped into range")
    if data.get("skipped"):
        lines.append(f"  skipped {plural(data['skipped'], 'row')} (no such memory):")
        lines += listed(data.get("skipped_paths") or [], limit=10, indent=4)
    lines += [f"  try: {s}" for s in data.get("suggestions") or []]
    return "\n".join(lines)
