"""Dependency-free pictures for the notebooks: heatmap and bar tables as HTML.

No plotting library is required: a heatmap is an HTML table whose cells are
shaded by value, a bar chart a table of proportional bars. marimo shows them
with `mo.Html(...)`; anywhere else they are plain strings.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any


def _shade(value: float | None, lo: float, hi: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "#eeeeee"
    t = 0.0 if hi <= lo else (value - lo) / (hi - lo)
    t = min(1.0, max(0.0, t))
    # white -> blue
    r = round(255 - 200 * t)
    g = round(255 - 140 * t)
    return f"rgb({r},{g},255)"


def _fmt(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return html.escape(str(value))


def heatmap_html(
    cells: Mapping[tuple[Any, Any], float | None],
    rows: Sequence[Any],
    cols: Sequence[Any],
    *,
    title: str = "",
    row_label: str = "",
    col_label: str = "",
    digits: int = 3,
) -> str:
    """A shaded table: `cells[(row, col)]` -> value; missing cells are grey."""
    present = [
        v for v in cells.values() if v is not None and not (isinstance(v, float) and math.isnan(v))
    ]
    lo, hi = (min(present), max(present)) if present else (0.0, 1.0)
    head = "".join(f"<th>{_fmt(c, digits)}</th>" for c in cols)
    body = []
    for r in rows:
        tds = "".join(
            f'<td style="background:{_shade(cells.get((r, c)), lo, hi)};'
            f'text-align:right;padding:2px 6px">{_fmt(cells.get((r, c)), digits)}</td>'
            for c in cols
        )
        body.append(f"<tr><th>{_fmt(r, digits)}</th>{tds}</tr>")
    caption = f"<caption>{html.escape(title)}</caption>" if title else ""
    corner = html.escape(f"{row_label} \\ {col_label}" if row_label or col_label else "")
    return (
        f'<table style="border-collapse:collapse">{caption}'
        f"<tr><th>{corner}</th>{head}</tr>{''.join(body)}</table>"
    )


def bars_html(
    values: Sequence[tuple[str, float | None]],
    *,
    title: str = "",
    scale: float | None = None,
    digits: int = 1,
    width_px: int = 320,
) -> str:
    """Horizontal bars, one per (label, value); `scale` is the value of a full bar."""
    present = [v for _, v in values if v is not None]
    top = scale if scale is not None else (max(present) if present else 1.0)
    top = top or 1.0
    rows = []
    for label, v in values:
        w = 0 if v is None else round(width_px * max(0.0, v) / top)
        rows.append(
            f"<tr><td style='padding-right:8px'>{html.escape(label)}</td>"
            f"<td><div style='background:#5577ff;height:12px;width:{w}px'></div></td>"
            f"<td style='text-align:right;padding-left:6px'>{_fmt(v, digits)}</td></tr>"
        )
    caption = f"<caption>{html.escape(title)}</caption>" if title else ""
    return f"<table>{caption}{''.join(rows)}</table>"


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 3) -> str:
    """A plain aligned table (for logs and script runs)."""
    cells = [[_plain(v, digits) for v in r] for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def _plain(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


__all__ = ["bars_html", "heatmap_html", "text_table"]
