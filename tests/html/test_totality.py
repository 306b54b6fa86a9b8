"""parse_memory is total: any bytes, any text, any tag soup gives a document, never an exception."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.contracts.errors import InvalidMemoryError
from memhtml.html import MemoryDocument, content_hash_of_article_html, head_items, parse_memory

TAGS = st.sampled_from(
    [
        "html", "head", "body", "title", "meta", "link", "article", "p", "mark", "time",
        "data", "dl", "dt", "dd", "cite", "q", "dfn", "code", "details", "summary", "aside",
        "section", "figure", "div", "span", "pre", "ul", "li", "table", "tr", "td", "script",
        "style", "svg", "b", "x-custom", "template", "textarea", "iframe", "br",
    ]
)  # fmt: skip
ATTR_NAMES = st.sampled_from(
    ["name", "content", "rel", "href", "datetime", "value", "cite", "data-lang", "class",
     "style", "onclick", "charset", "id", "lang"]
)  # fmt: skip
ATTR_VALUES = st.one_of(
    st.sampled_from(
        ["memhtml-type", "memhtml-status", "memhtml-created", "memhtml-entity", "memhtml-supports",
         "memhtml-bogus", "task", "semantic", "2026-07-28", "July 4", "/areas/x.html",
         "/../etc/passwd", "120", "nan", "utf-8", "latin1", "a:b", ""]
    ),
    st.text(max_size=12),
)  # fmt: skip
TEXT = st.text(max_size=20)


def no_internal_failure(doc: MemoryDocument) -> bool:
    """The safety net in parse_memory did not fire: the parse itself handled the input."""
    return not any("parser failed" in issue.message for issue in doc.violations)


@st.composite
def attributes(draw: st.DrawFn) -> str:
    pairs = draw(st.lists(st.tuples(ATTR_NAMES, ATTR_VALUES), max_size=3))
    quote = draw(st.sampled_from(['"', "'", ""]))
    return "".join(f" {n}={quote}{v}{quote}" for n, v in pairs)


def soup() -> st.SearchStrategy[str]:
    leaf = TEXT | st.sampled_from(["&amp;", "&nbsp;", "&#0;", "&bogus;", "<!-- c -->", "<", ">"])

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        @st.composite
        def element(draw: st.DrawFn) -> str:
            tag = draw(TAGS)
            inner = "".join(draw(st.lists(children, max_size=4)))
            close = draw(st.sampled_from([f"</{tag}>", "", "/>"]))
            return f"<{tag}{draw(attributes())}>{inner}{close}"

        return element()

    return st.recursive(leaf, extend, max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_total_on_arbitrary_bytes(data: bytes) -> None:
    doc = parse_memory(data)
    assert isinstance(doc, MemoryDocument)
    assert no_internal_failure(doc)
    assert doc.content_hash.startswith("sha256:") or doc.violations[0].code == "too-large"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_total_on_arbitrary_text(data: str) -> None:
    doc = parse_memory(data)
    assert isinstance(doc, MemoryDocument)
    assert no_internal_failure(doc)


@settings(max_examples=200, deadline=None)
@given(soup(), st.booleans())
def test_total_on_tag_soup(markup: str, with_doctype: bool) -> None:
    text = ("<!doctype html>" if with_doctype else "") + markup
    doc = parse_memory(text)
    assert isinstance(doc, MemoryDocument)
    assert no_internal_failure(doc)
    assert content_hash_of_article_html(markup).startswith("sha256:")
    try:
        items = head_items(text)
    except InvalidMemoryError:
        items = []
    assert all(item.kind in ("meta", "link") for item in items)


@settings(max_examples=100, deadline=None)
@given(soup())
def test_tag_soup_inside_a_valid_skeleton(markup: str) -> None:
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title>'
        '<meta name="memhtml-type" content="semantic"><meta name="memhtml-status" content="active">'
        '<meta name="memhtml-created" content="2026-01-01">'
        '<meta name="memhtml-updated" content="2026-01-01"></head>'
        f"<body><article><p><mark>claim</mark></p>{markup}</article></body></html>"
    )
    doc = parse_memory(text)
    assert no_internal_failure(doc)
    assert doc.body_text.startswith("claim")
