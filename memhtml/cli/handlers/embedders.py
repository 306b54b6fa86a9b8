"""Handlers for the embedding-model commands: thin calls into memhtml.ops and memhtml.eval."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation


def migrate(
    inv: Invocation,
    *,
    to: str | None = None,
    resume: bool = False,
    abort: bool = False,
    status: bool = False,
    skip_gate: bool = False,
    keep_old: bool = False,
    drop_old: bool = False,
) -> dict[str, Any]:
    """Start, resume, report or abort a model migration."""
    from memhtml.eval.embedders import gate_verdict
    from memhtml.ops.migrate import migrate as run

    return run(
        inv.corpus(),
        to=to,
        resume=resume,
        abort=abort,
        status=status,
        skip_gate=skip_gate,
        keep_old=keep_old,
        drop_old=drop_old,
        gate=gate_verdict,
    )


def human_migrate(data: dict[str, Any]) -> str:
    """A summary for a person at a terminal."""
    from memhtml.eval.embedders import migration_text

    return migration_text(data)


def compare(
    inv: Invocation,
    a: str,
    b: str,
    *,
    data: str | None = None,
    conversations: int = 1,
    seed: int = 7,
    size: int = 300,
) -> dict[str, Any]:
    """Two embedders side by side."""
    from memhtml.eval.embedders import compare_embedders

    return compare_embedders(a, b, data=data, conversations=conversations, seed=seed, size=size)


def human_compare(data: dict[str, Any]) -> str:
    """The side-by-side table."""
    from memhtml.eval.embedders import comparison_table

    return comparison_table(data)
