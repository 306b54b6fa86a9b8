"""What the indexer reads out of an `<article>`: facets, citations, concepts and folds.

Each function takes the parsed article element and returns plain values in
document order. Texts are whitespace-normalized the same way the content hash
reads them (block elements separated by a space, `<pre>` kept verbatim).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from lxml import etree

from memhtml.contracts.dates import normalize_datetime
from memhtml.html.document import Citation, Facet
from memhtml.html.hashing import normalized_text
from memhtml.html.validate import ASCII_WS, Issues, collapse, meta_number

T = TypeVar("T")


@dataclass(frozen=True)
class ArticleFields:
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


def read_article(article: etree._Element, issues: Issues) -> ArticleFields:
    """Extract every indexed field of an article, recording a bad `<time datetime>`."""
    return ArticleFields(
        body_text=normalized_text(article),
        event_at=_event_at(article, issues),
        facets=_unique(_facets(article)),
        citations=_unique(_citations(article)),
        concepts=_unique(_non_empty(text_of(d) for d in outermost(article, "dfn"))),
        code_langs=_unique(
            _non_empty(
                (c.get("data-lang") or "").strip(ASCII_WS).lower() for c in article.iter("code")
            )
        ),
        summaries=_non_empty(text_of(s) for s in outermost(article, "summary")),
        details_text=_non_empty(
            collapse(normalized_text(d, skip=[c for c in d if c.tag == "summary"]))
            for d in outermost(article, "details")
        ),
        asides=_non_empty(text_of(a) for a in outermost(article, "aside")),
    )


def outermost(article: etree._Element, *tags: str) -> list[etree._Element]:
    """The elements of `tags` in the article that are not inside another of them.

    An aside inside an aside, a quotation inside a quotation or a list of
    facets inside a facet adds no entry of its own: its text is already part
    of the outer one's. Reading every nested one would read the same text once
    per level, which for a few hundred levels of nesting takes minutes.
    """
    above = set(article.iterancestors(*tags))  # an article inside an aside, say
    found = []
    for el in article.iter(*tags):
        enclosing = next(el.iterancestors(*tags), None)
        if el is not article and (enclosing is None or enclosing in above):
            found.append(el)
    return found


def _event_at(article: etree._Element, issues: Issues) -> str | None:
    """The first `<time datetime>` names when the fact happened in the world.

    The body accepts the wider ISO grammar other tools write and normalizes it
    to the stored one; a value that is not a datetime at all is a violation.
    """
    first = next((t for t in article.iter("time") if t.get("datetime") is not None), None)
    if first is None:
        return None
    raw = first.get("datetime") or ""
    normalized = normalize_datetime(raw)
    if normalized is None:
        issues.violation(
            "bad-datetime",
            f"<time datetime={raw!r}> is not a date or an ISO instant",
        )
    return normalized


def _facets(article: etree._Element) -> Iterable[Facet]:
    """Each `<dd>` of a `<dl>` is a facet named by the nearest `<dt>` before it.

    Only the list's own children pair up; a `<dl>` nested inside another
    (within a facet) is part of that facet's value, not a list of its own.
    """
    for dl in outermost(article, "dl"):
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


def _citations(article: etree._Element) -> Iterable[Citation]:
    """`<cite>` titles and `<q>` quotations (with their `cite` URL), in document order.

    A citation or quotation inside another one is part of the outer one's text.
    """
    for el in outermost(article, "cite", "q"):
        text = text_of(el)
        if not text:
            continue
        url = (el.get("cite") or "").strip(ASCII_WS) if el.tag == "q" else ""
        yield Citation(text=text, url=url or None)
