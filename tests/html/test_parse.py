"""parse_memory on the reference example, on each rule, and on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhtml.html import Citation, Facet, Link, MemoryDocument, parse_memory

FIXTURES = Path(__file__).parent / "fixtures"


def codes(doc: MemoryDocument) -> set[str]:
    return {issue.code for issue in doc.violations}


def warning_codes(doc: MemoryDocument) -> set[str]:
    return {issue.code for issue in doc.warnings}


HEAD = (
    '<meta name="memhtml-type" content="{type}">\n'
    '<meta name="memhtml-status" content="active">\n'
    '<meta name="memhtml-created" content="2026-07-28">\n'
    '<meta name="memhtml-updated" content="2026-07-28T10:00:00Z">\n'
)


def make(
    article: str = "<p><mark>A claim.</mark></p>", head: str = "", type_: str = "semantic"
) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<title>A title</title>\n"
        + HEAD.format(type=type_)
        + head
        + f"</head>\n<body>\n<article>{article}</article>\n</body>\n</html>\n"
    )


def test_a_minimal_file_is_valid() -> None:
    doc = parse_memory(make())
    assert doc.ok, doc.violations
    assert doc.warnings == ()
    assert doc.title == "A title"
    assert doc.memory_type == "semantic"
    assert doc.gist == "A claim."


# ---------------------------------------------------------------- reference example


@pytest.fixture(scope="module")
def reference() -> MemoryDocument:
    return parse_memory((FIXTURES / "reference_example.html").read_bytes())


def test_reference_example_is_valid(reference: MemoryDocument) -> None:
    assert reference.violations == ()
    assert reference.warnings == ()
    assert reference.ok


def test_reference_example_fields(reference: MemoryDocument) -> None:
    assert reference.gist == (
        "If a prod rollback is issued, drain the VIP before reverting the deploy."
    )
    assert reference.event_at == "2026-07-28"
    assert reference.memory_type == "procedural"
    assert reference.facets == (
        Facet("Applies to", "ALB/NLB target-group deploys", None),
        Facet("Drain window", "two minutes", 120.0),
    )
    assert reference.citations == (Citation("checkout-api sev2", None),)
    assert reference.entities == (("service", "checkout-api"), ("cloud", "AWS"))
    assert reference.concepts == ("connection draining",)
    assert reference.code_langs == ("shell",)
    assert ("concept", "connection draining") in reference.indexed_entities
    assert ("lang", "shell") in reference.indexed_entities
    assert reference.summaries == ("How this was learned",)
    assert reference.details_text[0].startswith("Three rollbacks replayed")
    assert "How this was learned" not in reference.details_text[0]
    assert reference.asides == ("Fly.io and Cloud Run drain automatically; this is AWS-specific.",)
    assert reference.links == (
        Link(
            "caused_by",
            "/areas/incidents/checkout-api-sev2.html",
            "areas/incidents/checkout-api-sev2.html",
        ),
    )
    assert reference.tags == ("rollback", "load-balancing")
    assert reference.aliases == ("VIP drain rule",)
    assert reference.confidence == 0.9
    assert reference.importance == 8
    assert reference.author == "ops-agent"
    assert reference.article_html.lstrip().startswith("<p><mark>If a prod rollback")


# ---------------------------------------------------------------- bad input


def test_malformed_html_is_reported_not_raised() -> None:
    doc = parse_memory("<html><head><title>x</tit<body><article><p><mark>unclosed")
    assert not doc.ok
    assert "missing-meta" in codes(doc)


def test_non_utf8_bytes() -> None:
    data = make().replace("A claim.", "Caf\u00e9 claim.").encode("latin-1")
    doc = parse_memory(data)
    assert "encoding" in codes(doc)


def test_bom_is_fine() -> None:
    assert parse_memory(b"\xef\xbb\xbf" + make().encode()).ok


def test_a_declared_charset_other_than_utf8() -> None:
    doc = parse_memory(make().replace('charset="utf-8"', 'charset="iso-8859-1"'))
    assert "encoding" in codes(doc)


def test_fifty_megabytes_is_refused_before_parsing() -> None:
    big = b"<p>" + b"x" * (50 * 1024 * 1024)
    doc = parse_memory(big)
    assert codes(doc) == {"too-large"}
    assert parse_memory(big.decode()).violations[0].code == "too-large"


def test_max_bytes_is_a_parameter() -> None:
    assert "too-large" in codes(parse_memory(make(), max_bytes=100))
    assert parse_memory(make(), max_bytes=10_000).ok


def test_two_marks() -> None:
    doc = parse_memory(make("<p><mark>one</mark> and <mark>two</mark></p>"))
    assert "mark-count" in codes(doc)


def test_no_mark_and_empty_mark() -> None:
    assert "mark-count" in codes(parse_memory(make("<p>no claim</p>")))
    assert "mark-count" in codes(parse_memory(make("<p><mark> <code>x()</code> </mark></p>")))
    # the gist leaves code out: a command line is body text, never the claim
    assert parse_memory(make("<p><mark>run <code>x()</code></mark></p>")).gist == "run"
    assert "mark-count" in codes(parse_memory(make("<p><mark>\u00a0</mark></p>")))


@pytest.mark.parametrize(
    "article",
    [
        "<p>first</p><p><mark>second</mark></p>",
        "<aside><p><mark>aside</mark></p></aside>",
        "<p>lead</p><details><summary>s</summary><p><mark>folded</mark></p></details>",
        "<dl><dt><mark>term</mark></dt><dd>v</dd></dl>",
        "<aside><p>note</p></aside><p><mark>the first p is inside the aside</mark></p>",
    ],
)
def test_mark_placement(article: str) -> None:
    assert "mark-placement" in codes(parse_memory(make(article)))


@pytest.mark.parametrize(
    "article",
    [
        "<ul><li><mark>in the first item</mark></li><li>two</li></ul>",
        "<section><p><mark>in a section</mark></p></section>",
        "<dl><dt>k</dt><dd>v</dd></dl><p><mark>after a list of facets</mark></p>",
        "<p>Lead <strong><mark>nested inline</mark></strong>.</p>",
    ],
)
def test_mark_placement_accepted(article: str) -> None:
    assert parse_memory(make(article)).ok


def test_script_is_forbidden() -> None:
    doc = parse_memory(make("<p><mark>x</mark></p><script>alert(1)</script>"))
    assert "forbidden-element" in codes(doc)
    head_script = parse_memory(make(head="<script>alert(1)</script>\n"))
    assert "forbidden-element" in codes(head_script)
    assert "forbidden-element" in codes(parse_memory(make(head="<style>p{}</style>\n")))


def test_onclick_is_forbidden() -> None:
    doc = parse_memory(make('<p onclick="steal()"><mark>x</mark></p>'))
    assert "forbidden-attribute" in codes(doc)


def test_class_and_style_are_forbidden() -> None:
    doc = parse_memory(make('<p class="lead"><mark style="color:red">x</mark></p>'))
    assert [i.code for i in doc.violations].count("forbidden-attribute") == 2


def test_unknown_memory_type() -> None:
    doc = parse_memory(make(type_="musing"))
    assert "unknown-type" in codes(doc)
    assert doc.memory_type is None


def test_unsortable_valid_until_is_a_violation() -> None:
    doc = parse_memory(make(head='<meta name="memhtml-valid-until" content="July 4">\n'))
    assert "bad-datetime" in codes(doc)
    assert doc.valid_until is None


def test_dotdot_in_a_link_href() -> None:
    doc = parse_memory(make(head='<link rel="memhtml-supports" href="/areas/../etc/x.html">\n'))
    assert "bad-link" in codes(doc)
    assert doc.links == ()


@pytest.mark.parametrize(
    "link",
    [
        '<link rel="memhtml-likes" href="/areas/x.html">',
        '<link rel="memhtml-supports" href="https://example.com/areas/x.html">',
        '<link rel="memhtml-supports" href="areas/x.html">',
        '<link rel="memhtml-supports">',
    ],
)
def test_bad_links(link: str) -> None:
    assert "bad-link" in codes(parse_memory(make(head=link + "\n")))


def test_foreign_metas_are_ignored_and_foreign_links_refused() -> None:
    doc = parse_memory(make(head='<meta name="description" content="d">\n'))
    assert doc.ok and doc.warnings == () and doc.links == ()
    # A link other than the format's own can load a stylesheet or an icon (issue 12).
    icon = parse_memory(make(head='<link rel="icon" href="/x.png">\n'))
    assert "forbidden-element" in codes(icon) and icon.links == ()


def test_every_violation_in_one_pass() -> None:
    text = (
        "<html><head><title></title>"
        '<meta name="memhtml-type" content="musing">'
        '<meta name="memhtml-valid-until" content="July 4">'
        '<link rel="memhtml-supports" href="/../x.html"></head>'
        '<body><article><p class="x" onclick="y()">no mark</p><script>1</script></article>'
        "<article></article></body></html>"
    )
    assert codes(parse_memory(text)) >= {
        "title",
        "unknown-type",
        "bad-datetime",
        "bad-link",
        "forbidden-attribute",
        "forbidden-element",
        "article-count",
        "mark-count",
        "missing-meta",
    }


@pytest.mark.parametrize(
    ("meta", "value"),
    [
        ("memhtml-confidence", "1.5"),
        ("memhtml-confidence", "high"),
        ("memhtml-importance", "11"),
        ("memhtml-importance", "7.5"),
        ("memhtml-reprieves", "-1"),
        ("memhtml-content-hash", "md5:abc"),
        ("memhtml-needs-revision", "perhaps"),
        ("memhtml-superseded-by", "/nowhere/x.txt"),
        ("memhtml-author", ""),
    ],
)
def test_malformed_optional_scalars_are_dropped(meta: str, value: str) -> None:
    doc = parse_memory(make(head=f'<meta name="{meta}" content="{value}">\n'))
    assert doc.ok
    assert "dropped-meta" in warning_codes(doc)
    assert meta not in doc.metas


def test_repeated_scalar_and_missing_required() -> None:
    doc = parse_memory(
        make(
            head='<meta name="memhtml-importance" content="3">'
            '<meta name="memhtml-importance" content="4">'
        )
    )
    assert "duplicate-meta" in codes(doc)
    stripped = make().replace('<meta name="memhtml-status" content="active">\n', "")
    assert "missing-meta" in codes(parse_memory(stripped))


def test_bad_required_values() -> None:
    text = make().replace('content="active"', 'content="dormant"')
    assert "bad-meta-value" in codes(parse_memory(text))
    text = make().replace('content="2026-07-28T10:00:00Z"', 'content="2026-07-28 10:00"')
    assert "bad-datetime" in codes(parse_memory(text))


def test_task_status_rules() -> None:
    task = '<meta name="memhtml-task-status" content="doing">\n'
    assert parse_memory(make(head=task, type_="task")).task_status == "doing"
    assert "task-status" in codes(parse_memory(make(type_="task")))
    assert "task-status" in codes(parse_memory(make(head=task)))
    bad = parse_memory(make(head=task.replace("doing", "later"), type_="task"))
    assert "task-status" in codes(bad) and "dropped-meta" in warning_codes(bad)


def test_entities_and_unknown_metas() -> None:
    doc = parse_memory(
        make(
            head='<meta name="memhtml-entity" content="person: Ada Lovelace">\n'
            '<meta name="memhtml-entity" content="nocolon">\n'
            '<meta name="memhtml-mood" content="sunny">\n'
        )
    )
    assert doc.entities == (("person", "Ada Lovelace"),)
    assert {"dropped-meta", "unknown-meta"} <= warning_codes(doc)
    assert doc.ok


def test_unknown_elements_warn_once_per_name() -> None:
    doc = parse_memory(
        make("<p><mark>x</mark> <b>bold</b> <b>again</b> <span>s</span></p><div>d</div>")
    )
    assert doc.ok
    unknown = [w for w in doc.warnings if w.code == "unknown-element"]
    assert len(unknown) == 3  # b, span, div
    in_figure = parse_memory(
        make("<p><mark>x</mark></p><figure><div><span>s</span></div></figure>")
    )
    assert in_figure.warnings == ()


def test_event_at_takes_the_wider_iso_grammar() -> None:
    doc = parse_memory(
        make('<p><mark>x</mark> at <time datetime="2026-07-28 14:00+02:00">2pm</time></p>')
    )
    assert doc.event_at == "2026-07-28T12:00:00Z"
    bad = parse_memory(make('<p><mark>x</mark> <time datetime="last tuesday">then</time></p>'))
    assert "bad-datetime" in codes(bad)
    assert bad.event_at is None


def test_quotations_and_numeric_facets() -> None:
    doc = parse_memory(
        make(
            '<p><mark>x</mark> <q cite="https://example.com/pm">drain first</q> <q>said</q></p>'
            '<dl><dt>Retries</dt><dt>Attempts</dt><dd><data value="three">3</data></dd>'
            '<dd><data value="x">4</data> <data value="4.5">4.5</data></dd></dl>'
        )
    )
    assert doc.citations == (
        Citation("drain first", "https://example.com/pm"),
        Citation("said", None),
    )
    # a dd is named by the nearest dt before it; the first data value that parses wins
    assert doc.facets == (Facet("Attempts", "3", None), Facet("Attempts", "4 4.5", 4.5))


def test_convenience_properties() -> None:
    head = (
        '<meta name="memhtml-reprieves" content="2">\n'
        '<meta name="memhtml-needs-revision" content="true">\n'
        '<meta name="memhtml-superseded-by" content="/areas/new.html">\n'
        '<meta name="memhtml-session" content="s1">\n'
        '<meta name="memhtml-prompt" content="p1">\n'
        '<meta name="memhtml-turn" content="t1">\n'
        '<meta name="memhtml-archived" content="2026-08-01">\n'
        '<meta name="memhtml-valid-from" content="2026-01-01">\n'
        '<meta name="memhtml-due" content="2026-09-01T00:00:00Z">\n'
    )
    doc = parse_memory(make(head=head))
    assert doc.ok, doc.violations
    assert doc.reprieves == 2
    assert doc.needs_revision is True
    assert doc.superseded_by == "areas/new.html"
    assert (doc.session_id, doc.prompt_id, doc.turn_uuid) == ("s1", "p1", "t1")
    assert (doc.archived_at, doc.valid_from, doc.due) == (
        "2026-08-01",
        "2026-01-01",
        "2026-09-01T00:00:00Z",
    )
    assert parse_memory(make()).needs_revision is False


def test_content_outside_the_article_and_stale_hash_warn() -> None:
    text = make().replace("</article>", "</article>\n<p>stray</p>")
    assert "outside-article" in warning_codes(parse_memory(text))
    stale = make(head='<meta name="memhtml-content-hash" content="sha256:' + "0" * 64 + '">\n')
    assert "content-hash-mismatch" in warning_codes(parse_memory(stale))


@pytest.mark.parametrize(
    "data",
    [b"", "", "   ", "<<<>>>", b"\x00\x01\xff\xfe", "\x00<html>\x00", "<p>" * 5000, "\ud800"],
)
def test_garbage_never_raises(data: bytes | str) -> None:
    doc = parse_memory(data)
    assert isinstance(doc, MemoryDocument)
    assert not doc.ok
    assert not any("parser failed" in v.message for v in doc.violations)


def test_deep_nesting_is_a_violation() -> None:
    deep = make("<p><mark>x</mark></p>" + "<section>" * 2000 + "y" + "</section>" * 2000)
    doc = parse_memory(deep)
    assert "too-deep" in codes(doc)


def test_optional_head_and_body_tags_may_be_omitted() -> None:
    # libxml2 keeps such an article inside the head; it is still the article.
    text = make().replace("<head>\n", "").replace("</head>\n<body>\n", "")
    text = text.replace("</body>\n", "")
    doc = parse_memory(text)
    assert doc.ok, doc.violations
    assert doc.warnings == ()
    assert doc.gist == "A claim."


def test_the_documented_example_is_valid() -> None:
    doc_path = Path(__file__).resolve().parents[2] / "docs" / "format.md"
    text = doc_path.read_text(encoding="utf-8")
    example = text[text.index("## A complete example") :]
    start = example.index("```html") + len("```html")
    doc = parse_memory(example[start : example.index("```", start)])
    assert doc.ok and doc.warnings == ()
    assert doc.event_at == "2026-07-28"
    assert ("lang", "shell") in doc.indexed_entities


def test_nested_folds_quotes_and_facets_add_no_entry_of_their_own() -> None:
    # Each nested one re-read the same text: 250 nested asides took 46 s.
    doc = parse_memory(
        make(
            "<p><mark>x</mark> <q>outer <q>inner</q></q> <cite>a <cite>b</cite></cite></p>"
            "<aside><p>one</p><aside><p>two</p></aside></aside>"
            "<details><summary>s1</summary><details><summary>s2</summary>deep</details></details>"
            "<dl><dt>k</dt><dd>v <dl><dt>k2</dt><dd>v2</dd></dl></dd></dl>"
        )
    )
    assert doc.ok, doc.violations
    assert doc.citations == (Citation("outer inner", None), Citation("a b", None))
    assert doc.asides == ("one two",)
    assert doc.summaries == ("s1", "s2")
    assert doc.details_text == ("s2 deep",)
    assert doc.facets == (Facet("k", "v k2 v2", None),)
