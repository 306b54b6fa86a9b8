"""A night's changes as a person reviews them: each file's text before and after, and the diff.

`sleep review`, the review page and the committed report all show a change the same
way, so this is the one place that turns a manifest line (memhtml.sleep.changes: blob
ids before and after) into what is read: a memory as its reading (memhtml.html.reading:
title, the article's blocks, its facts, one line each), any other file as its text
lines, and a unified diff of those lines. A diff of the reading says "confidence: 1 ->
0.95" or "a paragraph was added" where a diff of the markup shows a `<meta>` line.
Long texts are cut (MAX_LINES) and say so: the branch holds the whole file.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from memhtml.sleep.changes import Change, Veto

if TYPE_CHECKING:
    from memhtml.store.branch import BlobReader

MAX_LINES: Final = 400  # lines of one file's text or diff a view carries
MAX_LINE: Final = 2000  # characters of one line


def _lines(path: str, data: bytes | None) -> list[str]:
    if data is None:
        return []
    if path.endswith(".html"):
        from memhtml.html.reading import reading

        return reading(data).lines()
    text = data.decode("utf-8", "replace")
    return text.splitlines()


def _cut(lines: Sequence[str]) -> tuple[list[str], bool]:
    out = [line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…" for line in lines]
    return out[:MAX_LINES], len(out) > MAX_LINES


def text_diff(before: Sequence[str], after: Sequence[str], a: str, b: str) -> list[str]:
    """A unified diff of two texts as lines (headers included; empty when equal)."""
    return [
        line.rstrip("\n")
        for line in difflib.unified_diff(list(before), list(after), a, b, n=2, lineterm="")
    ]


def file_view(path: str, from_path: str | None, before: bytes | None, after: bytes | None) -> dict:
    """One file of a change: its status, its text before and after, and their diff."""
    old, new = _lines(from_path or path, before), _lines(path, after)
    diff = text_diff(
        old, new, f"a/{from_path or path}" if before is not None else "/dev/null", f"b/{path}"
    )
    old_cut, old_more = _cut(old)
    new_cut, new_more = _cut(new)
    diff_cut, diff_more = _cut(diff)
    status = (
        "moved"
        if from_path
        else "created"
        if before is None
        else "removed"
        if after is None
        else "modified"
    )
    return {
        "path": path,
        "from_path": from_path,
        "status": status,
        "before": old_cut,
        "after": new_cut,
        "diff": diff_cut,
        "cut": old_more or new_more or diff_more,
    }


def change_views(reader: BlobReader, changes: Sequence[Change]) -> list[dict[str, Any]]:
    """Every change as review shows it (its files read in one batch)."""
    shas = {s for c in changes for f in c.files for s in (f.before, f.after) if s}
    blobs = reader.blobs(sorted(shas)) if shas else {}
    out: list[dict[str, Any]] = []
    for change in changes:
        files = [
            file_view(
                f.path,
                f.from_path,
                blobs.get(f.before) if f.before else None,
                blobs.get(f.after) if f.after else None,
            )
            for f in change.files
        ]
        out.append(
            {
                "id": change.id,
                "phase": change.phase,
                "kind": change.kind,
                "summary": change.summary,
                "reason": change.reason,
                "depends_on": change.depends_on,
                "derived": change.derived,
                "files": files,
            }
        )
    return out


def veto_views(vetoes: Iterable[Veto]) -> list[dict[str, Any]]:
    """Vetoes as data."""
    return [v.to_data() for v in vetoes]


def veto_summary(vetoes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Vetoes counted by (phase, guard): `dedup-merge: numeric` -> 3."""
    out: dict[str, int] = {}
    for v in vetoes:
        guards = (v.get("reason") or {}).get("guards") or ["refused" if v.get("id") else "other"]
        for guard in guards:
            key = f"{v.get('phase')}: {guard}"
            out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def reason_lines(reason: Mapping[str, Any]) -> list[str]:
    """A reason as `name: value` lines (evidence quotes one a line, as said)."""
    out: list[str] = []
    for key, value in reason.items():
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if key in ("evidence", "quotes"):
                out += [f"{key}: “{v}”" for v in value]
            else:
                out.append(f"{key}: {', '.join(value)}")
        elif isinstance(value, dict):
            out.append(f"{key}: " + ", ".join(f"{k} {v}" for k, v in value.items()))
        else:
            out.append(f"{key}: {value}")
    return out
