"""Hostile text through the template: escaped in the file, verbatim out of the parse.

Titles, claims and body paragraphs that carry markup, quotes, ampersands,
character references, tabs, bidirectional controls and a megabyte of text
are rendered as text (no tag of theirs reaches the file) and come back from
`parse_memory` as written, up to the format's documented whitespace
normalization. (The end-to-end `read` round trip through the CLI is tested
elsewhere.)
"""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memhtml.contracts.errors import InvalidMemoryError
from memhtml.contracts.vocab import MAX_MEMORY_BYTES
from memhtml.html import NewMemory, parse_memory, render_memory
from memhtml.html.tokens import scan

TEMPLATE_TAGS = {"html", "head", "meta", "title", "link", "body", "article", "p", "mark", "time"}
PIECES = [
    "<script>alert(1)</script>", "</title><script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '"', "'", "&", "&amp;", "&lt;", "&#x3C;", "&copy", "\t", "\n", "\r\n", "\x0c",
    "\u200f", "\u200e", "\u202e", "\u2066", "\u2069", "\u061c", "\u00a0", "\u2028", "\ufeff",
    "<!--", "-->", "<![CDATA[", "]]>", "</textarea>", "</noscript>", "</html>", "</article>",
    "javascript:alert(1)", "\\", "`", "${x}", "{{x}}", "😀", "e\u0301", "\u0085",
]  # fmt: skip
HOSTILE = st.lists(
    st.sampled_from(PIECES)
    | st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))),
    min_size=1,
    max_size=10,
).map("".join)


def collapse(text: str) -> str:
    """The format's title and gist normalization: ASCII whitespace runs to one space, trimmed."""
    return re.sub(r"[ \t\n\r\f]+", " ", text).strip()


def hash_collapse(text: str) -> str:
    """The content hash's view of one paragraph: only ASCII whitespace collapsed and trimmed."""
    return re.sub(r"[ \t\n\r\f]+", " ", text).strip(" ")


def new_memory(title: str, claim: str, body: tuple[str, ...] = ()) -> NewMemory:
    return NewMemory(
        title=title,
        memory_type="semantic",
        created="2026-07-28",
        updated="2026-07-28",
        claim=claim,
        body=body,
    )


def only_template_tags(text: str) -> bool:
    return {tag.name for tag in scan(text, every_tag=True).tags} <= TEMPLATE_TAGS


@settings(max_examples=200, deadline=None)
@given(HOSTILE, HOSTILE, st.lists(HOSTILE, max_size=3))
def test_hostile_text_is_escaped_and_comes_back(title: str, claim: str, body: list[str]) -> None:
    assume(collapse(title) and len(collapse(title)) <= 300 and collapse(claim))
    text = render_memory(new_memory(title, claim, tuple(body)))
    assert only_template_tags(text)
    doc = parse_memory(text)
    assert doc.ok, doc.violations
    assert doc.title == collapse(title)
    assert doc.gist == collapse(claim)
    paragraphs = [hash_collapse(p) for p in body if p.strip(" \t\n\r\f")]
    assert doc.body_text == " ".join([hash_collapse(claim), *paragraphs])


def test_a_script_in_the_title_and_claim_is_text() -> None:
    title = '</title><script>alert("t")</script> & "quotes" \u202e'
    claim = "<script>alert('c')</script>\t&amp; <b>bold</b>"
    text = render_memory(new_memory(title, claim))
    assert "<script>" not in text and "</title><script>" not in text
    assert "&lt;/title&gt;&lt;script&gt;" in text
    doc = parse_memory(text)
    assert (doc.title, doc.gist) == (collapse(title), collapse(claim))


def test_a_megabyte_body_round_trips() -> None:
    piece = "<script>alert(1)</script> & \"q\" 'q'\t\u202e\u00a0x "
    # Escaping grows "<", ">" and "&" to 4-5 bytes: fill most of the 1 MiB limit.
    paragraph = piece * (MAX_MEMORY_BYTES // (len(piece.encode()) * 2))
    text = render_memory(new_memory("Big", "A big body.", (paragraph,)))
    assert MAX_MEMORY_BYTES // 2 < len(text.encode()) <= MAX_MEMORY_BYTES
    assert only_template_tags(text)
    doc = parse_memory(text)
    assert doc.ok, doc.violations
    assert doc.body_text == "A big body. " + hash_collapse(paragraph)


def test_a_body_over_the_limit_once_escaped_is_refused() -> None:
    paragraph = "<" * (MAX_MEMORY_BYTES // 3)  # a third of the limit, four times that escaped
    with pytest.raises(InvalidMemoryError) as exc:
        render_memory(new_memory("Big", "A big body.", (paragraph,)))
    assert {v["code"] for v in exc.value.details["violations"]} == {"too-large"}
