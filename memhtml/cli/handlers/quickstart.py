"""Handler for the quickstart demo."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation


def quickstart(inv: Invocation, embedder: str | None = None, seed: int = 7) -> dict[str, Any]:
    """Generate, index and search the demo corpus."""
    from memhtml.eval.quickstart import run_quickstart

    return run_quickstart(inv.repo, embedder=embedder, seed=seed)


def human_quickstart(data: dict[str, Any]) -> str:
    """A readable report on a terminal."""
    from memhtml.eval.quickstart import render_quickstart

    return render_quickstart(data)
