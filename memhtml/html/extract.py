"""What the indexer reads out of an `<article>`: facets, citations, concepts and folds.

Each function takes the parsed article element and returns plain values in
document order. Texts are whitespace-normalized the same way the content hash
reads them (block elements separated by a space, `<pre>` kept verbatim).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Final, NamedTuple, TypeVar

from lxml import etree

from memhtml.contracts.dates import normalize_datetime
from memhtml.html.document import Citation, Facet
from memhtml.html.hashing import normalized_text
from memhtml.html.validate import ASCII_WS, Issues, collapse, meta_number

T = TypeVar("T")
# Remembered per process, like validate's strict_datetime.
_normalized_datetime: Final = functools.lru_cache(maxsize=1024)(normalize_datetime)


class ArticleFields(NamedTuple):
    """The body-derived fields of a MemoryDocument."""

    body_text: str = ""
    event_at: str | None = None
    facets: tuple[Facet, ...] = ()
    citations: tuple[Citation, ...] = ()
    concepts: tuple[str, ...] = ()
    code_langs: tuple[str, ...] = ()
    summaries: tuple[str, ...] = ()
    details_text: tuple[str, ...] = ()
    asides: tuple[str, ...] = ()


def _unique(items: Iterable[T]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(items))


def text_of(el: etree._Element) -> str:
    """An element's text for the index: blocks separated, all whitespace collapsed."""
    return collapse(normalized_text(el))


def _non_empty(texts: Iterable[str]) -> tuple[str, ...]:
    return tuple(t for t in texts if t)


# The elements read_article looks at, found in one walk; cite and q are one group.
_GROUP_OF: Final[dict[str, str]] = {
    "dl": "dl", "cite": "cite", "q": "cite", "dfn": "dfn", "summary": "summary",
    "details": "details", "aside": "aside", "code": "code", "time": "time",
}  # fmt: skip
_GROUP_TAGS: Final[dict[str, tuple[str, ...]]] = {"cite": ("cite", "q")}


def read_article(article: etree._Element, issues: Issues) -> ArticleFields:
    """Extract every indexed field of an article, recording a bad `<time datetime>`."""
    groups: dict[str, list[etree._Element]] = {}
    for el in article.iter(*_GROUP_OF):
        groups.setdefault(_GROUP_OF[el.tag], []).append(el)
    body_text = normalized_text(article)
    event_at = _event_at(groups["time"], issues) if "time" in groups else None
    if not groups.keys() - {"time"}:  # the common case: a claim and paragraphs
        return ArticleFields(body_text=body_text, event_at=event_at)

    def top(group: str) -> list[etree._Element]:
        found = groups.get(group)
        if not found:
            return []
        return _outermost(article, found, _GROUP_TAGS.get(group, (group,)))

    return ArticleFields(
        body_text=body_text,
        event_at=event_at,
        facets=_unique(_facets(top("dl"))),
        citations=_unique(_citations(top("cite"))),
        concepts=_unique(_non_empty(text_of(d) for d in top("dfn"))),
        code_langs=_unique(
            _non_empty(
                (c.get("data-lang") or "").strip(ASCII_WS).lower() for c in groups.get("code", ())
            )
        ),
        summaries=_non_empty(text_of(s) for s in top("summary")),
        details_text=_non_empty(
            collapse(normalized_text(d, skip=[c for c in d if c.tag == "summary"]))
            for d in top("details")
        ),
        asides=_non_empty(text_of(a) for a in top("aside")),
    )


def outermost(article: etree._Element, *tags: str) -> list[etree._Element]:
    """The elements of `tags` in the article that are not inside another of them.

    An aside inside an aside, a quotation inside a quotation or a list of
    facets inside a facet adds no entry of its own: its text is already part
    of the outer one's. Reading every nested one would read the same text once
    per level, which for a few hundred levels of nesting takes minutes.
    """
    return _outermost(article, article.iter(*tags), tags)


def _outermost(
    article: etree._Element, candidates: Iterable[etree._Element], tags: tuple[str, ...]
) -> list[etree._Element]:
    """`outermost` over `candidates`: the article's elements of `tags`, in document order."""
    above = set(article.iterancestors(*tags))  # an article inside an aside, say
    found = []
    for el in candidates:
        enclosing = next(el.iterancestors(*tags), None)
        if el is not article and (enclosing is None or enclosing in above):
            found.append(el)
    return found


def _event_at(times: Iterable[etree._Element], issues: Issues) -> str | None:
    """The first `<time datetime>` names when the fact happened in the world.

    `times` are the article's `<time>` elements in document order. The body
    accepts the wider ISO grammar other tools write and normalizes it to the
    stored one; a value that is not a datetime at all is a violation.
    """
    first = next((t for t in times if t.get("datetime") is not None), None)
    if first is None:
        return None
    raw = first.get("datetime") or ""
    normalized = _normalized_datetime(raw)
    if normalized is None:
        issues.violation(
            "bad-datetime",
            f"<time datetime={raw!r}> is not a date or an ISO instant",
        )
    return normalized


def _facets(lists: Iterable[etree._Element]) -> Iterable[Facet]:
    """Each `<dd>` of a `<dl>` is a facet named by the nearest `<dt>` before it.

    Only the list's own children pair up; a `<dl>` nested inside another
    (within a facet) is part of that facet's value, not a list of its own.
    """
    for dl in lists:
        name = ""
        for child in dl:
            if child.tag == "dt":
                name = text_of(child)
            elif child.tag == "dd" and name:
                numeric = next(
                    (
                        number
                        for data in child.iter("data")
                        if (number := meta_number((data.get("value") or "").strip(ASCII_WS)))
                        is not None
                    ),
                    None,
                )
                yield Facet(name=name, value=text_of(child), numeric=numeric)


def _citations(outer: Iterable[etree._Element]) -> Iterable[Citation]:
    """`<cite>` titles and `<q>` quotations (with their `cite` URL), in document order.

    A citation or quotation inside another one is part of the outer one's text.
    """
    for el in outer:
        text = text_of(el)
        if not text:
            continue
        url = (el.get("cite") or "").strip(ASCII_WS) if el.tag == "q" else ""
        yield Citation(text=text, url=url or None)
