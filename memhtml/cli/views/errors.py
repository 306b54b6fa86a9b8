"""A failure as a person reads it: what went wrong, its code, what the details say, what to try.

Piped, the same failure is the error envelope, unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from memhtml.cli.text import WIDTH, clip, paragraph

Report = Callable[[dict[str, Any]], str]

MAX_DETAIL_LINES: Final = 24
MAX_LIST_ITEMS: Final = 10


def error_text(payload: dict[str, Any], report: Callable[[str], Report | None]) -> str:
    """`error: <message>`, the code, the details, `try:` lines; `report(code)` is the view
    of the code's details where they are a report a person wants whole (views.ERROR_DETAILS)."""
    code = payload.get("code", "ERR_UNKNOWN")
    lines = paragraph(f"error: {payload.get('error', '')}", 0)
    lines += [f"  code: {code}"]
    details = payload.get("details") or {}
    shown = _report(report(code), details) if details else None
    if shown is not None:
        lines += ["", shown, ""]
    elif details:
        lines += _details(details)
    suggestions = payload.get("suggestions") or []
    lines += [("  try: " if i == 0 else "       ") + tip for i, tip in enumerate(suggestions)]
    return "\n".join(lines)


def _report(view: Report | None, details: dict[str, Any]) -> str | None:
    """The details as their command's own view, for codes whose details are a report."""
    if view is None:
        return None
    try:  # the error's own `try:` lines follow: the report does not repeat them
        return view({k: v for k, v in details.items() if k != "suggestions"})
    except Exception:  # details of another shape: the generic rendering
        return None


def _details(details: dict[str, Any]) -> list[str]:
    """Each detail as `  key: value`; lists one item a line, long ones cut."""
    lines: list[str] = []
    for key, value in details.items():
        if value in (None, [], {}, ""):
            continue
        label = key.replace("_", " ")
        if isinstance(value, list):
            lines.append(f"  {label}:")
            lines += [f"    - {_one(v)}" for v in value[:MAX_LIST_ITEMS]]
            if len(value) > MAX_LIST_ITEMS:
                lines.append(f"    ... and {len(value) - MAX_LIST_ITEMS} more (--json for all)")
        else:
            lines.append(f"  {label}: {_one(value)}")
        if len(lines) >= MAX_DETAIL_LINES:
            lines = [*lines[:MAX_DETAIL_LINES], "  ... (--json for every detail)"]
            break
    return lines


def _one(value: Any) -> str:
    """One value on one line: a mapping as `key value, ...`."""
    if isinstance(value, dict):
        text = ", ".join(f"{k}: {_scalar(v)}" for k, v in value.items() if v not in (None, ""))
    else:
        text = _scalar(value)
    return clip(text, WIDTH - 6)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
