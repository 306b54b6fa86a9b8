"""Memory specs and article markup for the generated fixture corpus.

A `MemSpec` is what the generator decides about one memory; `render_spec`
turns it into file bytes through the format's own serializer
(`memhtml.html.render_memory`), so every generated file is exactly what the
write door would produce. The block helpers build `<article>` inner HTML with
the elements the indexer reads (facets, citations, `<time>`, `<dfn>`,
`<code data-lang>`, folds), escaping every text they are given.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from memhtml.html import NewMemory, render_memory

INDENT = "  "


@dataclass(frozen=True)
class MemSpec:
    """One memory of the fixture, before rendering.

    Either `claim` (+ plain `body` paragraphs) or `article` (inner HTML whose
    first `<p>` holds the `<mark>`). `links` are (rel, path) pairs; `metas`
    optional scalar metas by full name.
    """

    path: str
    title: str
    memory_type: str
    created: str
    updated: str
    claim: str | None = None
    body: tuple[str, ...] = ()
    article: str | None = None
    status: str = "active"
    metas: Mapping[str, str] = field(default_factory=dict)
    entities: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    event_at: str | None = None
    role: str = "filler"  # what the generator made it for: filler, target, control, person...

    def with_links(self, *links: tuple[str, str]) -> MemSpec:
        """A copy with more authored links (duplicates dropped, order kept)."""
        return replace(self, links=tuple(dict.fromkeys((*self.links, *links))))

    def with_metas(self, **metas: str) -> MemSpec:
        """A copy with more scalar metas, given as memhtml_<name>=value."""
        named = {k.replace("_", "-"): v for k, v in metas.items()}
        return replace(self, metas={**self.metas, **named})


def render_spec(spec: MemSpec) -> bytes:
    """The file bytes of `spec` (raises InvalidMemoryError when the spec is not a valid memory)."""
    new = NewMemory(
        title=spec.title,
        memory_type=spec.memory_type,
        created=spec.created,
        updated=spec.updated,
        claim=spec.claim if spec.article is None else None,
        body=spec.body if spec.article is None else (),
        article_html=spec.article,
        status=spec.status,
        metas=dict(spec.metas),
        entities=spec.entities,
        tags=spec.tags,
        aliases=spec.aliases,
        links=spec.links,
        event_at=spec.event_at if spec.article is None else None,
    )
    return render_memory(new).encode("utf-8")


# -- article blocks ---------------------------------------------------------------------


def esc(text: str) -> str:
    """Escape text content."""
    return html.escape(text, quote=False)


def attr(text: str) -> str:
    """Escape an attribute value."""
    return html.escape(text, quote=True)


def article(claim: str, *blocks: str) -> str:
    """Inner HTML of an `<article>`: the claim paragraph, then each block on its own line."""
    lines = [f"\n{INDENT}<p><mark>{esc(claim)}</mark></p>\n"]
    lines += [f"{INDENT}{block}\n" for block in blocks if block]
    return "".join(lines)


def para(text: str) -> str:
    """A plain paragraph."""
    return f"<p>{esc(text)}</p>"


def when(prefix: str, datetime_value: str, label: str, suffix: str = ".") -> str:
    """A paragraph with a `<time datetime>` (the first one is the memory's event time)."""
    stamp = f'<time datetime="{attr(datetime_value)}">{esc(label)}</time>'
    return f"<p>{esc(prefix)} {stamp}{esc(suffix)}</p>"


def facets(rows: Sequence[tuple[str, str, float | None]]) -> str:
    """A `<dl>` of facets; a numeric value is wrapped in `<data value>`."""
    parts = ["<dl>"]
    for name, value, numeric in rows:
        shown = esc(value)
        if numeric is not None:
            number = f"{numeric:g}"
            shown = f'<data value="{attr(number)}">{shown}</data>'
        parts.append(f"<dt>{esc(name)}</dt><dd>{shown}</dd>")
    parts.append("</dl>")
    return "".join(parts)


def cite(prefix: str, title: str) -> str:
    """A paragraph citing a work by title."""
    return f"<p>{esc(prefix)} <cite>{esc(title)}</cite>.</p>"


def quote(text: str, url: str, lead: str = "") -> str:
    """A paragraph with a `<q cite>` quotation."""
    head = f"{esc(lead)} " if lead else ""
    return f'<p>{head}<q cite="{attr(url)}">{esc(text)}</q></p>'


def define(term: str, rest: str) -> str:
    """A paragraph defining a term with `<dfn>` (indexed as a concept entity)."""
    return f"<p><dfn>{esc(term)}</dfn> {esc(rest)}</p>"


def code_block(lang: str, source: str) -> str:
    """A `<pre><code data-lang>` block (indexed as a lang entity)."""
    return f'<pre><code data-lang="{attr(lang)}">{esc(source)}</code></pre>'


def inline_code(lead: str, lang: str, source: str, tail: str = ".") -> str:
    """A paragraph with inline `<code data-lang>`."""
    return f'<p>{esc(lead)} <code data-lang="{attr(lang)}">{esc(source)}</code>{esc(tail)}</p>'


def fold(summary: str, *paragraphs: str) -> str:
    """A `<details>` fold: the summary is disclosed, the body only searchable."""
    inner = "".join(f"<p>{esc(p)}</p>" for p in paragraphs)
    return f"<details><summary>{esc(summary)}</summary>{inner}</details>"


def aside(text: str) -> str:
    """An `<aside>`: searchable, never disclosed."""
    return f"<aside><p>{esc(text)}</p></aside>"


def steps(items: Sequence[str], ordered: bool = True) -> str:
    """An ordered (or bulleted) list."""
    tag = "ol" if ordered else "ul"
    return f"<{tag}>" + "".join(f"<li>{esc(i)}</li>" for i in items) + f"</{tag}>"


__all__ = [
    "MemSpec",
    "article",
    "aside",
    "cite",
    "code_block",
    "define",
    "esc",
    "facets",
    "fold",
    "inline_code",
    "para",
    "quote",
    "render_spec",
    "steps",
    "when",
]
