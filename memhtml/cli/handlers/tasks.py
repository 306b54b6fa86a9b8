"""Handlers for the task commands: add, status, list (each calls one Corpus method)."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation


def add(inv: Invocation, title: str, **params: Any) -> dict[str, Any]:
    """Write one task."""
    fields = {k: v for k, v in params.items() if v not in (None, [])}
    return inv.corpus().task_add(title, **fields)


def status(inv: Invocation, path: str, status: str) -> dict[str, Any]:
    """Set a task's status."""
    return inv.corpus().task_status(path, status)


def list_tasks(inv: Invocation, **params: Any) -> dict[str, Any]:
    """Open tasks, due first."""
    return inv.corpus().task_list(**params)
