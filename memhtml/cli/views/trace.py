"""Terminal view of `trace links`: which memories a session wrote, corrected or read, or which
sessions touched a memory, as one table with the sessions it names below."""

from __future__ import annotations

from typing import Any

from memhtml.cli.text import clip, columns, plural, when

SHORT_ID = 12  # what `trace search` shows; `--session-id` takes any unique prefix
MAX_ROWS = 100  # a busy session reads thousands of memories: --json carries every link


def links(data: dict[str, Any]) -> str:
    """A header naming what was asked, a row per link, then each session's first prompt."""
    found = data.get("links") or []
    asked = f"session {data['session_id']}" if data.get("session_id") else f"{data.get('path')}"
    if not found:
        what = (
            "wrote, corrected or read no memory"
            if data.get("session_id")
            else ("was written, corrected or read by no recorded session")
        )
        return f"{asked} {what}"
    memories = {link["path"] for link in found}
    sessions = list(dict.fromkeys(link["session_id"] for link in found))
    lines = [
        f"{asked}: {plural(len(found), 'link')}, {plural(len(memories), 'memory', 'memories')},"
        f" {plural(len(sessions), 'session')}",
        "",
    ]
    rows = [["when", "kind", "session", "memory"]]
    for link in found[:MAX_ROWS]:
        memory = link["path"] + (" (archived)" if link.get("archived") else "")
        if link.get("origin_path") and link["origin_path"] != link["path"]:
            memory += f" <- {link['origin_path']}"
        rows.append(
            [when(link.get("at")), link["link_kind"], link["session_id"][:SHORT_ID], memory]
        )
    lines += columns(rows)
    if len(found) > MAX_ROWS:
        lines.append(f"... and {len(found) - MAX_ROWS:,} more (--json lists every link)")
    named = [s for s in data.get("sessions") or [] if s.get("session_id") in sessions]
    if named:
        lines += ["", "sessions:"]
        for s in named:
            title = s.get("ai_title") or s.get("first_prompt") or ""
            lines.append(
                f"  {s['session_id'][:SHORT_ID]}  {when(s.get('started_at'))}"
                f"  {clip(title, 60) if title else '(no prompt)'}"
            )
    elif not data.get("indexed"):
        lines += ["", "(transcripts not indexed: memhtml trace index names each session)"]
    return "\n".join(lines)
