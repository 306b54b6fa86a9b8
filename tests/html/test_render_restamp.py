"""The render assembles its text once: the real hash replaces the placeholder's meta line,
and the escapes skip values that need none; the bytes are what a full re-assembly gives."""

from __future__ import annotations

import html

from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.html import NewMemory, parse_memory, render_document
from memhtml.html.serialize import escape_attr, escape_text

_PLACEHOLDER_LINE = '<meta name="memhtml-content-hash" content="sha256:' + "0" * 64 + '">'
_ATTR_EXTRA = str.maketrans({"\n": "&#10;", "\r": "&#13;", "\t": "&#9;", "\f": "&#12;"})


@settings(max_examples=2000, deadline=None)
@given(st.text())
def test_the_escapes_equal_html_escape(text: str) -> None:
    assert escape_text(text) == html.escape(text, quote=False)
    assert escape_attr(text) == html.escape(text, quote=True).translate(_ATTR_EXTRA)


def test_fields_that_spell_the_placeholder_line_leave_it_alone() -> None:
    # Every caller-chosen string that lands in the head or the article spells the
    # placeholder's meta line; only the real meta line may take the hash.
    spelled = _PLACEHOLDER_LINE
    new = NewMemory(
        title=spelled,
        memory_type="semantic",
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        claim=spelled,
        body=(spelled,),
        metas={"memhtml-author": spelled, "memhtml-session": spelled},
        entities=(("service", spelled),),
        tags=(spelled,),
        aliases=(spelled,),
    )
    text, doc = render_document(new)
    assert doc == parse_memory(text)
    assert doc.title == spelled
    assert doc.gist == spelled
    assert doc.author == spelled
    assert spelled in doc.tags
    head_lines = [line.strip() for line in text.split("</head>")[0].splitlines()]
    hash_lines = [h for h in head_lines if h.startswith('<meta name="memhtml-content-hash"')]
    assert hash_lines == [f'<meta name="memhtml-content-hash" content="{doc.content_hash}">']
    assert doc.content_hash != "sha256:" + "0" * 64
    assert doc.metas["memhtml-content-hash"] == doc.content_hash


def test_caller_article_html_may_hold_the_placeholder_line_verbatim() -> None:
    new = NewMemory(
        title="T",
        memory_type="semantic",
        created="2026-01-01",
        updated="2026-01-01",
        article_html=f"<p><mark>A claim.</mark></p><!-- {_PLACEHOLDER_LINE} -->",
    )
    text, doc = render_document(new)
    assert doc == parse_memory(text)
    assert f"<!-- {_PLACEHOLDER_LINE} -->" in text.split("<article>")[1]
    assert f'<meta name="memhtml-content-hash" content="{doc.content_hash}">' in text
