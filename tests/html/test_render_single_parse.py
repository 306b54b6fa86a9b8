"""A render parses its text once; what it returns is exactly that text's parse."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.html import NewMemory, parse_memory, render_document
from tests.html.test_properties import new_memories


@settings(max_examples=300, deadline=None)
@given(new=new_memories(), with_hash=st.booleans())
def test_the_returned_document_is_the_parse_of_the_returned_text(
    new: NewMemory, with_hash: bool
) -> None:
    new = new.replace(include_content_hash=with_hash)
    text, doc = render_document(new)
    parsed = parse_memory(text)
    assert doc == parsed
    if with_hash:
        assert parsed.metas["memhtml-content-hash"] == parsed.content_hash
        assert not any(w.code == "content-hash-mismatch" for w in parsed.warnings)
    else:
        assert "memhtml-content-hash" not in parsed.metas


def test_caller_article_html_with_pre_and_comments_parses_alike() -> None:
    new = NewMemory(
        title="T",
        memory_type="semantic",
        created="2026-01-01",
        updated="2026-01-01",
        article_html="<p><mark>A claim.</mark></p><!-- c --><pre>\n  x  y\n</pre>",
    )
    text, doc = render_document(new)
    assert doc == parse_memory(text)
    assert doc.content_hash != "sha256:" + "0" * 64
