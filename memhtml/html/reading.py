"""A memory as a person reads it: its title, the article's text block by block, and its facts.

Sleep's review shows what a decision did to a memory as text, not markup: a diff of
these lines says "confidence 1 -> 0.95" or "a paragraph was added", where a diff of the
file shows a `<meta>` line and an indentation change. The blocks are the article's
leaf blocks in document order (a paragraph, a list item as `- ...`, a heading as
`## ...`, a term and its description, a table row, preformatted text line by line);
the facts are the head's fields a reader cares about, one `name: value` line each,
links as `link rel: path`. Nothing here is stored: it is derived from the bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from lxml import etree

from memhtml.html.parse import parse_memory
from memhtml.html.validate import collapse

_LEAF: Final = frozenset(
    {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "figcaption", "summary", "caption"}
)
_CONTAINS_BLOCKS: Final = frozenset({*_LEAF, "ul", "ol", "dl", "table", "pre", "blockquote"})
# Head fields worth a line, in the order they are shown (`memhtml-` left off).
FACTS: Final[tuple[str, ...]] = (
    "type",
    "status",
    "task-status",
    "confidence",
    "importance",
    "valid-from",
    "valid-until",
    "reprieves",
    "due",
    "superseded-by",
    "archived",
    "archive-reason",
    "session",
    "author",
    "created",
    "updated",
)


@dataclass(frozen=True)
class Reading:
    """A memory's text as a person reads it."""

    title: str
    blocks: tuple[str, ...]
    facts: tuple[tuple[str, str], ...]  # (name, value), FACTS order, then tags, entities, links
    ok: bool = True

    @property
    def claim(self) -> str:
        """The first block (the memory's claim, in the format's `<mark>`)."""
        return self.blocks[0] if self.blocks else ""

    def lines(self, *, facts: bool = True) -> list[str]:
        """`# title`, the blocks, then (optionally) one `name: value` line per fact."""
        out = [f"# {self.title}"] if self.title else []
        out += list(self.blocks)
        if facts:
            out += [f"{name}: {value}" for name, value in self.facts]
        return out


def _text(el: etree._Element) -> str:
    return collapse("".join(str(t) for t in el.itertext()))


def _blocks(article: etree._Element) -> Iterable[str]:
    for el in article.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag == "pre":
            yield from ("".join(str(t) for t in el.itertext()).strip("\n").splitlines() or [""])
            continue
        if tag == "tr":
            cells = [_text(c) for c in el if isinstance(c.tag, str) and c.tag in ("td", "th")]
            if any(cells):
                yield " | ".join(cells)
            continue
        if tag not in _LEAF or any(a.tag == "pre" for a in el.iterancestors()):
            continue
        text = _own_text(el) if _has_block_inside(el) else _text(el)
        if not text:
            continue
        if tag == "li":
            yield f"- {text}"
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            yield f"## {text}"
        elif tag == "dd":
            yield f"  {text}"
        else:
            yield text


def _own_text(el: etree._Element) -> str:
    """The text of `el` outside the blocks nested in it (a list item above its sub-list)."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and (
            child.tag in _CONTAINS_BLOCKS or _has_block_inside(child)
        ):
            parts.append(child.tail or "")
        else:
            parts += ["".join(str(t) for t in child.itertext()), child.tail or ""]
    return collapse("".join(parts))


def _has_block_inside(el: etree._Element) -> bool:
    return any(isinstance(d.tag, str) and d.tag in _CONTAINS_BLOCKS for d in el.iterdescendants())


def reading(data: bytes | None) -> Reading:
    """The reading of a memory file's bytes (an empty one for None; a file that does not
    parse as a memory reads as its text lines, marked not ok)."""
    if data is None:
        return Reading("", (), ())
    doc = parse_memory(data)
    if not doc.title and not doc.article_html:
        text = data.decode("utf-8", "replace")
        return Reading("", tuple(line for line in text.splitlines() if line.strip()), (), False)
    blocks: list[str] = []
    if doc.article_html.strip():
        try:
            article = etree.fromstring(
                f"<article>{doc.article_html}</article>", etree.HTMLParser(recover=True)
            )
        except (etree.XMLSyntaxError, ValueError):
            article = None
        if article is not None:
            node = article.find(".//article")
            blocks = list(_blocks(node if node is not None else article))
    facts: list[tuple[str, str]] = []
    for name in FACTS:
        value = doc.metas.get(f"memhtml-{name}")
        if value:
            facts.append((name, value))
    facts += [("tag", t) for t in doc.tags]
    facts += [("entity", f"{t}:{n}") for t, n in doc.entities]
    facts += [("alias", a) for a in doc.aliases]
    facts += sorted((f"link {link.rel}", link.path) for link in doc.links)
    return Reading(doc.title, tuple(blocks), tuple(facts), doc.ok)
