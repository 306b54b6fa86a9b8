"""The closed vocabularies a corpus is written in.

These lists are the original memhtml's, in its order, so a corpus written by
one tool is readable by the other. They are append-only: renaming a value
breaks every corpus that already uses it.
"""

from __future__ import annotations

from typing import Final, Literal

MemoryType = Literal[
    "episodic",
    "semantic",
    "procedural",
    "agent_insight",
    "user_preference",
    "error_pattern",
    "verdict",
    "precedent",
    "arc",
    "task",
]
MEMORY_TYPES: Final[tuple[str, ...]] = (
    "episodic",
    "semantic",
    "procedural",
    "agent_insight",
    "user_preference",
    "error_pattern",
    "verdict",
    "precedent",
    "arc",
    "task",
)
# `arc` is minted by sleep only; every other type may be written by a caller.
WRITABLE_MEMORY_TYPES: Final[tuple[str, ...]] = tuple(t for t in MEMORY_TYPES if t != "arc")

STATUSES: Final[tuple[str, ...]] = ("active", "archived")
TASK_STATUSES: Final[tuple[str, ...]] = ("todo", "doing", "blocked", "done")
DEFAULT_TASK_STATUS: Final = "todo"

# PARA buckets: the four top-level folders a memory can live under.
PARA_BUCKETS: Final[tuple[str, ...]] = ("projects", "areas", "resources", "archive")
INBOX_DIR: Final = "areas/inbox"
ARCS_DIR: Final = "areas/arcs"
PEOPLE_DIR: Final = "resources/people"
TASKS_SUBDIR: Final = "tasks"
# The files `publish` generates (memhtml.html.listing: a listing per folder, the sitemap,
# the stylesheet) are never memories, wherever they sit; no title is ever slugged to one,
# and a new memory's hand-given path may not name one in any case.
GENERATED_NAMES: Final[frozenset[str]] = frozenset({"index.html", "sitemap.xml", "memhtml.css"})

# Edge classes and the rels each admits (underscore names; in a file the rel
# token is hyphenated and prefixed: rel="memhtml-caused-by").
EDGE_CLASSES: Final[dict[str, tuple[str, ...]]] = {
    "memory": (
        "supersedes",
        "contradicts",
        "caused_by",
        "leads_to",
        "part_of",
        "relates_to",
        "example_of",
        "supports",
        "laterally_related",
    ),
    "person": ("about_person", "authored_by"),
    "provenance": ("from_session",),
    "task": ("blocks", "subtask_of"),
}
EDGE_RELS: Final[tuple[str, ...]] = tuple(r for rels in EDGE_CLASSES.values() for r in rels)
REL_CLASS: Final[dict[str, str]] = {r: cls for cls, rels in EDGE_CLASSES.items() for r in rels}
MEMORY_RELS: Final[tuple[str, ...]] = EDGE_CLASSES["memory"]
EDGE_PROVENANCES: Final[tuple[str, ...]] = ("authored", "sleep")
LINK_REL_PREFIX: Final = "memhtml-"


def rel_token(rel: str) -> str:
    """The `<link rel>` token for an underscore rel name: caused_by -> memhtml-caused-by."""
    return LINK_REL_PREFIX + rel.replace("_", "-")


def rel_from_token(token: str) -> str | None:
    """The underscore rel name for a `<link rel>` token, or None when it is not one of ours."""
    if not token.startswith(LINK_REL_PREFIX):
        return None
    name = token[len(LINK_REL_PREFIX) :].replace("-", "_")
    return name if name in REL_CLASS else None


def normalize_rel(rel: str) -> str | None:
    """Accept `caused_by`, `caused-by` or `memhtml-caused-by`; None when unknown."""
    if rel.startswith(LINK_REL_PREFIX):
        return rel_from_token(rel)
    name = rel.replace("-", "_")
    return name if name in REL_CLASS else None


# Head metas. This is also the serializer's emission order: required first,
# then optional scalars (new ones append at the end of that block, for diff
# stability), then the three repeatable names.
REQUIRED_METAS: Final[tuple[str, ...]] = (
    "memhtml-type",
    "memhtml-status",
    "memhtml-created",
    "memhtml-updated",
)
OPTIONAL_SCALAR_METAS: Final[tuple[str, ...]] = (
    "memhtml-confidence",
    "memhtml-importance",
    "memhtml-content-hash",
    "memhtml-author",
    "memhtml-session",
    "memhtml-prompt",
    "memhtml-turn",
    "memhtml-valid-from",
    "memhtml-valid-until",
    "memhtml-reprieves",
    "memhtml-archived",
    "memhtml-superseded-by",
    "memhtml-needs-revision",
    "memhtml-task-status",
    "memhtml-due",
)
REPEATABLE_METAS: Final[tuple[str, ...]] = ("memhtml-entity", "memhtml-tag", "memhtml-alias")
META_ORDER: Final[tuple[str, ...]] = REQUIRED_METAS + OPTIONAL_SCALAR_METAS + REPEATABLE_METAS
SCALAR_METAS: Final[frozenset[str]] = frozenset(REQUIRED_METAS + OPTIONAL_SCALAR_METAS)
# Datetime-valued metas: a bad value is a violation, never a silent drop, since
# dropping e.g. valid-until would widen a validity window to "always".
DATETIME_METAS: Final[frozenset[str]] = frozenset(
    {
        "memhtml-created",
        "memhtml-updated",
        "memhtml-valid-from",
        "memhtml-valid-until",
        "memhtml-archived",
        "memhtml-due",
    }
)

# Retrieval defaults (weights per arm, RRF k), shared by SQL and the notebooks.
ARMS: Final[tuple[str, ...]] = ("fts", "vector", "recency", "salience")
# Measured, not inherited: the original's 1.0 / 1.0 / 0.5 / 0.4 at k = 60 gave
# LoCoMo evidence recall@10 64.5; these give 70.9 (both on the `context` unit,
# a turn with the previous one; docs/research.md) with the FactConsolidation
# and discrimination-gate targets still met (docs/design.md, section 10).
DEFAULT_WEIGHTS: Final[dict[str, float]] = {
    "fts": 1.5,
    "vector": 1.0,
    "recency": 0.25,
    "salience": 0.4,
}
DEFAULT_RRF_K: Final = 10
DEFAULT_MMR_LAMBDA: Final = 0.7
# A query that names a time ("in May 2023", "last week"): the fused candidates
# whose time falls inside it count as one more ranked list of this weight
# (memhtml.domain.temporal.focus_scored); 0 turns it off. docs/research.md has
# the measurement.
DEFAULT_TIME_WEIGHT: Final = 1.0

# Limits on what one memory may be.
MAX_MEMORY_BYTES: Final = 1_048_576
MAX_TITLE_CHARS: Final = 300
