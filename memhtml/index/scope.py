"""The scope filter every ranking arm shares: one predicate, applied identically.

Default scope: active (not archived) memories, tasks excluded. Filters narrow
it; `include_archived` and `as_of` widen it (as_of admits superseded facts
that were valid at that moment).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memhtml.contracts.dates import parse_datetime_input
from memhtml.contracts.errors import InputTooLargeError, InvalidFlagError, InvalidMemoryError
from memhtml.contracts.limits import MAX_FILTER_VALUES, too_many_message
from memhtml.contracts.vocab import MEMORY_TYPES


@dataclass(frozen=True)
class Scope:
    """Which memories a query may return."""

    types: tuple[str, ...] = ()
    workspace: str | None = None
    tags: tuple[str, ...] = ()
    entity: str | None = None
    include_archived: bool = False
    as_of: str | None = None
    facets: tuple[tuple[str, str], ...] = ()
    exclude_paths: tuple[str, ...] = field(default=())

    @classmethod
    def build(
        cls,
        *,
        types: Sequence[str] | str | None = None,
        workspace: str | None = None,
        tags: Sequence[str] | str | None = None,
        entity: str | None = None,
        include_archived: bool = False,
        as_of: str | None = None,
        facets: Sequence[str] | None = None,
    ) -> Scope:
        """Validate raw filter values into a Scope (ERR_INPUT_TOO_LARGE past MAX_FILTER_VALUES)."""
        type_list = (types,) if isinstance(types, str) else tuple(types or ())
        tag_list = (tags,) if isinstance(tags, str) else tuple(tags or ())
        facet_list = (facets,) if isinstance(facets, str) else tuple(facets or ())
        for name, given in (("type", type_list), ("tag", tag_list), ("facet", facet_list)):
            if len(given) > MAX_FILTER_VALUES:
                raise InputTooLargeError(
                    too_many_message(name, len(given), MAX_FILTER_VALUES),
                    details={"field": name, "limit": MAX_FILTER_VALUES, "count": len(given)},
                )
        for t in type_list:
            if t not in MEMORY_TYPES:
                raise InvalidFlagError(f"unknown memory type {t!r}")
        as_of_value = None
        if as_of:
            try:
                as_of_value = parse_datetime_input(as_of, field="as_of")
            except InvalidMemoryError as exc:
                raise InvalidFlagError(exc.message, suggestions=exc.suggestions) from exc
            if len(as_of_value) == 10:  # a date means the whole of that day
                as_of_value += "T23:59:59Z"
        facet_pairs: list[tuple[str, str]] = []
        for raw in facet_list:
            name, sep, value = raw.partition("=")
            if not sep or not name.strip():
                raise InvalidFlagError(f"facet filter {raw!r} is not name=value")
            facet_pairs.append((name.strip(), value.strip()))
        return cls(
            types=type_list,
            workspace=workspace or None,
            tags=tuple(t for t in tag_list if t),
            entity=(entity or "").strip() or None,
            include_archived=include_archived,
            as_of=as_of_value,
            facets=tuple(facet_pairs),
        )

    def sql(self, alias: str = "f") -> tuple[str, dict[str, Any]]:
        """A WHERE fragment over `files AS alias` with named parameters (:sc_0, ...)."""
        clauses: list[str] = []
        values: list[Any] = []
        if self.as_of is not None:
            clauses.append(
                f"coalesce({alias}.valid_from, {alias}.event_at, {alias}.created_at) <= ?"
                f" AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ?)"
            )
            values += [self.as_of, self.as_of]
        elif not self.include_archived:
            clauses.append(f"{alias}.archived = 0")
        if self.types:
            clauses.append(f"{alias}.memory_type IN ({','.join('?' for _ in self.types)})")
            values += list(self.types)
        else:
            clauses.append(f"{alias}.memory_type <> 'task'")
        if self.workspace:
            clauses.append(f"{alias}.workspace = ?")
            values.append(self.workspace)
        for tag in self.tags:
            clauses.append(
                f"EXISTS (SELECT 1 FROM file_tags t WHERE t.path = {alias}.path AND t.tag = ?)"
            )
            values.append(tag)
        if self.entity:
            etype, sep, name = self.entity.partition(":")
            if sep and name:
                clauses.append(
                    "EXISTS (SELECT 1 FROM file_entities e WHERE e.path = "
                    f"{alias}.path AND lower(e.entity_type) = lower(?)"
                    " AND lower(e.entity_name) = lower(?))"
                )
                values += [etype.strip(), name.strip()]
            else:
                clauses.append(
                    "EXISTS (SELECT 1 FROM file_entities e WHERE e.path = "
                    f"{alias}.path AND lower(e.entity_name) = lower(?))"
                )
                values.append(self.entity)
        for name, value in self.facets:
            clauses.append(
                "EXISTS (SELECT 1 FROM file_facets x WHERE x.path = "
                f"{alias}.path AND lower(x.name) = lower(?) AND lower(x.value) = lower(?))"
            )
            values += [name, value]
        text = " AND ".join(clauses) if clauses else "1"
        names = iter(range(len(values)))
        text = re.sub(r"\?", lambda _: f":sc_{next(names)}", text)
        return text, {f"sc_{i}": v for i, v in enumerate(values)}

    @property
    def is_default(self) -> bool:
        """True for the default scope (active, non-task, no filters)."""
        return self == Scope()
