"""Terminal views of the reads that rank or walk: search, recall, reinforce, neighbors,
resolve."""

from __future__ import annotations

from typing import Any, Final

from memhtml.cli.text import WIDTH, clip, mmr_note, paragraph, plural, score_ranks

ARM_ORDER: Final = ("fts", "vector", "recency", "salience", "time")
_INDENT: Final = " " * 13


def _arms_line(hit: dict[str, Any]) -> list[str]:
    """Under a hit with --explain: each arm's rank, weight and contribution, then adjustments."""
    arms = hit.get("arms")
    if arms is None:
        return []
    order = [a for a in ARM_ORDER if a in arms] + sorted(set(arms) - set(ARM_ORDER))
    parts = [
        f"{a} #{arms[a]['rank']} x{arms[a]['weight']:g} +{arms[a]['contribution']:.4f}"
        for a in order
    ]
    lines = _fill(parts) if parts else [_INDENT + "no arm ranked it"]
    moves = hit.get("adjustments") or {}
    if moves:
        lines.append(
            _INDENT
            + "then "
            + ", ".join(f"{k.replace('_', ' ')} {v:+.4f}" for k, v in moves.items())
        )
    return lines


def _fill(parts: list[str]) -> list[str]:
    """Parts two spaces apart under a hit, a new line where the next would pass the width."""
    lines = [_INDENT]
    for part in parts:
        if lines[-1].strip() and len(lines[-1]) + 2 + len(part) > WIDTH:
            lines.append(_INDENT)
        lines[-1] += ("  " if lines[-1].strip() else "") + part
    return lines


def search(data: dict[str, Any]) -> str:
    """A table: place, fused score, path, the gist on one line; with --explain, each arm's rank
    and contribution under each hit (`fts #1 x1.5 +0.1364`: rank 1, weight 1.5, adds 0.1364)."""
    hits = data["hits"]
    ranks = score_ranks([h["score"] for h in hits])
    lines = [f"{'#':>2}  {'score':>7}  path / gist"]
    explained = any("arms" in h for h in hits)
    for i, (hit, by_score) in enumerate(zip(hits, ranks, strict=True), start=1):
        moved = f"  (score #{by_score})" if by_score is not None else ""
        lines.append(f"{i:>2}  {hit['score']:.5f}  {hit['path']}{moved}")
        lines.append(f"{_INDENT}{clip(hit['gist'], 100)}")
        lines += _arms_line(hit)
    if any(r is not None for r in ranks):
        lines.append(mmr_note(data.get("mmr_lambda")))
    if explained and hits:
        weights = data.get("weights") or {}
        given = ", ".join(f"{a} {w:g}" for a, w in weights.items())
        lines.append(
            f"(each arm: #rank xweight +contribution = weight / (k + rank), k {data.get('k')};"
            f" weights {given})"
        )
    if data.get("degraded"):
        lines.append(f"(degraded: {data.get('degraded_reason')})")
    if when := data.get("time_interval"):
        lines.append(
            f"(lifted memories of {when['expression']!r}: {when['start']} up to {when['end']})"
        )
    if not hits:
        lines.append("(no hits)")
    return "\n".join(lines)


def _fold(fold: dict[str, Any], label: str) -> list[str]:
    lines: list[str] = []
    for item in fold.get("disclosed") or []:
        lines += ["", f"{item['title']}  ({item['path']}, {item.get('memory_type')})"]
        for block in (item.get("body") or "").split("\n"):
            lines += paragraph(block, 2)
    index = fold.get("index_lines") or []
    if index:
        lines += ["", f"also relevant, not quoted ({label}):"]
        lines += [
            f"  {i['path']}  {clip(i.get('gist') or i.get('title') or '', 70)}" for i in index
        ]
    return lines


def recall(data: dict[str, Any]) -> str:
    """The pack as it would be read: arcs, then memories, each quoted; the rest as pointers."""
    memories = data.get("memories") or {}
    arcs = data.get("arcs") or {}
    quoted = len(memories.get("disclosed") or []) + len(arcs.get("disclosed") or [])
    head = (
        f"recall {data.get('query')!r}: {plural(quoted, 'memory', 'memories')} quoted,"
        f" {data.get('spent_chars', 0):,} of {data.get('budget', 0):,} characters"
    )
    if data.get("truncated"):
        head += " (the budget cut the rest to pointers)"
    lines = [head]
    lines += _fold(arcs, "arcs")
    lines += _fold(memories, "over the budget")
    if data.get("degraded"):
        lines += ["", f"(degraded: {data.get('degraded_reason')})"]
    if quoted == 0 and not (memories.get("index_lines") or arcs.get("index_lines")):
        lines.append("nothing matched")
    return "\n".join(lines)


def reinforce(data: dict[str, Any]) -> str:
    """Which memories moved, which were cooling down, which do not exist."""
    moved = plural(len(data.get("bumped") or []), "memory", "memories")
    lines = [f"reinforced ({data.get('signal')}): {moved}"]
    lines += [f"  + {p}" for p in data.get("bumped") or []]
    cooled = data.get("cooled_down") or []
    if cooled:
        lines.append(f"  cooling down (reinforced in the last 15 minutes): {', '.join(cooled)}")
    missing = data.get("missing") or []
    if missing:
        lines.append(f"  no such memory: {', '.join(missing)}")
    return "\n".join(lines)


def neighbors(data: dict[str, Any]) -> str:
    """The memories around the center, by hop, with the relation and its direction."""
    nodes = data.get("nodes") or []
    lines = [
        f"{data.get('center')}: {plural(len(nodes), 'neighbor')} within {data.get('depth')} hop(s)"
    ]
    for n in nodes:
        arrow = "->" if n.get("direction") == "out" else "<-"
        gone = " (archived)" if n.get("archived") else ""
        lines.append(f"  hop {n['hop']}  {arrow} {n['rel']:<17} {n['path']}{gone}")
        lines.append(f"{'':12}{clip(n.get('gist') or n.get('title') or '', 80)}")
    return "\n".join(lines)


def resolve(data: dict[str, Any]) -> str:
    """The chain from the path as cited to where the memory lives now."""
    chain = data.get("chain") or []
    if data.get("live") and not chain:
        return f"{data['path']} is live: it is the memory itself"
    lines = [data["path"]]
    for hop in chain:
        how = {"archived": "archived to", "superseded": "superseded by"}.get(hop["via"], hop["via"])
        lines.append(f"  {how} {hop['to']}")
    if data.get("live"):
        lines.append(f"lives at {data['resolved']}")
    elif data.get("resolved"):
        lines.append(f"ends at {data['resolved']}, which is archived: no live memory follows it")
    else:
        lines.append("archived, and nothing replaced it")
    return "\n".join(lines)
