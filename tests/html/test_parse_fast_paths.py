"""The parse's fast paths read exactly what the full readings read.

* The scan skips the start tags that can draw no finding (an allowed name with
  only its quiet attributes, `allowlist.QUIET_ATTRIBUTES`), comments, doctypes,
  end tags and a plain `<title>` with its text in one regular-expression
  match: the allow-list findings and the `</html>` verdict are those of the
  token-by-token scan (`every_tag`), and the article tags are still tokens.
* `normalized_text` reads a subtree without `<pre>` by a recursive walk; it
  equals the general segment walk, with `skip` and `exclude_code` too, and a
  tree deeper than the recursion bound falls back to the general walk.
* `collapse_spaces` is the regular expression's collapse without its cost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from memhtml.html.allowlist import (
    ALLOWED_ELEMENTS,
    ELEMENT_ATTRIBUTES,
    GLOBAL_ATTRIBUTES,
    QUIET_ATTRIBUTES,
    attribute_problems,
)
from memhtml.html.hashing import (
    _collapsible_text,
    _segmented_text,
    collapse_spaces,
    html_parser,
    normalized_text,
)
from memhtml.html.tokens import scan
from memhtml.html.validate import Issues, check_markup

MutatedInputs = Callable[[int, int], Iterable[bytes]]
HOSTILE_VALUES = ("", "javascript:alert(1)", "//evil", "x", "refresh", "stylesheet", "/a.html")
TAGS = st.sampled_from(
    ["html", "head", "body", "title", "meta", "link", "article", "p", "mark", "time", "data",
     "dl", "dd", "cite", "q", "code", "pre", "aside", "details", "summary", "div", "span", "a",
     "td", "ol", "li", "script", "svg", "x-custom", "textarea", "br", "TITLE", "Meta"]
)  # fmt: skip
NAMES = st.sampled_from(
    ["name", "content", "charset", "http-equiv", "rel", "href", "datetime", "value", "cite",
     "data-lang", "lang", "id", "title", "dir", "xmlns", "class", "onclick", "style", "NAME"]
)  # fmt: skip
VALUES = st.sampled_from(
    ["", "x", "utf-8", "latin1", "javascript:x", "//evil", "/a.html", "memhtml-tag", "a&amp;b",
     "</title>", "<p>", "a>b", "en"]
)  # fmt: skip
TEXT = st.text(st.sampled_from("ab \n\t\u00a0<>&/!-?=\"'"), max_size=12)


def test_quiet_attributes_draw_no_finding_whatever_their_value() -> None:
    for tag in sorted(ALLOWED_ELEMENTS):
        for name in sorted(QUIET_ATTRIBUTES[tag]):
            for value in HOSTILE_VALUES:
                assert list(attribute_problems(tag, [(name, value)])) == [], (tag, name, value)


def test_every_other_allowed_attribute_can_draw_a_finding() -> None:
    for tag in sorted(ALLOWED_ELEMENTS):
        loud = (GLOBAL_ATTRIBUTES | ELEMENT_ATTRIBUTES.get(tag, frozenset())) - QUIET_ATTRIBUTES[
            tag
        ]
        for name in sorted(loud):
            assert any(
                list(attribute_problems(tag, [(name, value)])) for value in HOSTILE_VALUES
            ), (tag, name)


@st.composite
def markup(draw: st.DrawFn) -> str:
    """Tag soup leaning to the shapes the fast path reads: double-quoted attributes."""
    pieces = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 9))
        if kind < 5:
            tag = draw(TAGS)
            attrs = draw(st.lists(st.tuples(NAMES, VALUES), max_size=3))
            quote = draw(st.sampled_from(['"', '"', "'", ""]))
            close = draw(st.sampled_from([">", ">", " >", "/>", ""]))
            pieces.append(f"<{tag}" + "".join(f" {n}={quote}{v}{quote}" for n, v in attrs) + close)
        elif kind < 7:
            pieces.append(f"</{draw(TAGS)}{draw(st.sampled_from(['>', ' >', '', ' x=1>']))}")
        elif kind < 8:
            pieces.append(draw(st.sampled_from(["<!-- c -->", "<!--", "<!doctype html>", "<?x>"])))
        else:
            pieces.append(draw(TEXT))
    return "".join(pieces)


def _findings(text: str, *, every_tag: bool) -> tuple[object, ...]:
    issues = Issues()
    tokens = scan(text, every_tag=every_tag)
    check_markup(tokens, issues)
    articles = [t for t in tokens.tags if t.name == "article"]
    return tuple(issues.violations), tuple(issues.warnings), tokens.after_html, tuple(articles)


@settings(max_examples=400, deadline=None)
@given(markup(), st.booleans())
def test_skipping_quiet_tokens_changes_no_finding(text: str, closed: bool) -> None:
    text = text + ("</html>" + text if closed else "")
    assert _findings(text, every_tag=False) == _findings(text, every_tag=True)


def test_skipping_changes_no_finding_on_mutated_memory_files(
    mutated_inputs: MutatedInputs,
) -> None:
    for data in mutated_inputs(400, 19):
        text = data.decode("utf-8", "replace")
        assert _findings(text, every_tag=False) == _findings(text, every_tag=True), data


def test_a_rendered_file_is_a_few_tokens() -> None:
    text = (
        '<!doctype html>\n<html lang="en">\n<head>\n  <meta charset="utf-8">\n'
        "  <title>t</title>\n"
        '  <meta name="memhtml-type" content="semantic">\n</head>\n<body>\n'
        '<article>\n  <p><mark>c</mark> <time datetime="2026-01-01">x</time></p>\n</article>\n'
        "</body>\n</html>\n"
    )
    tags = scan(text).tags
    assert [(t.name, t.closing) for t in tags] == [
        ("article", False),
        ("article", True),
        ("html", True),
    ]
    assert text[tags[0].end : tags[1].start].startswith("\n  <p><mark>")


def _elements(text: str) -> list[etree._Element]:
    root = etree.fromstring(
        ("<html><body><article>" + text + "</article></body></html>").encode(),
        html_parser(remove_comments=False),
    )
    return [el for el in root.iter() if isinstance(el.tag, str)]


def _walks_agree(text: str, exclude_code: bool) -> int:
    """Compare the walks on every pre-free element of `text`; how many were compared."""
    compared = 0
    for el in _elements(text):
        skip = [c for c in el if c.tag in ("summary", "aside")]
        if next(el.iter("pre"), None) is None:
            expected = _segmented_text(el, skip, exclude_code)
            assert _collapsible_text(el, skip, exclude_code) == expected, (text, el.tag)
            assert normalized_text(el, skip=skip, exclude_code=exclude_code) == expected
            compared += 1
    return compared


def nested() -> st.SearchStrategy[str]:
    leaf = TEXT | st.sampled_from(["<!-- c -->", "<?pi x?>", "&amp;", "\n", " "])

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        @st.composite
        def element(draw: st.DrawFn) -> str:
            tag = draw(
                st.sampled_from(
                    ["p", "em", "code", "summary", "aside", "li", "ul", "listing", "mark", "div"]
                )
            )
            inner = "".join(draw(st.lists(children, max_size=4)))
            return f"<{tag}>{inner}</{tag}>{draw(TEXT)}"

        return element()

    return st.recursive(leaf, extend, max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.lists(nested(), max_size=4).map("".join), st.booleans())
def test_the_recursive_walk_equals_the_segment_walk(text: str, exclude_code: bool) -> None:
    assert _walks_agree(text, exclude_code) >= 3  # at least html, body and article


@pytest.mark.parametrize(
    "text",
    [
        "<p>a<code>x</code>tail</p>",  # an excluded element's tail stays
        "<p>a<!-- c -->b<?pi?>c</p>",  # comments and instructions: nothing, tails stay
        "<details><summary>s</summary>d<aside>x</aside>t</details>",  # skipped: tails stay
        "<listing>\nx</listing><p>a</p>\n<p>b</p>",  # the swallowed newline, block edges
        "<p><em>a</em><em>b</em> c\u00a0d</p>",  # no space at inline edges; U+00A0 kept
    ],
)
@pytest.mark.parametrize("exclude_code", [False, True])
def test_the_walks_agree_on_the_edge_cases(text: str, exclude_code: bool) -> None:
    assert _walks_agree(text, exclude_code) >= 3


def test_a_tree_deeper_than_the_recursion_bound_takes_the_segment_walk() -> None:
    root = etree.Element("article")
    node = root
    for level in range(2000):  # built by hand: libxml2 stops at 255 levels
        node = etree.SubElement(node, "div" if level % 2 else "em")
        node.text = f" w{level}\n"
        node.tail = "t"
    words = normalized_text(root).split(" ")
    assert words[:3] == ["w0", "w1", "w2"]
    assert normalized_text(root) == _segmented_text(root, (), False)


@pytest.mark.parametrize(
    "text",
    ["", " ", "a", " a  b\t\nc \f", "\u00a0 a\u00a0\u00a0b \u00a0", "\x0b a \x1c b\x85", "\r\n"],
)
def test_collapse_spaces_examples(text: str) -> None:
    expected = re.sub(r"[ \t\n\r\f]+", " ", text).removeprefix(" ").removesuffix(" ")
    assert collapse_spaces(text) == expected


@given(st.text(st.sampled_from(" \t\n\r\f\x0b\x1c\x85\u00a0\u2003ab"), max_size=30))
def test_collapse_spaces_is_the_regular_expression_collapse(text: str) -> None:
    expected = re.sub(r"[ \t\n\r\f]+", " ", text).removeprefix(" ").removesuffix(" ")
    assert collapse_spaces(text) == expected
