"""Stored script injection: the element, attribute and URL allow-lists (issue 12).

Each case is written through both doors: a whole file given to `parse_memory`
and a caller-owned `article_html` given to `render_memory`, so the file path
and the `--article-html` path cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memhtml.contracts.errors import InvalidMemoryError
from memhtml.html import MemoryDocument, NewMemory, parse_memory, render_memory
from memhtml.html.allowlist import url_problem

CLAIM = "<p><mark>The claim.</mark></p>"
HEAD = (
    '<meta charset="utf-8">\n<title>A title</title>\n'
    '<meta name="memhtml-type" content="semantic">\n'
    '<meta name="memhtml-status" content="active">\n'
    '<meta name="memhtml-created" content="2026-07-28">\n'
    '<meta name="memhtml-updated" content="2026-07-28">\n'
)


def make(article: str, head: str = "", tail: str = "") -> str:
    return (
        f'<!doctype html>\n<html lang="en">\n<head>\n{HEAD}{head}</head>\n'
        f"<body>\n<article>{article}</article>\n</body>\n</html>\n{tail}"
    )


def codes(doc: MemoryDocument) -> set[str]:
    return {issue.code for issue in doc.violations}


def render_codes(article_html: str) -> set[str]:
    """The violation codes render_memory refuses `article_html` with (empty when it renders)."""
    new = NewMemory(
        title="t", memory_type="semantic", created="2026-07-28", updated="2026-07-28",
        article_html=article_html,
    )  # fmt: skip
    try:
        render_memory(new)
    except InvalidMemoryError as exc:
        return {v["code"] for v in exc.details["violations"]}
    return set()


def refused_through_both_doors(article: str, code: str) -> None:
    assert code in codes(parse_memory(make(article))), article
    assert code in render_codes(article), article


# ---------------------------------------------------------------- the issue's payload


NOSCRIPT = (
    '<p><mark>Claim.</mark></p><noscript><p title="</noscript><img src=x onerror=alert(1)>">'
    "</p></noscript>"
)


def test_the_noscript_payload_of_issue_12_is_refused() -> None:
    # libxml2 reads the title attribute; a browser with scripting reads raw text
    # up to </noscript> and then builds <img onerror>.
    refused_through_both_doors(NOSCRIPT, "forbidden-element")


# ---------------------------------------------------------------- elements


@pytest.mark.parametrize(
    "element",
    [
        "<script>alert(1)</script>",
        "<style>p{}</style>",
        "<noscript><p>x</p></noscript>",
        "<template><p>x</p></template>",
        "<iframe src=https://example.com></iframe>",
        "<iframe srcdoc='&lt;script&gt;alert(1)&lt;/script&gt;'></iframe>",
        "<frame src=x>",
        "<frameset></frameset>",
        "<object data=x></object>",
        "<embed src=x>",
        "<applet code=x></applet>",
        "<img src=x>",
        "<image src=x>",  # a browser renames it <img>
        "<video src=x></video>",
        "<audio src=x></audio>",
        "<source src=x>",
        "<track src=x>",
        "<picture></picture>",
        "<svg><a href=x>y</a></svg>",
        "<math><mi>x</mi></math>",
        "<form action=https://example.com><button>go</button></form>",
        "<input value=x>",
        "<button>x</button>",
        "<select><option>x</option></select>",
        "<isindex>",  # a browser builds a <form> with an <input>
        "<map><area href=x></map>",
        "<canvas></canvas>",
        "<dialog open>x</dialog>",
        "<marquee>x</marquee>",
        "<portal src=x></portal>",
        "<x-widget>x</x-widget>",  # an embedding page may upgrade a custom element
        "<link rel=stylesheet href=https://example.com/x.css>",
        '<meta http-equiv="refresh" content="0;url=https://example.com">',
        '<meta name="description" content="x">',
        "<base href=https://example.com/>",
        "<title>second</title>",
        "<xmp>x</xmp>",
        "<plaintext>x",
        "<noembed>x</noembed>",
        "<noframes>x</noframes>",
        "<textarea>x</textarea>",
    ],
)
def test_elements_that_execute_load_navigate_or_parse_differently_are_refused(
    element: str,
) -> None:
    article = CLAIM + element
    doc = parse_memory(make(article))
    assert codes(doc) & {"forbidden-element", "title"}, (element, doc.violations)
    assert render_codes(article) & {"forbidden-element", "title"}, element


@pytest.mark.parametrize(
    "payload",
    [
        '<p title="</xmp><img src=x onerror=alert(1)>"></p>',
        '<p title="</textarea><img src=x onerror=alert(1)>"></p>',
        '<p title="</title><img src=x onerror=alert(1)>"></p>',
        '<p title="</noembed><img src=x onerror=alert(1)>"></p>',
        '<p title="</noframes><img src=x onerror=alert(1)>"></p>',
        '<p title="</iframe><img src=x onerror=alert(1)>"></p>',
    ],
)
def test_raw_text_elements_are_refused_outright(payload: str) -> None:
    tag = payload.split("</", 1)[1].split(">", 1)[0]
    refused_through_both_doors(f"{CLAIM}<{tag}>{payload}</{tag}>", "forbidden-element")


@pytest.mark.parametrize(
    "comment",
    [
        "<!--><img src=x onerror=alert(1)>-->",
        "<!---><img src=x onerror=alert(1)>-->",
        "<!-- a --!><img src=x onerror=alert(1)>-->",
        "<![CDATA[><img src=x onerror=alert(1)>]]>",
        "<?x ><img src=x onerror=alert(1)>?>",
    ],
)
def test_comments_that_end_early_in_a_browser_are_read_as_a_browser_reads_them(
    comment: str,
) -> None:
    refused_through_both_doors(CLAIM + comment, "forbidden-element")


def test_harmless_elements_outside_the_vocabulary_only_warn() -> None:
    article = (
        CLAIM + "<h2>Heading</h2><p><b>b</b> <i>i</i> <u>u</u> <s>s</s> <small>s</small>"
        " H<sub>2</sub>O x<sup>2</sup> <ins>new</ins> <del>old</del><br><wbr></p><hr>"
        "<blockquote cite='https://example.com/q'><p>quoted</p></blockquote>"
        "<header>h</header><footer>f</footer><div>d</div><span>s</span>"
    )
    doc = parse_memory(make(article))
    assert doc.ok, doc.violations
    warned = {w.message.split(">")[0].lstrip("<") for w in doc.warnings}
    assert {"h2", "b", "i", "blockquote", "div", "span"} <= warned
    assert render_codes(article) == set()


def test_content_after_the_html_end_tag_is_read_and_refused() -> None:
    # libxml2 stops building the tree at </html>; a browser goes on.
    doc = parse_memory(make(CLAIM, tail="<script>alert(1)</script>\n"))
    assert "forbidden-element" in codes(doc)
    hidden = parse_memory(make(CLAIM, tail="<p>shown by a browser, never indexed</p>\n"))
    assert "after-html" in codes(hidden)
    refused_through_both_doors(
        CLAIM + "</article></body></html><img src=x onerror=alert(1)><article>",
        "forbidden-element",
    )
    assert "after-html" in render_codes(CLAIM + "</html><p>hidden</p>")
    assert parse_memory(make(CLAIM, tail="<!-- trailing comment -->\n\n")).ok


def test_stray_html_and_body_start_tags_are_read_as_a_browser_merges_them() -> None:
    # libxml2 drops a second <body>/<html> tag; a browser copies its attributes.
    refused_through_both_doors(CLAIM + "<body onload=alert(1)>", "forbidden-attribute")
    refused_through_both_doors(CLAIM + "<html onmouseover=alert(1)>", "forbidden-attribute")
    refused_through_both_doors(
        CLAIM + "<body background=https://example.com/x.png>", "forbidden-attribute"
    )


# ---------------------------------------------------------------- attributes


@pytest.mark.parametrize(
    "markup",
    [
        '<p onclick="steal()">x</p>',
        "<p ONMOUSEOVER=steal()>x</p>",
        "<p/onclick=steal()>x</p>",
        '<p style="color:red">x</p>',
        '<p class="lead">x</p>',
        '<a href="/x" target="_blank">x</a>',
        '<a href="/x" ping="https://example.com/track">x</a>',
        '<a href="/x" download>x</a>',
        '<a xlink:href="javascript:alert(1)">x</a>',
        '<p srcdoc="x">x</p>',
        '<p formaction="javascript:alert(1)">x</p>',
        '<table background="https://example.com/x.png"><tr><td>x</td></tr></table>',
        '<p data-hx-get="/steal">x</p>',
        '<p contenteditable="true">x</p>',
        '<p tabindex="1">x</p>',
        '<p `onclick`="x">x</p>',
        '<code data-lang="py" data-x="1">x</code>',
        '<time cite="https://example.com">x</time>',
    ],
)
def test_attributes_outside_the_allow_list_are_refused(markup: str) -> None:
    refused_through_both_doors(CLAIM + markup, "forbidden-attribute")


def test_allowed_attributes() -> None:
    article = (
        '<p id="lead" lang="en" dir="ltr" title="t"><mark>Claim <abbr title="x">X</abbr>.'
        '</mark> <time datetime="2026-07-28">then</time> <data value="3">three</data>'
        ' <q cite="https://example.com/a">q</q> <a href="#lead">here</a>'
        ' <code data-lang="sql">select 1</code> <dfn title="d">term</dfn></p>'
        '<table><colgroup span="2"><col span="1"></colgroup><tr><th scope="col" abbr="a"'
        ' colspan="2">h</th></tr><tr><td rowspan="1" colspan="2" headers="x">v</td></tr></table>'
        '<ol start="3" reversed type="a"><li value="4">x</li></ol>'
        "<details open><summary>s</summary><p>d</p></details>"
    )
    doc = parse_memory(make(article))
    assert doc.ok, doc.violations
    assert render_codes(article) == set()


# ---------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:alert(1)",
        "&#x20;&#x09;javascript:alert(1)",
        "&#1;javascript:alert(1)",
        "java&#x09;script:alert(1)",
        "java&#10;script:alert(1)",
        "java&NewLine;script:alert(1)",
        "&#x6A;avascript:alert(1)",
        "&#106avascript:alert(1)",
        "javascript&colon;alert(1)",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "DATA:text/html,x",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "//evil.example/x",
        "/\\evil.example/x",
        "\\\\evil.example/x",
        "&#x2F;/evil.example/x",
        "areas/x.html",
        "",
    ],
)
@pytest.mark.parametrize("template", ['<a href="{}">x</a>', '<q cite="{}">x</q>'])
def test_refused_urls(url: str, template: str) -> None:
    refused_through_both_doors(CLAIM + template.format(url), "forbidden-url")


def test_a_control_character_before_the_scheme_is_refused_in_a_file() -> None:
    # render_memory refuses C0 controls anyway; a file can still carry one.
    doc = parse_memory(make(CLAIM + '<a href="\x01javascript:alert(1)">x</a>'))
    assert "forbidden-url" in codes(doc)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a?b=1&amp;c=2#d",
        "HTTP://example.com",
        "mailto:ops@example.com",
        "/areas/x.html",
        "#fragment",
        "  https://example.com  ",
    ],
)
def test_allowed_urls(url: str) -> None:
    article = f'{CLAIM}<p><a href="{url}">x</a> <q cite="{url}">y</q></p>'
    assert parse_memory(make(article)).ok
    assert render_codes(article) == set()


def test_url_problem_decides_on_the_decoded_value() -> None:
    assert url_problem("https://example.com") is None
    assert url_problem("\x00\x1f javascript:x") is not None
    assert url_problem("jav\tascr\nipt:x") is not None
    assert url_problem("/ok") is None
    assert url_problem("/\t/evil") is not None


# ---------------------------------------------------------------- head


@pytest.mark.parametrize(
    "head",
    [
        '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
        '<meta http-equiv="Refresh" content="5">',
        '<meta http-equiv="set-cookie" content="a=b">',
        '<base href="https://example.com/">',
        '<link rel="stylesheet" href="https://example.com/x.css">',
        '<link rel="icon" href="/x.png">',
        '<link rel="memhtml-supports stylesheet" href="/areas/x.html">',
        '<link rel="preload" href="/x.js" as="script">',
        '<meta property="og:title" content="x">',
        "<noscript><p>x</p></noscript>",
        "<template><p>x</p></template>",
    ],
)
def test_the_head_allows_only_the_formats_own_items(head: str) -> None:
    doc = parse_memory(make(CLAIM, head=head + "\n"))
    assert codes(doc) & {"forbidden-element", "forbidden-attribute"}, (head, doc.violations)


def test_foreign_name_metas_and_a_utf8_content_type_are_still_fine() -> None:
    head = (
        '<meta name="description" content="d">\n'
        '<meta name="viewport" content="width=device-width">\n'
        '<meta http-equiv="Content-Type" content="text/html; charset=utf-8">\n'
    )
    doc = parse_memory(make(CLAIM, head=head))
    assert doc.ok and doc.warnings == ()
    latin = '<meta http-equiv="content-type" content="text/html; charset=iso-8859-1">\n'
    assert "encoding" in codes(parse_memory(make(CLAIM, head=latin)))


# ---------------------------------------------------------------- read's article_html


def test_article_html_is_sliced_at_real_tags_only() -> None:
    # The only "<article>" the old regex saw sits in an attribute value: slicing
    # there handed read() an <img onerror> as the article's inner HTML.
    text = make("").replace(
        "<article></article>",
        '<article/title="a"><p><mark>x</mark></p>'
        '<p title="<article><img src=x onerror=alert(1)>">y</p></article>',
    )
    doc = parse_memory(text)
    assert doc.ok, doc.violations
    assert doc.article_html == (
        '<p><mark>x</mark></p><p title="<article><img src=x onerror=alert(1)>">y</p>'
    )


# ---------------------------------------------------------------- tree differentials


def test_a_self_closing_non_void_element_is_refused() -> None:
    # libxml2 closes <aside/> at once, so the claim looked unfolded; a browser
    # ignores the "/" and renders the claim inside the aside.
    article = "<aside/><p><mark>The claim.</mark></p>"
    refused_through_both_doors(article, "self-closing")
    fine = CLAIM + "<p>one<br/>two</p><hr/>"
    assert parse_memory(make(fine)).ok
    head = (
        '<meta name="description" content="d" />\n'
        '<link rel="memhtml-supports" href="/areas/x.html"/>\n'
    )
    assert parse_memory(make(CLAIM, head=head)).ok


# ---------------------------------------------------------------- bounds


def test_too_many_attributes_on_one_tag_is_refused_before_libxml2_reads_it() -> None:
    # libxml2's duplicate-attribute check is quadratic: 100,000 distinct
    # attributes on one tag took it over 20 seconds.
    wide = "<p " + " ".join(f"title{i}=x" for i in range(257)) + "><mark>x</mark></p>"
    doc = parse_memory(make(wide))
    assert "too-many-attributes" in codes(doc)
    repeated = "<p " + " ".join("title=x" for _ in range(1000)) + "><mark>x</mark></p>"
    assert parse_memory(make(repeated)).ok  # a repeat is dropped, as HTML5 drops it


def test_findings_are_listed_at_most_fifty_per_code() -> None:
    article = CLAIM + "".join(f"<x-{i}>" for i in range(500))
    doc = parse_memory(make(article))
    listed = [i for i in doc.violations if i.code == "forbidden-element"]
    assert len(listed) == 51
    assert listed[-1].message == "further forbidden-element findings are not listed"


def test_the_vocabulary_tour_fixture_is_valid() -> None:
    # The fuzzers' richest seed: every allowed element and attribute at least once.
    doc = parse_memory((Path(__file__).parent / "fixtures" / "vocabulary_tour.html").read_bytes())
    assert doc.ok, doc.violations
    assert {w.code for w in doc.warnings} == {"unknown-element"}
    assert ("closed vocabulary", "https://example.com/notes#allow") in [
        (c.text, c.url) for c in doc.citations
    ]
