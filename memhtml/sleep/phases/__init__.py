"""One module per phase; each defines `PHASE`, an object satisfying `memhtml.sleep.phase.Phase`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from memhtml.sleep.phase import PHASE_ORDER

if TYPE_CHECKING:
    from memhtml.sleep.night import Registry
    from memhtml.sleep.phase import Phase


def module_name(phase: str) -> str:
    """`dedup-merge` -> `memhtml.sleep.phases.dedup_merge`."""
    return f"{__name__}.{phase.replace('-', '_')}"


def load(phase: str) -> Phase:
    """The phase object by name (imported on first use)."""
    if phase not in PHASE_ORDER:
        raise KeyError(phase)
    found: Phase = importlib.import_module(module_name(phase)).PHASE
    return found


def all_phases() -> list[Phase]:
    """Every phase, in the run order."""
    return [load(name) for name in PHASE_ORDER]


def load_phase(name: str, registry: Registry | None) -> Phase | None:
    """The phase object (a registry entry first), or None when its module is not installed."""
    if registry is not None and name in registry:
        return registry[name]
    try:
        return load(name)
    except (ImportError, AttributeError):
        return None
