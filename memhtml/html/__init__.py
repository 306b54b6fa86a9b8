"""The memory file format: parse, validate, render, hash, and edit heads surgically.

A memory is one semantic HTML5 file holding one fact. This package is the only
place that knows the markup; everything above it works with `MemoryDocument`
(what a file says) and `NewMemory` (what a file should say). See
docs/format.md for the format itself.
"""

from __future__ import annotations

from memhtml.html.document import (
    Citation,
    Facet,
    HeadItem,
    Issue,
    Link,
    MemoryDocument,
    NewMemory,
)
from memhtml.html.edit import (
    add_link,
    add_meta,
    head_items,
    remove_link,
    remove_meta,
    set_meta,
)
from memhtml.html.hashing import content_hash_of_article_html
from memhtml.html.parse import parse_memory
from memhtml.html.serialize import render_document, render_memory

__all__ = [
    "Citation",
    "Facet",
    "HeadItem",
    "Issue",
    "Link",
    "MemoryDocument",
    "NewMemory",
    "add_link",
    "add_meta",
    "content_hash_of_article_html",
    "head_items",
    "parse_memory",
    "remove_link",
    "remove_meta",
    "render_document",
    "render_memory",
    "set_meta",
]
