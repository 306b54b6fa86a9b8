"""What the validator accepts, a browser renders harmlessly: a differential test against html5lib.

html5lib implements the WHATWG parsing algorithm browsers use. For every file
`parse_memory` accepts (hypothesis-built articles over the vocabulary and
hostile markup, the hostile payloads of issue 12, and byte mutations of real
memory files), html5lib builds the page as a browser would, with scripting on
(so <noscript> is raw text) and off, and builds `read`'s `article_html` alone
as a page embedding it would. No element it builds may be outside the
allow-list, no attribute outside it (so no `on…`), and no URL attribute may
carry a scheme the format refuses.

The oracle is html5lib plus an independent reading of URLs (urllib's, which
strips and splits as the WHATWG URL parser does), checked against the
allow-list *tables*; it never calls the validator's own predicates. A second
property compares the validator's tokenizer with html5lib's on tag soup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit
from xml.etree import ElementTree

import html5lib
import pytest
from html5lib._tokenizer import HTMLTokenizer
from hypothesis import event, given, settings
from hypothesis import strategies as st

from memhtml.html import MemoryDocument, parse_memory
from memhtml.html.allowlist import (
    ALLOWED_ELEMENTS,
    BODY_ELEMENTS,
    ELEMENT_ATTRIBUTES,
    GLOBAL_ATTRIBUTES,
    TOLERATED_ELEMENTS,
)
from memhtml.html.tokens import scan

MutatedInputs = Callable[[int, int], Iterable[bytes]]
FuzzCount = Callable[[int], int]

PARSER = html5lib.HTMLParser(namespaceHTMLElements=False)
URL_ATTRIBUTE_NAMES = frozenset({"href", "cite", "src", "action", "formaction", "data", "poster"})
C0_OR_SPACE = "".join(chr(c) for c in range(0x21))
HEAD = (
    '<meta charset="utf-8"><title>t</title><meta name="memhtml-type" content="semantic">'
    '<meta name="memhtml-status" content="active">'
    '<meta name="memhtml-created" content="2026-07-28">'
    '<meta name="memhtml-updated" content="2026-07-28">'
)


def page(article: str) -> str:
    return (
        f"<!doctype html><html><head>{HEAD}</head><body><article>{article}</article></body></html>"
    )


# ---------------------------------------------------------------- the oracle


def browser_safe_url(value: str) -> bool:
    """The format's URL rule, read the way a browser reads the URL (urllib, not ours)."""
    cleaned = value.strip(C0_OR_SPACE)
    for char in "\t\n\r":
        cleaned = cleaned.replace(char, "")
    try:
        scheme = urlsplit(cleaned).scheme
    except ValueError:  # e.g. "http://[" (a browser finds no valid URL in it either)
        scheme = cleaned.partition(":")[0]
    if scheme:
        return scheme.lower() in {"http", "https", "mailto"}
    if cleaned.startswith("#"):
        return True
    return cleaned.startswith("/") and not cleaned.startswith(("//", "/\\"))


def harm(tree: ElementTree.Element) -> list[str]:
    """Everything in a browser's tree that the allow-lists do not allow."""
    found = []
    for el in tree.iter():
        tag = el.tag
        if not isinstance(tag, str) or tag == "DOCUMENT_FRAGMENT":
            continue  # comments; the fragment's own root
        if tag not in ALLOWED_ELEMENTS:
            found.append(f"element <{tag}>")
        allowed = GLOBAL_ATTRIBUTES | ELEMENT_ATTRIBUTES.get(tag, frozenset())
        for name, value in el.attrib.items():
            if name.startswith("on") or name not in allowed:
                found.append(f"attribute {name}={value!r} on <{tag}>")
            elif name in URL_ATTRIBUTE_NAMES and not browser_safe_url(value):
                found.append(f"URL {name}={value!r} on <{tag}>")
            elif name == "http-equiv" and value.strip(C0_OR_SPACE).lower() != "content-type":
                found.append(f"http-equiv={value!r}")
            elif (
                tag == "link"
                and name == "rel"
                and any(not token.startswith("memhtml-") for token in value.lower().split())
            ):
                found.append(f"link rel={value!r}")
    return found


def browser_trees(text: str, doc: MemoryDocument) -> Iterator[tuple[str, ElementTree.Element]]:
    """The page with scripting on and off, and the article's inner HTML embedded in a page."""
    yield "page, scripting on", PARSER.parse(text, scripting=True)
    yield "page, scripting off", PARSER.parse(text, scripting=False)
    yield (
        "article_html in a <div>",
        PARSER.parseFragment(doc.article_html, container="div", scripting=True),
    )


def assert_accepted_means_harmless(data: bytes | str) -> bool:
    """If parse_memory accepts `data`, a browser builds nothing harmful from it.

    Returns whether it was accepted.
    """
    doc = parse_memory(data)
    if not doc.ok:
        return False
    text = data if isinstance(data, str) else data.decode("utf-8")
    for where, tree in browser_trees(text.removeprefix("\ufeff"), doc):
        assert harm(tree) == [], (where, text[:2000])
    return True


def test_the_oracle_sees_what_the_issue_describes() -> None:
    # The oracle itself must catch the issue's payload (it would pass libxml2's tree).
    payload = '<p title="</noscript><img src=x onerror=alert(1)>"></p>'
    tree = PARSER.parse(
        page(f"<p><mark>x</mark></p><noscript>{payload}</noscript>"), scripting=True
    )
    assert any("img" in item for item in harm(tree))
    assert any("onerror" in item for item in harm(tree))
    assert not browser_safe_url(" java\tscript:alert(1)")
    assert not browser_safe_url("/\\evil.example")
    assert browser_safe_url("https://example.com") and browser_safe_url("#x")


# ---------------------------------------------------------------- hostile payloads

HOSTILE = [
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></p></noscript>',
    '<p title="</noscript><img src=x onerror=alert(1)>"></p>',
    "<!--><img src=x onerror=alert(1)>-->",
    "<!---><img src=x onerror=alert(1)>-->",
    "<!-- a --!><img src=x onerror=alert(1)>-->",
    "<![CDATA[><img src=x onerror=alert(1)>]]>",
    "<?x ><img src=x onerror=alert(1)>?>",
    "</article></body></html><img src=x onerror=alert(1)><article>",
    "</html><script>alert(1)</script>",
    "<body onload=alert(1)>",
    "<html onmouseover=alert(1)>",
    "<image src=x onerror=alert(1)>",
    "<isindex action=javascript:alert(1)>",
    "<svg><style><img src=x onerror=alert(1)></style></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<select><template><img src=x onerror=alert(1)></template></select>",
    '<a href="java&#x09;script:alert(1)">x</a>',
    '<a href="&#x6A;avascript:alert(1)">x</a>',
    '<a href="javascript&colon;alert(1)">x</a>',
    '<a href=" &#1;javascript:alert(1)">x</a>',
    '<a href="//evil.example">x</a>',
    '<a href="/\\evil.example">x</a>',
    '<q cite="data:text/html,<script>alert(1)</script>">x</q>',
    "<p/onclick=alert(1)>x</p>",
    "<p onclick\x00=alert(1)>x</p>",
    "<title><img src=x onerror=alert(1)></title>",
    "<textarea></textarea><img src=x onerror=alert(1)>",
    "<xmp><p title='</xmp><img src=x onerror=alert(1)>'></xmp>",
    "<plaintext><img src=x onerror=alert(1)>",
    "<base href=javascript:/>",
    "<meta http-equiv=refresh content='0;url=javascript:alert(1)'>",
    "<link rel=stylesheet href=//evil.example/x.css>",
    "<aside/><p><mark>folded?</mark></p>",
    "<table><a href=javascript:alert(1)>x</a></table>",
    "<p>a<b>b<p>c</b>d",
    "<form><button formaction=javascript:alert(1)>x</button></form>",
]


@pytest.mark.parametrize("payload", HOSTILE)
@pytest.mark.parametrize("where", ["before", "after", "instead"])
def test_hostile_payloads_are_refused_or_harmless(payload: str, where: str) -> None:
    claim = "<p><mark>The claim.</mark></p>"
    article = {"before": payload + claim, "after": claim + payload, "instead": payload}[where]
    assert_accepted_means_harmless(page(article))


# ---------------------------------------------------------------- hypothesis articles

VOCABULARY = sorted(BODY_ELEMENTS | TOLERATED_ELEMENTS)
HOSTILE_ELEMENTS = [
    "script", "style", "noscript", "template", "iframe", "img", "image", "svg", "math",
    "textarea", "title", "xmp", "plaintext", "noembed", "noframes", "select", "form", "input",
    "button", "base", "link", "meta", "body", "html", "head", "frameset", "object", "embed",
    "isindex", "x-widget", "video", "source", "option", "mglyph", "mtext", "foreignObject",
]  # fmt: skip
ALLOWED_ATTRIBUTE_NAMES = sorted(GLOBAL_ATTRIBUTES.union(*ELEMENT_ATTRIBUTES.values()))
HOSTILE_ATTRIBUTE_NAMES = [
    "onerror", "onclick", "ONLOAD", "style", "class", "src", "srcdoc", "xlink:href",
    "formaction", "background", "action", "data-x", "is", "ping", "target",
]  # fmt: skip
URLS = [
    "https://example.com/x", "mailto:a@example.com", "/areas/x.html", "#top", "javascript:alert(1)",
    "JaVaScRiPt:alert(1)", " javascript:alert(1)", "java&#x09;script:alert(1)",
    "java&#10;script:x", "&#x6A;avascript:x", "&#106avascript:x", "javascript&colon;x",
    "&#1;javascript:x", "data:text/html,x", "vbscript:x", "//evil.example", "/\\evil.example",
    "\\\\evil.example", "&#x2F;/evil.example", "h&#x74;tps://example.com", "https&#58;//x",
    "/&#x2F;evil", "&#x23;x", "&#0;javascript:x", "", "x", "http:x",
]  # fmt: skip
VALUES = st.sampled_from(URLS) | st.sampled_from(
    ['"><img src=x onerror=alert(1)>', "</noscript><img src=x onerror=alert(1)>", "refresh",
     "content-type", "stylesheet", "memhtml-supports", "2026-07-28", "3", "&amp;", "&copy=2"]
) | st.text(max_size=8)  # fmt: skip
RAW = st.sampled_from(
    ["<!--", "-->", "<!-->", "<!--->", "--!>", "<![CDATA[", "]]>", "<?", "</html>", "</body>",
     "</article>", "<article>", "</p>", "&#x6A;", "<", ">", "&", "/>", "\x00", "\r", "\u202e",
     "text", " ", "<mark>claim</mark>"]
)  # fmt: skip


@st.composite
def attribute(draw: st.DrawFn, hostile: bool) -> str:
    names = ALLOWED_ATTRIBUTE_NAMES + (HOSTILE_ATTRIBUTE_NAMES if hostile else [])
    name = draw(st.sampled_from(names))
    value = draw(VALUES)
    quote = draw(st.sampled_from(['"', "'", ""]))
    if quote and quote in value:
        quote = '"' if quote == "'" else "'"
    if not quote and any(c in value for c in " \t\n>\"'=<`"):
        quote = '"' if '"' not in value else "'"
    separator = draw(st.sampled_from([" ", "/", "\n", " / "]))
    return f"{separator}{name}={quote}{value}{quote}" if draw(st.booleans()) else separator + name


def articles(hostile: bool) -> st.SearchStrategy[str]:
    names = st.sampled_from(VOCABULARY + HOSTILE_ELEMENTS if hostile else VOCABULARY)
    leaf = st.text(max_size=12) | RAW

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        @st.composite
        def element(draw: st.DrawFn) -> str:
            tag = draw(names)
            attrs = "".join(draw(st.lists(attribute(hostile), max_size=2)))
            inner = "".join(draw(st.lists(children, max_size=4)))
            opened = draw(st.sampled_from(["", "", "/", " /", "/ "]))  # "/>" is "self-closing"
            close = draw(st.sampled_from([f"</{tag}>", "", "/>", f"</{tag.upper()}>"]))
            return f"<{tag}{attrs}{opened}>{inner}{close}"

        return element()

    return st.recursive(leaf, extend, max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(articles(hostile=False))
def test_generated_articles_over_the_vocabulary(markup: str) -> None:
    # Allowed names with hostile values, syntax and comment edges: most are
    # accepted, which is where a parser differential would show.
    accepted = assert_accepted_means_harmless(page("<p><mark>The claim.</mark></p>" + markup))
    event("accepted" if accepted else "refused")


@settings(max_examples=150, deadline=None)
@given(articles(hostile=True))
def test_generated_hostile_articles(markup: str) -> None:
    accepted = assert_accepted_means_harmless(page("<p><mark>The claim.</mark></p>" + markup))
    event("accepted" if accepted else "refused")


# ---------------------------------------------------------------- mutations of real files


def test_mutated_memory_files(
    mutated_inputs: MutatedInputs,
    fuzz_count: FuzzCount,
    record_property: Callable[[str, object], None],
) -> None:
    # html5lib is slow (three parses of each accepted file), so a fifth of the
    # totality fuzz count: 300 by default, 20,000 with MEMHTML_FUZZ_N=100000.
    inputs = max(fuzz_count(1500) // 5, 1)
    accepted = sum(assert_accepted_means_harmless(data) for data in mutated_inputs(inputs, 7))
    record_property("differential_inputs", inputs)
    record_property("differential_accepted", accepted)
    print(f"\ndifferential: {inputs} mutated files, {accepted} accepted and rendered harmlessly")
    assert accepted > 0


# ---------------------------------------------------------------- the tokenizer itself

RAW_TEXT_NAMES = {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript",
                  "textarea", "title", "plaintext"}  # fmt: skip


TagToken = tuple[bool, str, dict[str, Any], bool]  # closing, name, attributes, self-closing


def html5lib_tags(text: str) -> list[TagToken]:
    """The tag tokens of html5lib's tokenizer, up to the first raw-text element."""
    out: list[TagToken] = []
    for token in HTMLTokenizer(text):
        if token["type"] not in (3, 4):  # StartTag, EndTag
            continue
        closing = token["type"] == 4
        attrs = {} if closing else dict(token["data"])
        out.append((closing, token["name"], attrs, not closing and token["selfClosing"]))
        if not closing and token["name"] in RAW_TEXT_NAMES:
            break  # from here on html5lib's tree builder would switch the tokenizer
    return out


def our_tags(text: str) -> list[TagToken]:
    out: list[TagToken] = []
    for tag in scan(text, every_tag=True).tags:
        if not tag.complete:
            continue  # a browser drops a tag cut off by the end of the input
        out.append((tag.closing, tag.name, dict(tag.attrs), tag.self_closing))
        if not tag.closing and tag.name in RAW_TEXT_NAMES:
            break
    return out


@settings(max_examples=300, deadline=None)
@given(articles(hostile=True))
def test_the_tokenizer_agrees_with_html5lib(markup: str) -> None:
    text = markup.replace("\r\n", "\n").replace("\r", "\n")  # html5lib's input preprocessing
    assert our_tags(text) == html5lib_tags(text)


@pytest.mark.parametrize("payload", HOSTILE)
def test_the_tokenizer_agrees_with_html5lib_on_the_payloads(payload: str) -> None:
    assert our_tags(page(payload)) == html5lib_tags(page(payload))


TOKENIZER_CASES = [
    "<p a=1/>", "<p a/>", "<p/a/b=c/>", '<p a = "b"c=d>', "<p a='b'c>", "<p =a>", "<p a==b>",
    "<p a=b=c>", '</p a=">"><b>', "<p\x00a>", '<p\na\n=\n"b">', '<!DOCTYPE x "y>"><b>',
    "<!-- -- --><b>", "<!--a--!-><b>-->", "<a href=&#x6A;&#X61;>", "<a href='&amp;&amp'>",
    "<a b=&notit;>", "<a b=&notin;>", "<a b=&copy=x>", "<a b=&copyx>", "<a b=&copy>",
    "<a b=&#x110000;>", "<a b=&#xD800;>", "<a b=&#128;>", "<a b=&#x81;>", "<a b=&#;>",
    "<a b=&#x;>", '<a b="&#0000065;">', "<a b=&#1;c>", "<a b=&#x0d;>", "<p a='>'>",
    "<p `a`=1>", "<p <img src=x>", "<p title='x'onclick=1>", "<a href=/x/>", "<x-y a=1/>",
    "<P TITLE=X/>", "< p>", "<3>", "</ p>", "</>", "</3>", "<?x>", "<!x>", "<![CDATA[x]]>",
    "<a b='&Tab;'>", "<a b='&NewLine;'>", "<a b='&colon;'>", "<a b='&amp;lt;'>",
]  # fmt: skip


@pytest.mark.parametrize("markup", TOKENIZER_CASES)
def test_the_tokenizer_agrees_with_html5lib_on_edge_cases(markup: str) -> None:
    for text in (markup, f"<b>{markup}</b><i x=1>", markup + "<i x=1>"):
        assert our_tags(text) == html5lib_tags(text), text
