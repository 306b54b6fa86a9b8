"""The published site's rendering: pure rows in, `{path: bytes}` out."""

from __future__ import annotations

import re

import pytest

from memhtml.html.listing import (
    LISTING_NAME,
    SITEMAP_NAME,
    STYLESHEET_NAME,
    ListedMemory,
    ListedSkip,
    href,
    render_site,
    render_sitemap,
)


def _m(path: str, **fields: object) -> ListedMemory:
    base: dict[str, object] = {
        "title": path.rsplit("/", 1)[-1].removesuffix(".html").title(),
        "gist": f"Claim of {path}.",
        "memory_type": "semantic",
        "status": "archived" if path.startswith("archive/") else "active",
        "updated_at": "2026-01-02T03:04:05Z",
    }
    base.update(fields)
    return ListedMemory(path=path, **base)  # type: ignore[arg-type]


def _page(site: dict[str, bytes], path: str) -> str:
    return site[path].decode("utf-8")


@pytest.mark.parametrize(
    ("from_dir", "target", "expected"),
    [
        ("", "areas/x.html", "areas/x.html"),
        ("areas", "areas/x.html", "x.html"),
        ("areas/a/b", "areas/x.html", "../../x.html"),
        ("areas/a", "archive/2025/areas/a/x.html", "../../archive/2025/areas/a/x.html"),
        ("areas", "areas/odd name#1%.html", "odd%20name%231%25.html"),
        ("projects/p", "memhtml.css", "../../memhtml.css"),
    ],
)
def test_hrefs_are_relative_to_the_page_and_escaped(
    from_dir: str, target: str, expected: str
) -> None:
    assert href(from_dir, target) == expected


def test_a_fragment_is_escaped_as_a_component() -> None:
    assert href("areas", "areas/b/index.html", "x y.html") == "b/index.html#x%20y.html"


def test_one_listing_per_directory_and_each_ancestor_then_sitemap_and_stylesheet() -> None:
    site = render_site([_m("areas/deep/er/x.html"), _m("resources/y.html")])
    assert list(site) == sorted(site)
    assert set(site) == {
        LISTING_NAME,
        "areas/index.html",
        "areas/deep/index.html",
        "areas/deep/er/index.html",
        "resources/index.html",
        SITEMAP_NAME,
        STYLESHEET_NAME,
    }
    root = _page(site, LISTING_NAME)
    assert '<li><a href="areas/index.html">areas/</a> <small>1 memory</small></li>' in root
    assert '<a href="deep/index.html">areas/deep/</a>' in _page(site, "areas/index.html")


def test_the_entry_keeps_the_original_listing_shape() -> None:
    site = render_site([_m("areas/x.html", memory_type="procedural")])
    page = _page(site, "areas/index.html")
    assert "<title>areas</title>" in page
    assert "<p><mark>areas holds 1 memory.</mark>\nThis listing is generated from the tree" in page
    assert re.search(
        r'<a href="x\.html">X</a> <code>procedural</code>'
        r' <time datetime="2026-01-02T03:04:05Z">2026-01-02T03:04:05Z</time>'
        r' <span class="status">active</span><br><code>x\.html</code> — Claim of areas/x\.html\.',
        page,
    )
    assert "<title>Memory</title>" in _page(site, LISTING_NAME)
    assert "Memory holds 1 memory." in _page(site, LISTING_NAME)  # subdirectories count


def test_a_directory_counts_the_memories_below_it() -> None:
    site = render_site([_m("areas/a.html"), _m("areas/b/c.html"), _m("areas/b/d/e.html")])
    assert "<mark>areas holds 3 memories.</mark>" in _page(site, "areas/index.html")
    assert "<mark>areas/b/d holds 1 memory.</mark>" in _page(site, "areas/b/d/index.html")
    assert '<a href="b/index.html">areas/b/</a> <small>2 memories</small>' in _page(
        site, "areas/index.html"
    )


def test_every_href_is_relative() -> None:
    site = render_site(
        [
            _m("areas/a/x.html", links=(("caused_by", "archive/2025/areas/a/y.html"),)),
            _m("archive/2025/areas/a/y.html", superseded_by="areas/a/x.html"),
        ],
        [ListedSkip("projects/p/dup.html", "duplicate content of areas/a/x.html")],
    )
    for path, data in site.items():
        if path.endswith(".html"):
            for url in re.findall(r'href="([^"]*)"', data.decode()):
                assert not url.startswith(("/", "http:", "https:", "file:")), (path, url)


def test_archived_memories_are_marked_and_say_what_superseded_them() -> None:
    site = render_site(
        [
            _m("areas/a/x.html", links=(("supersedes", "archive/2025/areas/a/x.html"),)),
            _m(
                "archive/2025/areas/a/x.html",
                archived_at="2025-06-01T00:00:00Z",
                superseded_by="areas/a/x.html",
            ),
        ]
    )
    old = _page(site, "archive/2025/areas/a/index.html")
    assert '<li id="x.html" class="archived">' in old
    assert '<strong class="status archived">archived</strong>' in old
    assert (
        '<span class="rel">superseded by</span>'
        ' <a href="../../../../areas/a/index.html#x.html">X</a>' in old
    )
    new = _page(site, "areas/a/index.html")
    assert (
        '<span class="rel">supersedes</span>'
        ' <a href="../../archive/2025/areas/a/index.html#x.html">X</a>' in new
    )
    assert "In all: 2 memories (1 active, 1 archived)" in _page(site, LISTING_NAME)


def test_authored_links_point_at_the_target_entry_and_a_missing_target_is_text() -> None:
    site = render_site(
        [
            _m(
                "areas/a.html",
                links=(("caused_by", "resources/b.html"), ("relates_to", "areas/gone.html")),
            ),
            _m("resources/b.html", title="Bee"),
        ]
    )
    page = _page(site, "areas/index.html")
    assert (
        '<span class="rel">caused by</span> <a href="../resources/index.html#b.html">Bee</a>'
        in (page)
    )
    assert '<code>areas/gone.html</code> <em class="missing">(not in the tree)</em>' in page
    assert 'href="gone.html"' not in page


def test_unparseable_files_are_listed_never_linked_and_duplicates_point_at_the_holder() -> None:
    site = render_site(
        [_m("areas/x.html")],
        [
            ListedSkip("areas/broken.html", "violations: forbidden-element <script>"),
            ListedSkip("areas/only/dup.html", "duplicate content of areas/x.html"),
        ],
    )
    page = _page(site, "areas/index.html")
    assert '<li id="broken.html"><code>broken.html</code>' in page
    assert "unparseable</strong> — violations: forbidden-element &lt;script&gt;" in page
    assert 'href="broken.html"' not in page
    only = _page(site, "areas/only/index.html")  # a directory holding only a skipped file
    assert '<a href="dup.html"><code>dup.html</code></a>' in only
    assert 'duplicate</span> of <a href="../index.html#x.html">X</a>' in only
    assert "1 file not indexed (1 unparseable, 0 duplicate)" not in _page(site, LISTING_NAME)
    assert "2 files not indexed (1 unparseable, 1 duplicate)" in _page(site, LISTING_NAME)


def test_text_and_attributes_are_escaped() -> None:
    hostile = "<script>alert(\"x\")</script> & 'q'"
    site = render_site([_m("areas/x.html", title=hostile, gist=hostile)])
    page = _page(site, "areas/index.html")
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)" not in page  # text keeps its quotes readable
    assert "&lt;script&gt;alert(\"x\")&lt;/script&gt; &amp; 'q'" in page


def test_rendering_is_deterministic_and_independent_of_input_order() -> None:
    rows = [_m(f"areas/t{i % 3}/m{i}.html") for i in range(12)]
    skips = [ListedSkip("areas/t1/bad.html", "not-html")]
    first = render_site(rows, skips)
    assert render_site(list(reversed(rows)), skips) == first
    assert not any(b"generated at" in data for data in first.values())


def test_sitemap_lists_every_memory_relative_and_escaped() -> None:
    xml = render_sitemap([_m("resources/b&c.html"), _m("areas/a.html", updated_at="2026-02-01")])
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns=')
    assert re.findall(r"<loc>([^<]*)</loc>", xml) == ["areas/a.html", "resources/b%26c.html"]
    assert "<lastmod>2026-02-01</lastmod>" in xml
