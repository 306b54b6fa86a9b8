"""Text for a person: gists cut at a word with an ellipsis, and MMR reordering explained."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhtml.cli.handlers.quickstart import human_quickstart
from memhtml.cli.text import clip, score_ranks
from memhtml.cli.views.query import search as human_search

Term = Callable[..., tuple[int, str]]

LONG = (
    "When auth-gateway degraded after a config push that dropped the connection pool size,"
    " raising it back to forty restored service within minutes."
)


@pytest.mark.parametrize("width", [20, 37, 60, 96, 100])
def test_clip_cuts_at_a_word_boundary_with_an_ellipsis(width: int) -> None:
    out = clip(LONG, width)
    assert len(out) <= width and out.endswith("…")
    kept = out[:-1]
    assert LONG.startswith(kept)
    assert LONG[len(kept)] == " "  # the cut fell between words


def test_clip_leaves_short_text_alone_and_flattens_whitespace() -> None:
    assert clip("one  fact\nhere", 40) == "one fact here"
    assert clip("x" * 50, 10) == "x" * 9 + "…"  # one long word: cut inside it, still marked


def test_score_ranks_mark_only_hits_out_of_score_order() -> None:
    assert score_ranks([0.9, 0.8, 0.7]) == [None, None, None]
    assert score_ranks([0.9, 0.5, 0.7]) == [None, 3, 2]
    assert score_ranks([0.5, 0.5]) == [None, None]


def _hit(path: str, score: float, gist: str = "A short gist.") -> dict[str, Any]:
    return {"path": path, "score": score, "gist": gist}


def test_search_table_explains_non_monotonic_scores() -> None:
    data = {
        "hits": [
            _hit("areas/a.html", 0.07),
            _hit("areas/b.html", 0.04),
            _hit("areas/c.html", 0.05),
        ],
        "mmr_lambda": 0.7,
        "degraded": False,
    }
    text = human_search(data)
    lines = text.splitlines()
    assert "(score #3)" in lines[3] and "(score #2)" in lines[5]
    assert "(score #" not in lines[1]
    assert "MMR (lambda 0.7)" in text
    monotonic = human_search({**data, "hits": data["hits"][:2]})
    assert "(score #" not in monotonic and "MMR" not in monotonic


def test_search_table_clips_gists_at_words() -> None:
    text = human_search({"hits": [_hit("areas/a.html", 0.1, LONG)], "degraded": False})
    gist_line = text.splitlines()[2].strip()
    assert gist_line.endswith("…") and LONG.startswith(gist_line[:-1])
    assert LONG[len(gist_line) - 1] == " "


def test_quickstart_text_clips_and_explains() -> None:
    data = {
        "root": "/tmp/demo",
        "kept": False,
        "memories": 3,
        "embedder": "memhtml-fake-v1",
        "index_seconds": 0.1,
        "searches": [
            {
                "query": "pool",
                "degraded": False,
                "hits": [
                    _hit("areas/a.html", 0.3, LONG),
                    _hit("areas/b.html", 0.1),
                    _hit("c", 0.2),
                ],
            }
        ],
        "next": ["memhtml quickstart --keep"],
    }
    text = human_quickstart(data)
    assert "temporary store" in text
    first = next(line for line in text.splitlines() if line.startswith("  1. "))
    assert first.endswith("…") and LONG.startswith(first[5:-1])
    assert "(score #3)" in text and "(score #2)" in text and "MMR" in text


def test_search_on_a_terminal_prints_the_table(terminal: Term, store: Path) -> None:
    code, text = terminal("search", "alpha VIP")
    assert code == 0 and text.startswith(" #    score  path / gist")
    assert "areas/a.html" in text
