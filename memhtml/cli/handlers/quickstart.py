"""Handler for the quickstart demo."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation
from memhtml.cli.text import clip, mmr_note, score_ranks


def quickstart(
    inv: Invocation, embedder: str | None = None, seed: int = 7, keep: bool = False
) -> dict[str, Any]:
    """Generate, index and search the demo corpus (never the user's own store)."""
    from memhtml.eval.quickstart import run_quickstart

    return run_quickstart(inv.repo, embedder=embedder, seed=seed, keep=keep)


def human_quickstart(data: dict[str, Any]) -> str:
    """The report as text for a person at a terminal."""
    where = data["root"] if data["kept"] else f"a temporary store (deleted: {data['root']})"
    lines = [
        f"memhtml quickstart: {data['memories']} memories in {where}",
        f"indexed with {data['embedder'] or 'no embedder (lexical only)'}"
        f" in {data['index_seconds']} s",
        "",
    ]
    reordered = False
    for answer in data["searches"]:
        flag = "  (degraded: lexical only)" if answer["degraded"] else ""
        lines.append(f'search "{answer["query"]}"{flag}')
        ranks = score_ranks([h["score"] for h in answer["hits"]])
        for i, (hit, by_score) in enumerate(zip(answer["hits"], ranks, strict=True), start=1):
            moved = f" (score #{by_score})" if by_score is not None else ""
            lines.append(f"  {i}. {clip(hit['gist'], 96)}")
            lines.append(f"     {hit['path']}  score {hit['score']}{moved}")
        reordered = reordered or any(r is not None for r in ranks)
        lines.append("")
    if reordered:
        lines.append(mmr_note(None))
    lines.append("next: " + " ; ".join(data["next"]))
    return "\n".join(lines)
