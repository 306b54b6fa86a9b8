"""Text for a person at a terminal: clipping, and help pages read from the manifest entries.

Only the terminal renderings use this; an envelope never carries clipped text.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any, Final

from memhtml.surface.spec import describe_range

ELLIPSIS: Final = "…"
WIDTH: Final = 100
_METAVAR: Final = {"str": "TEXT", "int": "N", "float": "NUM", "bool": ""}


def clip(text: str, width: int) -> str:
    """`text` on one line in at most `width` characters, cut at a word boundary with `…`.

    A single word longer than the width is cut inside it (still with `…`).
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    room = max(width - len(ELLIPSIS), 1)
    cut = flat[: room + 1]
    space = cut.rfind(" ")
    head = cut[:space] if space > 0 else flat[:room]
    return head.rstrip(" ,;:-—") + ELLIPSIS


def _param_left(p: dict[str, Any]) -> str:
    if p["kind"] == "argument":
        return f"<{p['name']}>"
    meta = p.get("metavar") or _METAVAR[p["type"]]
    return f"{p['name']} {meta}".rstrip()


def _param_right(p: dict[str, Any]) -> str:
    notes: list[str] = []
    if p["required"]:
        notes.append("required")
    if p["repeatable"] and "repeatable" not in p["help"]:
        notes.append("repeatable")
    if "max_count" in p:
        notes.append(f"at most {p['max_count']:,} times")
    if "default" in p and p["type"] != "bool":
        notes.append(f"default {p['default']}")
    bounds = describe_range(p.get("minimum"), p.get("maximum"))
    if bounds:
        notes.append(bounds)
    if "choices" in p:
        notes.append("one of: " + ", ".join(p["choices"]))
    return p["help"] + (f" [{'; '.join(notes)}]" if notes else "")


def _rows(pairs: Sequence[tuple[str, str]], indent: int = 2) -> list[str]:
    if not pairs:
        return []
    left = min(max(len(a) for a, _ in pairs), 26) + 2
    lines = []
    for a, b in pairs:
        pad = " " * indent
        wrapped = textwrap.wrap(b, WIDTH - indent - left) or [""]
        if len(a) >= left:
            lines.append(pad + a)
            lines += [pad + " " * left + w for w in wrapped]
        else:
            lines.append(pad + a.ljust(left) + wrapped[0])
            lines += [pad + " " * left + w for w in wrapped[1:]]
    return lines


GROUP_ROWS = 2  # a command group with more commands shows as one row in the overview


def overview(version: str, commands: Sequence[dict[str, Any]], globals_: Sequence[Any]) -> str:
    """`memhtml` / `memhtml --help` on a terminal: what the tool is and its commands.

    A group of more than two commands is one row (`memhtml help <group>` lists
    them), so the overview stays one screen as groups grow.
    """
    sizes: dict[str, int] = {}
    for c in commands:
        if " " in c["name"]:
            first = c["name"].split()[0]
            sizes[first] = sizes.get(first, 0) + 1
    names: list[tuple[str, str]] = []
    for c in commands:
        first = c["name"].split()[0]
        if " " not in c["name"] or sizes[first] <= GROUP_ROWS:
            names.append((c["name"], c["summary"]))
        elif not any(n == f"{first} ..." for n, _ in names):
            subs = ", ".join(
                x["name"].split()[1] for x in commands if x["name"].split()[0] == first
            )
            names.append((f"{first} ...", f"{subs} (memhtml help {first})"))
    flags = [(_param_left(p.describe()), p.help) for p in globals_]
    usage = " ".join(f"[{_param_left(p.describe())}]" for p in globals_)
    return "\n".join(
        [
            f"memhtml {version}: long-term memory for agents, as git + semantic HTML + SQLite",
            "",
            f"usage: memhtml {usage} <command> [arguments]",
            "",
            "commands:",
            *_rows(names),
            "",
            "global flags (before or after the command):",
            *_rows(flags),
            "",
            "memhtml help <command>    one command in detail (same as: memhtml <command> --help)",
            "memhtml manifest          the whole contract as JSON, for programs and agents",
            "Off a terminal, or with --json, every command prints one JSON envelope.",
        ]
    )


def group(commands: Sequence[dict[str, Any]]) -> str:
    """`memhtml help index` on a terminal: the commands of one group."""
    return "\n".join(["commands:", *_rows([(c["name"], c["summary"]) for c in commands])])


def command_page(c: dict[str, Any], globals_: Sequence[Any]) -> str:
    """`memhtml help search` (or `memhtml search --help`) on a terminal."""
    args = [p for p in c["params"] if p["kind"] == "argument"]
    flags = [p for p in c["params"] if p["kind"] == "flag"]
    usage = " ".join(
        [f"memhtml {c['name']}"]
        + [f"<{p['name']}>{'...' if p['repeatable'] else ''}" for p in args]
        + (["[flags]"] if flags else [])
    )
    lines = [f"usage: {usage}", "", *textwrap.wrap(c["summary"], WIDTH)]
    if c.get("details"):
        lines += ["", *textwrap.wrap(c["details"], WIDTH)]
    if args:
        lines += ["", "arguments:", *_rows([(_param_left(p), _param_right(p)) for p in args])]
    if flags:
        lines += ["", "flags:", *_rows([(_param_left(p), _param_right(p)) for p in flags])]
    lines += ["", "global flags: " + ", ".join(_param_left(p.describe()) for p in globals_)]
    needs = "" if c["needs_repo"] else "  (works without a repository)"
    lines += [f"answers: {c['response_type']}{needs}"]
    if c["errors"]:
        lines += textwrap.wrap("errors: " + ", ".join(c["errors"]), WIDTH)
    if c["examples"]:
        lines += ["", "examples:", *(f"  {e}" for e in c["examples"])]
    return "\n".join(lines)


def score_ranks(scores: Sequence[float]) -> list[int | None]:
    """Per listed hit, its rank by score where that differs from its place, else None.

    MMR reorders hits to trade relevance against redundancy, so a listing's
    scores need not fall monotonically; this says where each hit would sit by
    score alone (ties keep their listed order).
    """
    by_score = sorted(range(len(scores)), key=lambda i: -scores[i])
    rank = {i: r for r, i in enumerate(by_score, start=1)}
    return [rank[i] if rank[i] != i + 1 else None for i in range(len(scores))]


def mmr_note(mmr_lambda: float | None) -> str:
    """The footnote for a listing whose order is not its score order."""
    setting = f" (lambda {mmr_lambda})" if mmr_lambda is not None else ""
    return (
        f"(score #N) = place by score alone; MMR{setting} reorders hits to repeat each other less"
    )


# -- pieces the terminal views share (memhtml.cli.views) -------------------------------


def when(instant: str | None) -> str:
    """An ISO instant as a person reads it (`2026-03-01 10:00 UTC`); a date stays a date."""
    if not instant:
        return "-"
    if len(instant) <= 10:
        return instant
    day, _, rest = instant.partition("T")
    return f"{day} {rest[:5]} UTC" if rest.endswith("Z") else f"{day} {rest[:5]}"


def sha(value: str | None) -> str:
    """A commit as git shows it short (12 characters); `-` for none."""
    return value[:12] if value else "-"


def plural(count: int, one: str, many: str | None = None) -> str:
    """`1 memory`, `3 memories`."""
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def paragraph(text: str, indent: int = 0, width: int = WIDTH) -> list[str]:
    """`text` wrapped to `width`, each line indented."""
    pad = " " * indent
    return textwrap.wrap(
        " ".join(text.split()), width - indent, initial_indent=pad, subsequent_indent=pad
    ) or [pad.rstrip()]


def pairs(items: Sequence[tuple[str, str]], indent: int = 2) -> list[str]:
    """`label  value` rows, the values lined up and wrapped."""
    return _rows(items, indent)


def listed(items: Sequence[str], *, limit: int = 20, indent: int = 2, more: str = "") -> list[str]:
    """One line per item, at most `limit`, then how many more (and where to see them)."""
    pad = " " * indent
    lines = [pad + item for item in items[:limit]]
    rest = len(items) - limit
    if rest > 0:
        lines.append(f"{pad}... and {rest:,} more{f' ({more})' if more else ''}")
    return lines


def columns(rows: Sequence[Sequence[str]], indent: int = 0) -> list[str]:
    """Rows as left-aligned columns (the last one free), two spaces apart."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    pad = " " * indent
    return [
        pad + "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
        for r in rows
    ]
