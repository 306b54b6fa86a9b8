"""The value types of the file format: what a parse yields and what a render takes.

Everything here is a frozen dataclass so a parsed memory can be shared, hashed
and compared without copying. Typed convenience properties read the scalar
metas lazily; since `metas` only ever holds values that passed validation, the
conversions in them cannot fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from memhtml.contracts.errors import InvalidPathError
from memhtml.contracts.paths import href_to_path, memory_path


@dataclass(frozen=True)
class Issue:
    """One finding of validation: a violation (the file is refused) or a warning."""

    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        """The issue as a JSON-ready mapping (used in error details and envelopes)."""
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Link:
    """An authored edge: `<link rel="memhtml-caused-by" href="/areas/x.html">`."""

    rel: str  # underscore name, e.g. "caused_by"
    href: str  # as written, e.g. "/areas/x.html"
    path: str  # root-relative memory path, e.g. "areas/x.html"


@dataclass(frozen=True)
class Facet:
    """A `<dt>`/`<dd>` pair; `numeric` comes from a `<data value>` inside the `<dd>`."""

    name: str
    value: str
    numeric: float | None = None


@dataclass(frozen=True)
class Citation:
    """A `<cite>` (url None) or a `<q cite="url">` (text of the quotation)."""

    text: str
    url: str | None = None


@dataclass(frozen=True)
class HeadItem:
    """One `<meta>` or `<link>` of the head, as the merge driver sees it.

    `key` identifies the item across versions of a file: the meta name for a
    scalar meta, `name=value` for a repeatable one, `rel href` for a link.
    `line` is the raw physical line holding the tag, without its terminator.
    """

    kind: Literal["meta", "link"]
    key: str
    value: str
    line: str


def as_memory_path(value: str) -> str | None:
    """A memory path from an href ('/areas/x.html') or a bare path; None when it is neither."""
    try:
        return href_to_path(value) if value.startswith("/") else memory_path(value)
    except InvalidPathError:
        return None


@dataclass(frozen=True)
class MemoryDocument:
    """A parsed memory file. `parse_memory` always returns one, valid or not."""

    title: str = ""
    memory_type: str | None = None
    status: str | None = None
    created: str | None = None
    updated: str | None = None
    metas: dict[str, str] = field(default_factory=dict)
    entities: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    gist: str = ""
    event_at: str | None = None
    facets: tuple[Facet, ...] = ()
    citations: tuple[Citation, ...] = ()
    concepts: tuple[str, ...] = ()
    code_langs: tuple[str, ...] = ()
    summaries: tuple[str, ...] = ()
    details_text: tuple[str, ...] = ()
    asides: tuple[str, ...] = ()
    body_text: str = ""
    article_html: str = ""
    content_hash: str = ""
    violations: tuple[Issue, ...] = ()
    warnings: tuple[Issue, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the file has no violations (warnings do not count)."""
        return not self.violations

    def _meta(self, name: str) -> str | None:
        return self.metas.get(name)

    @property
    def indexed_entities(self) -> tuple[tuple[str, str], ...]:
        """Head entities, then a `concept` per `<dfn>` and a `lang` per `<code data-lang>`."""
        derived = [("concept", c) for c in self.concepts] + [
            ("lang", lang) for lang in self.code_langs
        ]
        return tuple(dict.fromkeys([*self.entities, *derived]))

    @property
    def confidence(self) -> float | None:
        """`memhtml-confidence` as a float in 0..1."""
        raw = self._meta("memhtml-confidence")
        return float(raw) if raw is not None else None

    @property
    def importance(self) -> int | None:
        """`memhtml-importance` as an integer in 1..10."""
        raw = self._meta("memhtml-importance")
        return int(float(raw)) if raw is not None else None

    @property
    def task_status(self) -> str | None:
        """`memhtml-task-status` (todo, doing, blocked, done) on a task."""
        return self._meta("memhtml-task-status")

    @property
    def due(self) -> str | None:
        """`memhtml-due`, a strict datetime."""
        return self._meta("memhtml-due")

    @property
    def valid_from(self) -> str | None:
        """`memhtml-valid-from`, a strict datetime."""
        return self._meta("memhtml-valid-from")

    @property
    def valid_until(self) -> str | None:
        """`memhtml-valid-until`, a strict datetime."""
        return self._meta("memhtml-valid-until")

    @property
    def archived_at(self) -> str | None:
        """`memhtml-archived`, a strict datetime."""
        return self._meta("memhtml-archived")

    @property
    def superseded_by(self) -> str | None:
        """The memory path (not the href) named by `memhtml-superseded-by`."""
        raw = self._meta("memhtml-superseded-by")
        return as_memory_path(raw) if raw is not None else None

    @property
    def author(self) -> str | None:
        """`memhtml-author`."""
        return self._meta("memhtml-author")

    @property
    def session_id(self) -> str | None:
        """`memhtml-session`: the agent session that wrote the memory."""
        return self._meta("memhtml-session")

    @property
    def prompt_id(self) -> str | None:
        """`memhtml-prompt`."""
        return self._meta("memhtml-prompt")

    @property
    def turn_uuid(self) -> str | None:
        """`memhtml-turn`."""
        return self._meta("memhtml-turn")

    @property
    def reprieves(self) -> int | None:
        """`memhtml-reprieves`: how many times retention triage spared the memory."""
        raw = self._meta("memhtml-reprieves")
        return int(float(raw)) if raw is not None else None

    @property
    def needs_revision(self) -> bool:
        """`memhtml-needs-revision` is true (absent means false)."""
        raw = self._meta("memhtml-needs-revision")
        return raw is not None and raw.lower() in ("true", "1", "yes")


@dataclass(frozen=True)
class NewMemory:
    """What `render_memory` turns into a complete file.

    Either `claim` (+ plain-text `body` paragraphs) or caller-owned
    `article_html` (the inner HTML of `<article>`), never both. `metas` holds
    optional scalar metas by full name; `links` holds (rel, path) pairs.
    """

    title: str
    memory_type: str
    created: str
    updated: str
    claim: str | None = None
    body: tuple[str, ...] = ()
    article_html: str | None = None
    status: str = "active"
    metas: Mapping[str, str] = field(default_factory=dict)
    entities: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    event_at: str | None = None
    include_content_hash: bool = True
