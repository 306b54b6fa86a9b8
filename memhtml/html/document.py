"""The value types of the file format: what a parse yields and what a render takes.

Every type here is a frozen record, so a parsed memory can be shared, hashed
and compared without copying. Typed convenience properties read the scalar
metas lazily; since `metas` only ever holds values that passed validation, the
conversions in them cannot fail.

The records behave as `@dataclass(frozen=True)` classes would (the same
constructor, equality and hash over the fields in order, repr, pickling and
`FrozenInstanceError` on assignment), but their methods are written out: a
dataclass generates its methods with `exec` at import, a cost every cold CLI
start would pay for these seven classes (docs/benchmarks.md, "Costs behind the
code"). `replace` stands in for
`dataclasses.replace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import Any, ClassVar, Literal, NoReturn, Self

from memhtml.contracts.errors import InvalidPathError
from memhtml.contracts.paths import href_to_path, memory_path

# The default of a field whose default is a fresh empty dict (dataclasses' default_factory).
_FRESH: Any = object()


class _Record:
    """Frozen value-object behaviour over `_fields` (set by each subclass, in order)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]]
    _values: ClassVar[Any]  # attrgetter(*_fields): the field values as one tuple

    def __init_subclass__(cls) -> None:
        cls._values = attrgetter(*cls._fields)
        setattr(cls, "__match_args__", cls._fields)  # noqa: B010 (class attribute, as dataclasses set it)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._values(self) == self._values(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values(self))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{self.__class__.__qualname__}({inner})"

    def __setattr__(self, name: str, value: object) -> NoReturn:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` applied to its fields (what `dataclasses.replace` does)."""
        return self.__class__(**{**{n: getattr(self, n) for n in self._fields}, **changes})


class Issue(_Record):
    """One finding of validation: a violation (the file is refused) or a warning."""

    _fields = ("code", "message")
    code: str
    message: str

    def __init__(self, code: str, message: str) -> None:
        self.__dict__.update(code=code, message=message)

    def as_dict(self) -> dict[str, str]:
        """The issue as a JSON-ready mapping (used in error details and envelopes)."""
        return {"code": self.code, "message": self.message}


class Link(_Record):
    """An authored edge: `<link rel="memhtml-caused-by" href="/areas/x.html">`."""

    _fields = ("rel", "href", "path")
    rel: str  # underscore name, e.g. "caused_by"
    href: str  # as written, e.g. "/areas/x.html"
    path: str  # root-relative memory path, e.g. "areas/x.html"

    def __init__(self, rel: str, href: str, path: str) -> None:
        self.__dict__.update(rel=rel, href=href, path=path)


class Facet(_Record):
    """A `<dt>`/`<dd>` pair; `numeric` comes from a `<data value>` inside the `<dd>`."""

    _fields = ("name", "value", "numeric")
    name: str
    value: str
    numeric: float | None = None

    def __init__(self, name: str, value: str, numeric: float | None = None) -> None:
        self.__dict__.update(name=name, value=value, numeric=numeric)


class Citation(_Record):
    """A `<cite>` (url None) or a `<q cite="url">` (text of the quotation)."""

    _fields = ("text", "url")
    text: str
    url: str | None = None

    def __init__(self, text: str, url: str | None = None) -> None:
        self.__dict__.update(text=text, url=url)


class HeadItem(_Record):
    """One `<meta>` or `<link>` of the head, as the merge driver sees it.

    `key` identifies the item across versions of a file: the meta name for a
    scalar meta, `name=value` for a repeatable one, `rel href` for a link.
    `line` is the raw physical line holding the tag, without its terminator.
    """

    _fields = ("kind", "key", "value", "line")
    kind: Literal["meta", "link"]
    key: str
    value: str
    line: str

    def __init__(self, kind: Literal["meta", "link"], key: str, value: str, line: str) -> None:
        self.__dict__.update(kind=kind, key=key, value=value, line=line)


def as_memory_path(value: str) -> str | None:
    """A memory path from an href ('/areas/x.html') or a bare path; None when it is neither."""
    try:
        return href_to_path(value) if value.startswith("/") else memory_path(value)
    except InvalidPathError:
        return None


_DOCUMENT_FIELDS: tuple[str, ...] = (
    "title",
    "memory_type",
    "status",
    "created",
    "updated",
    "metas",
    "entities",
    "tags",
    "aliases",
    "links",
    "gist",
    "event_at",
    "facets",
    "citations",
    "concepts",
    "code_langs",
    "summaries",
    "details_text",
    "asides",
    "body_text",
    "article_html",
    "content_hash",
    "violations",
    "warnings",
)


class MemoryDocument(_Record):
    """A parsed memory file. `parse_memory` always returns one, valid or not."""

    _fields = _DOCUMENT_FIELDS
    title: str = ""
    memory_type: str | None = None
    status: str | None = None
    created: str | None = None
    updated: str | None = None
    metas: dict[str, str]  # default: a fresh {}
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

    def __init__(  # noqa: PLR0917 (the dataclass signature: positional fields)
        self,
        title: str = "",
        memory_type: str | None = None,
        status: str | None = None,
        created: str | None = None,
        updated: str | None = None,
        metas: dict[str, str] = _FRESH,
        entities: tuple[tuple[str, str], ...] = (),
        tags: tuple[str, ...] = (),
        aliases: tuple[str, ...] = (),
        links: tuple[Link, ...] = (),
        gist: str = "",
        event_at: str | None = None,
        facets: tuple[Facet, ...] = (),
        citations: tuple[Citation, ...] = (),
        concepts: tuple[str, ...] = (),
        code_langs: tuple[str, ...] = (),
        summaries: tuple[str, ...] = (),
        details_text: tuple[str, ...] = (),
        asides: tuple[str, ...] = (),
        body_text: str = "",
        article_html: str = "",
        content_hash: str = "",
        violations: tuple[Issue, ...] = (),
        warnings: tuple[Issue, ...] = (),
    ) -> None:
        self.__dict__.update(
            title=title,
            memory_type=memory_type,
            status=status,
            created=created,
            updated=updated,
            metas={} if metas is _FRESH else metas,
            entities=entities,
            tags=tags,
            aliases=aliases,
            links=links,
            gist=gist,
            event_at=event_at,
            facets=facets,
            citations=citations,
            concepts=concepts,
            code_langs=code_langs,
            summaries=summaries,
            details_text=details_text,
            asides=asides,
            body_text=body_text,
            article_html=article_html,
            content_hash=content_hash,
            violations=violations,
            warnings=warnings,
        )

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


class NewMemory(_Record):
    """What `render_memory` turns into a complete file.

    Either `claim` (+ plain-text `body` paragraphs) or caller-owned
    `article_html` (the inner HTML of `<article>`), never both. `metas` holds
    optional scalar metas by full name; `links` holds (rel, path) pairs.
    """

    _fields = (
        "title",
        "memory_type",
        "created",
        "updated",
        "claim",
        "body",
        "article_html",
        "status",
        "metas",
        "entities",
        "tags",
        "aliases",
        "links",
        "event_at",
        "include_content_hash",
    )
    title: str
    memory_type: str
    created: str
    updated: str
    claim: str | None = None
    body: tuple[str, ...] = ()
    article_html: str | None = None
    status: str = "active"
    metas: Mapping[str, str]  # default: a fresh {}
    entities: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    event_at: str | None = None
    include_content_hash: bool = True

    def __init__(  # noqa: PLR0917 (the dataclass signature: positional fields)
        self,
        title: str,
        memory_type: str,
        created: str,
        updated: str,
        claim: str | None = None,
        body: tuple[str, ...] = (),
        article_html: str | None = None,
        status: str = "active",
        metas: Mapping[str, str] = _FRESH,
        entities: tuple[tuple[str, str], ...] = (),
        tags: tuple[str, ...] = (),
        aliases: tuple[str, ...] = (),
        links: tuple[tuple[str, str], ...] = (),
        event_at: str | None = None,
        include_content_hash: bool = True,
    ) -> None:
        self.__dict__.update(
            title=title,
            memory_type=memory_type,
            created=created,
            updated=updated,
            claim=claim,
            body=body,
            article_html=article_html,
            status=status,
            metas={} if metas is _FRESH else metas,
            entities=entities,
            tags=tags,
            aliases=aliases,
            links=links,
            event_at=event_at,
            include_content_hash=include_content_hash,
        )
