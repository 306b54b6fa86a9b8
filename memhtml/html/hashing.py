"""The content hash and the text normalization it is defined over.

The hash must equal the original tool's byte for byte: it is the dedup key
and the chunk key, and both implementations read the same corpora (the
original's vectors are in tests/html/test_hashing.py). It is a function of
the words a reader sees, so re-indenting the markup or editing the head never
changes it. The text of a subtree is built as a sequence of *segments*, each
either collapsible or verbatim:

* text inside `<pre>` is verbatim, all other text collapsible;
* every element that is not phrasing-level (see INLINE_ELEMENTS; unknown
  elements count as blocks) adds a collapsible space at its start and end;
* adjacent segments of the same kind are joined; in each collapsible one,
  runs of ASCII whitespace (space, tab, LF, CR, FF; not U+00A0, which is
  content) become one space;
* one leading space of the first segment and one trailing space of the last
  are dropped when those segments are collapsible (a `<pre>`'s own leading
  whitespace is content and stays);
* comments contribute nothing; character references are decoded.

The original parses with an HTML5 parser, which swallows one newline right
after `<pre>`; libxml2 keeps it, so the walk drops it to read the same text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from typing import Final

from lxml import etree

# Phrasing-level elements: no word boundary at their edges.
INLINE_ELEMENTS: Final[frozenset[str]] = frozenset(
    {
        "mark",
        "time",
        "data",
        "cite",
        "q",
        "dfn",
        "abbr",
        "code",
        "kbd",
        "samp",
        "var",
        "a",
        "strong",
        "em",
        "span",
    }
)
VERBATIM_ELEMENTS: Final[frozenset[str]] = frozenset({"pre"})
# HTML5 drops a newline directly after these start tags.
_NEWLINE_SWALLOWING: Final[frozenset[str]] = frozenset({"pre", "listing"})
# Omitted from the gist: a command line is body text, never the claim.
CODE_ELEMENTS: Final[frozenset[str]] = frozenset({"pre", "code"})
HASH_PREFIX: Final = "sha256:"
_ASCII_WS: Final = re.compile(r"[ \t\n\r\f]+")


def normalized_text(
    root: etree._Element,
    *,
    skip: Collection[etree._Element] = (),
    exclude_code: bool = False,
) -> str:
    """The normalized text of `root`: the content hash's input when root is the `<article>`.

    Elements in `skip` (and with `exclude_code`, every `<pre>` and `<code>`)
    contribute nothing; their tails still do. Without a `<pre>` (nearly every
    memory) all text is collapsible and a recursive walk reads it; otherwise,
    or past a depth no libxml2 tree reaches, the iterative walk does, whose
    depth is bounded only by the parser.
    """
    if next(root.iter("pre"), None) is None:
        try:
            return _collapsible_text(root, skip, exclude_code)
        except _TooDeepError:
            pass
    return _segmented_text(root, skip, exclude_code)


def _segmented_text(
    root: etree._Element, skip: Collection[etree._Element], exclude_code: bool
) -> str:
    """`normalized_text` by the general walk: collapsible and verbatim segments."""
    kinds: list[bool] = []  # verbatim flag of each segment
    parts: list[list[str]] = []  # the pieces of each segment

    def emit(verbatim: bool, text: str) -> None:
        if kinds and kinds[-1] == verbatim:
            parts[-1].append(text)
        else:
            kinds.append(verbatim)
            parts.append([text])

    # Frames: (element to expand, its context's verbatim flag, "") or (None, verbatim, text).
    stack: list[tuple[etree._Element | None, bool, str]] = [
        (root, root.tag in VERBATIM_ELEMENTS, "")
    ]
    while stack:
        node, verbatim, pending = stack.pop()
        if node is None:
            emit(verbatim, pending)
            continue
        tag = node.tag
        if not isinstance(tag, str) or node in skip:  # comments, processing instructions
            continue
        if exclude_code and tag in CODE_ELEMENTS:
            continue
        block = tag not in INLINE_ELEMENTS
        nested = verbatim or tag in VERBATIM_ELEMENTS
        if block:
            emit(False, " ")
            stack.append((None, False, " "))
        for child in reversed(node):
            if child.tail:
                stack.append((None, nested, child.tail))
            stack.append((child, nested, ""))
        text = node.text
        if text and tag in _NEWLINE_SWALLOWING and text.startswith("\n"):
            text = text[1:]
        if text:
            stack.append((None, nested, text))

    rendered: list[str] = []
    last = len(kinds) - 1
    for index, (verbatim, pieces) in enumerate(zip(kinds, parts, strict=True)):
        text = "".join(pieces)
        if not verbatim:
            text = _ASCII_WS.sub(" ", text)
            if index == 0:
                text = text.removeprefix(" ")
            if index == last:
                text = text.removesuffix(" ")
        rendered.append(text)
    return "".join(rendered)


class _TooDeepError(Exception):
    """The recursive walk's depth bound was reached; the iterative one takes over."""


_MAX_RECURSION: Final = 300  # libxml2 stops nesting at 255 levels


def _collapsible_text(root: etree._Element, skip: Collection[etree._Element], no_code: bool) -> str:
    """`normalized_text` of a subtree without `<pre>`: one collapsible segment.

    The segments of the general walk are all collapsible here, so they join
    into one whose whitespace runs collapse and whose ends are trimmed.
    """
    pieces: list[str] = []
    append = pieces.append

    def walk(node: etree._Element, tag: str, depth: int) -> None:
        if depth > _MAX_RECURSION:
            raise _TooDeepError
        block = tag not in INLINE_ELEMENTS
        if block:
            append(" ")
        text = node.text
        if text:
            if tag in _NEWLINE_SWALLOWING and text.startswith("\n"):
                text = text[1:]
            append(text)
        for child in node:
            inner = child.tag
            if (
                isinstance(inner, str)  # not a comment or a processing instruction
                and not (skip and child in skip)
                and not (no_code and inner in CODE_ELEMENTS)
            ):
                walk(child, inner, depth + 1)
            tail = child.tail
            if tail:
                append(tail)
        if block:
            append(" ")

    tag = root.tag
    if not isinstance(tag, str) or (skip and root in skip) or (no_code and tag in CODE_ELEMENTS):
        return ""
    if not len(root):  # a leaf (a claim's <mark>): its text, whatever spaces a block adds
        return collapse_spaces(root.text or "")
    walk(root, tag, 0)
    return collapse_spaces("".join(pieces))


def collapse_spaces(text: str) -> str:
    """Runs of ASCII whitespace to one space, and none at either end (`U+00A0` is kept).

    The same as replacing each run of space, tab, LF, CR and FF by one space
    and trimming one space from each end, without a regular expression's cost
    per run.
    """
    spaced = text.replace("\n", " ").replace("\t", " ").replace("\r", " ").replace("\f", " ")
    return " ".join(filter(None, spaced.split(" ")))


def hash_text(text: str) -> str:
    """`sha256:<hex>` of an already-normalized article text."""
    return HASH_PREFIX + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def html_parser(*, remove_comments: bool = True) -> etree.HTMLParser:
    """libxml2's HTML parser as every memhtml parse uses it.

    Plain `etree` elements, not `lxml.html`'s: its per-element class lookup is
    a Python call for every node and a tenth of a rebuild's parse time.
    """
    return etree.HTMLParser(encoding="utf-8", no_network=True, remove_comments=remove_comments)


def article_element_of(inner_html: str) -> etree._Element | None:
    """Parse an article's inner HTML the way a full file's article is parsed."""
    source = ("<html><body><article>" + inner_html + "</article></body></html>").encode(
        "utf-8", "replace"
    )
    try:
        doc = etree.fromstring(source, parser=html_parser())
    except (etree.LxmlError, ValueError):
        return None
    return None if doc is None else next(doc.iter("article"), None)


def content_hash_of_article_html(inner_html: str) -> str:
    """The content hash of an `<article>` given its inner HTML: `sha256:<64 hex>`."""
    article = article_element_of(inner_html)
    return hash_text(normalized_text(article) if article is not None else "")
