"""Handlers for the state group: thin calls into memhtml.ops.state_io."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation


def export(inv: Invocation) -> dict[str, Any]:
    """Write the sidecars whose rows changed, as one commit."""
    from memhtml.ops.state_io import export_state

    return export_state(inv.corpus())


def import_(inv: Invocation, file: str | None = None) -> dict[str, Any]:
    """Merge a sidecar into the state plane."""
    from memhtml.ops.state_io import import_state

    return import_state(inv.corpus(), file)
