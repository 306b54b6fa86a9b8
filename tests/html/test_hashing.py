"""The content hash: the original tool's vectors, and the invariances it promises."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.html import content_hash_of_article_html, parse_memory
from memhtml.html.hashing import article_element_of, normalized_text

# The original tool's published vectors, committed beside the tests so they always run.
VECTORS = Path(__file__).parent / "fixtures" / "hash_vectors.json"


def _vectors() -> list[dict[str, str]]:
    return list(json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"])


def test_the_vectors_are_all_there() -> None:
    assert len(_vectors()) == 16


@pytest.mark.parametrize("vector", _vectors(), ids=lambda v: v["content_hash"][7:19])
def test_matches_the_original_tool(vector: dict[str, str]) -> None:
    assert content_hash_of_article_html(vector["article_inner_html"]) == vector["content_hash"]


def _file(article_inner: str) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<title>t</title>\n"
        '<meta name="memhtml-type" content="semantic">\n'
        '<meta name="memhtml-status" content="active">\n'
        '<meta name="memhtml-created" content="2026-01-01">\n'
        '<meta name="memhtml-updated" content="2026-01-01">\n'
        f"</head>\n<body>\n<article>{article_inner}</article>\n</body>\n</html>\n"
    )


def test_hash_is_sha256_of_the_normalized_text() -> None:
    doc = parse_memory(
        _file("<p>\n  <mark>Drain   the VIP</mark>\n  first.</p><ul><li>a</li></ul>")
    )
    assert doc.body_text == "Drain the VIP first. a"
    expected = hashlib.sha256(doc.body_text.encode()).hexdigest()
    assert doc.content_hash == "sha256:" + expected
    assert content_hash_of_article_html(doc.article_html) == doc.content_hash


def test_rules_in_isolation() -> None:
    assert content_hash_of_article_html("") == "sha256:" + hashlib.sha256(b"").hexdigest()
    same = content_hash_of_article_html("<p>a</p><p>b</p>")
    assert content_hash_of_article_html("<p>a</p>\n\n<p>b</p>") == same
    # inline elements add no space; blocks do
    assert content_hash_of_article_html("<p><em>a</em><em>b</em></p>") != same
    # U+00A0 is content, not whitespace
    assert content_hash_of_article_html("<p>a\u00a0b</p>") != content_hash_of_article_html(
        "<p>a b</p>"
    )
    # comments are not text
    assert content_hash_of_article_html("<p>a<!-- note --></p><p>b</p>") == same
    # whitespace inside <pre> counts, even at the article's edges
    assert content_hash_of_article_html("<pre>a  b</pre>") != content_hash_of_article_html(
        "<pre>a b</pre>"
    )
    assert content_hash_of_article_html("<pre>  a</pre>") != content_hash_of_article_html(
        "<pre>a</pre>"
    )


def _normalized(inner: str) -> str:
    article = article_element_of(inner)
    assert article is not None
    return normalized_text(article)


@pytest.mark.parametrize(
    ("inner", "text"),
    [
        ("<pre>\nx\n</pre>", "x\n"),  # one newline after <pre> is swallowed, as in HTML5
        ("<pre>  a</pre>", "  a"),
        ("<pre>a </pre><p>b</p>", "a  b"),  # no collapse across a <pre> edge
        ("<p>a<br>b</p>", "a b"),  # an element outside the phrasing set is a block
        ("<p>a<b>b</b>c</p>", "a b c"),
        ("<p>a<em>b</em>c</p>", "abc"),
        ("<p>\u00a0a\u00a0</p>", "\u00a0a\u00a0"),
        ("<p>a</p><!-- b --><p>c</p>", "a c"),
    ],
)
def test_normalization_rules(inner: str, text: str) -> None:
    assert _normalized(inner) == text


# Articles built from blocks of words, rendered with varying whitespace around the blocks.
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé&<>0123456789", min_size=1, max_size=8)
PHRASE = st.lists(WORD, min_size=1, max_size=5).map(" ".join)
BLOCK_KINDS = st.sampled_from(["p", "ul", "dl", "details", "aside", "section", "pre"])
GAP = st.sampled_from(["", " ", "\n", "\n  ", "\n\t\n    ", "\r\n"])


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _block(kind: str, phrase: str, gap: str) -> str:
    text = _escape(phrase)
    if kind == "ul":
        return f"<ul>{gap}<li>{text}</li>{gap}<li>{text}</li>{gap}</ul>"
    if kind == "dl":
        return f"<dl>{gap}<dt>{text}</dt>{gap}<dd>{text}</dd>{gap}</dl>"
    if kind == "details":
        return f"<details>{gap}<summary>{text}</summary>{gap}<p>{text}</p>{gap}</details>"
    if kind == "aside":
        return f"<aside>{gap}<p>{text}</p>{gap}</aside>"
    if kind == "section":
        return f"<section>{gap}<p>{text}</p>{gap}</section>"
    if kind == "pre":
        return f"<pre>{text}</pre>"
    return f"<p>{gap}{text}{gap}</p>"


@st.composite
def articles(draw: st.DrawFn) -> tuple[list[tuple[str, str]], str]:
    blocks = draw(st.lists(st.tuples(BLOCK_KINDS, PHRASE), min_size=1, max_size=5))
    claim = _escape(draw(PHRASE))
    return blocks, claim


def _render(blocks: list[tuple[str, str]], claim: str, gaps: list[str]) -> str:
    out = [gaps[0], f"<p><mark>{claim}</mark></p>"]
    for i, (kind, phrase) in enumerate(blocks):
        gap = gaps[(i + 1) % len(gaps)]
        out += [gap, _block(kind, phrase, gap)]
    out.append(gaps[-1])
    return "".join(out)


@settings(max_examples=150, deadline=None)
@given(articles(), st.lists(GAP, min_size=1, max_size=6), st.lists(GAP, min_size=1, max_size=6))
def test_reindenting_between_blocks_keeps_the_hash(
    article: tuple[list[tuple[str, str]], str], gaps_a: list[str], gaps_b: list[str]
) -> None:
    blocks, claim = article
    a = parse_memory(_file(_render(blocks, claim, gaps_a)))
    b = parse_memory(_file(_render(blocks, claim, gaps_b)))
    assert a.content_hash == b.content_hash
    assert a.body_text == b.body_text


@settings(max_examples=150, deadline=None)
@given(articles(), WORD)
def test_changing_article_text_changes_the_hash(
    article: tuple[list[tuple[str, str]], str], extra: str
) -> None:
    blocks, claim = article
    base = parse_memory(_file(_render(blocks, claim, ["\n"])))
    changed = parse_memory(_file(_render([*blocks, ("p", extra)], claim, ["\n"])))
    assert base.content_hash != changed.content_hash
    edited_claim = parse_memory(_file(_render(blocks, claim + "x", ["\n"])))
    assert base.content_hash != edited_claim.content_hash
