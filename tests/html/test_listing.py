"""The published site's rendering: pure rows in, `{path: bytes}` out."""

from __future__ import annotations

import re

import pytest

from memhtml.html.listing import (
    GENERATED_ROOT_NAMES,
    LISTING_NAME,
    RECENT_SHOWN,
    RUNS_SHOWN,
    SITEMAP_NAME,
    STYLESHEET_NAME,
    VIEW_DIR,
    ListedMemory,
    ListedRun,
    ListedSkip,
    href,
    render_site,
    render_sitemap,
    run_from_report,
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
        "memhtml-view/areas/deep/er/x.html",
        "memhtml-view/resources/y.html",
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
    # <a>title</a> <code>type</code> <time>updated</time> status<br><code>name</code> — gist;
    # the title opens the memory's view page, the file name the memory file itself.
    assert re.search(
        r'<a href="\.\./memhtml-view/areas/x\.html">X</a> <code class="type">procedural</code>'
        r' <time datetime="2026-01-02T03:04:05Z" title="updated 2026-01-02T03:04:05Z">2026-01-02'
        r'</time> <span class="status active">active</span><br><a class="file" href="x\.html">'
        r"<code>x\.html</code></a> — Claim of areas/x\.html\.",
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
    assert '<span class="status archived">archived</span>' in old
    assert (
        '<span class="rel">superseded by</span>'
        ' <a href="../../../../memhtml-view/areas/a/x.html">X</a>' in old
    )
    new = _page(site, "areas/a/index.html")
    assert (
        '<span class="rel">supersedes</span>'
        ' <a href="../../memhtml-view/archive/2025/areas/a/x.html">X</a>'
        ' <span class="status archived">archived</span>' in new
    )
    front = _page(site, LISTING_NAME)
    assert "<li><strong>1</strong> active</li><li><strong>1</strong> archived</li>" in front


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
        '<span class="rel">caused by</span> <a href="../memhtml-view/resources/b.html">Bee</a>'
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
    assert 'duplicate</span> of <a href="../../memhtml-view/areas/x.html">X</a>' in only
    front = _page(site, LISTING_NAME)
    assert "<strong>2</strong> not indexed (1 unparseable, 1 duplicate)" in front
    assert not any(p.startswith("memhtml-view/") and "broken" in p for p in site)


def test_text_and_attributes_are_escaped() -> None:
    hostile = "<script>alert(\"x\")</script> & 'q'"
    site = render_site(
        [
            _m(
                "areas/x.html",
                title=hostile,
                gist=hostile,
                tags=(hostile,),
                entities=(f"x:{hostile}",),
                facets=((hostile, hostile),),
                author=hostile,
            )
        ]
    )
    for path in ("areas/index.html", "memhtml-view/areas/x.html", LISTING_NAME):
        page = _page(site, path)
        assert "<script" not in page, path
        assert "&lt;script&gt;alert(&quot;x&quot;)" not in page  # text keeps its quotes readable
        assert "&lt;script&gt;alert(\"x\")&lt;/script&gt; &amp; 'q'" in page, path


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


# -- a memory's view page -------------------------------------------------------------------
def test_a_view_page_shows_the_head_the_links_both_ways_and_the_way_back() -> None:
    site = render_site(
        [
            _m(
                "areas/ops/a.html",
                title="Alpha",
                memory_type="procedural",
                created_at="2025-01-02T00:00:00Z",
                event_at="2025-01-01",
                valid_from="2025-01-02T00:00:00Z",
                valid_until="2027-01-01",
                importance=8,
                confidence=0.9,
                tags=("db",),
                entities=("service:postgres",),
                facets=(("pool size", "96"),),
                links=(("caused_by", "resources/b.html"), ("relates_to", "areas/gone.html")),
            ),
            _m("resources/b.html", title="Bee"),
            _m("resources/c.html", title="Sea", links=(("supports", "areas/ops/a.html"),)),
        ]
    )
    view = _page(site, "memhtml-view/areas/ops/a.html")
    assert "<title>Alpha</title>" in view and "<h1>Alpha</h1>" in view
    assert '<code class="type">procedural</code> <span class="status active">active</span>' in view
    assert '<p class="claim"><mark>Claim of areas/ops/a.html.</mark></p>' in view
    for label, shown in (
        ("Created", "2025-01-02"),
        ("Updated", "2026-01-02"),
        ("Happened", "2025-01-01"),
        ("Valid from", "2025-01-02"),
        ("Valid until", "2027-01-01"),
    ):
        assert re.search(rf"<dt>{label}</dt><dd><time [^>]*>{shown}</time></dd>", view), label
    assert "<dt>Importance</dt><dd>8 of 10</dd><dt>Confidence</dt><dd>0.9</dd>" in view
    assert '<dt>Tags</dt><dd><span class="chip">db</span></dd>' in view
    assert "<dt>pool size</dt><dd>96</dd>" in view
    # links out go to the targets' views; a missing target is text
    assert '<span class="rel">caused by</span> <a href="../../resources/b.html">Bee</a>' in view
    assert '<code>areas/gone.html</code> <em class="missing">(not in the tree)</em>' in view
    # links in: who links here
    assert '<a href="../../resources/c.html">Sea</a> <span class="rel">supports</span>' in view
    # the way back: the breadcrumb and the entry in the folder's listing
    assert '<a href="../../../index.html">Memory</a>' in view
    assert '<a href="../../../areas/ops/index.html">ops</a>' in view
    assert '<a href="../../../areas/ops/index.html#a.html">&larr; Back to areas/ops</a>' in view
    # the memory file itself, linked and framed without scripts
    assert '<a class="file" href="../../../areas/ops/a.html">' in view
    assert '<iframe sandbox src="../../../areas/ops/a.html"' in view
    assert "<script" not in view


def test_an_archived_view_says_what_superseded_it() -> None:
    site = render_site(
        [
            _m("areas/x.html", title="New", links=(("supersedes", "archive/2025/areas/x.html"),)),
            _m(
                "archive/2025/areas/x.html",
                title="Old",
                archived_at="2025-06-01T00:00:00Z",
                superseded_by="areas/x.html",
            ),
        ]
    )
    old = _page(site, "memhtml-view/archive/2025/areas/x.html")
    assert '<p class="banner">Archived <time datetime="2025-06-01T00:00:00Z"' in old
    assert '; superseded by <a href="../../../areas/x.html">New</a>.' in old
    assert '<a href="../../../areas/x.html">New</a> <span class="rel">supersedes</span>' in old


# -- the front page -------------------------------------------------------------------------
def test_the_front_page_shows_recent_memories_open_tasks_and_sleep_runs() -> None:
    rows = [_m(f"areas/m{i:02d}.html", updated_at=f"2026-01-{i + 1:02d}") for i in range(12)]
    rows.append(_m("archive/2026/areas/old.html", updated_at="2026-02-01"))  # archived: not recent
    rows += [
        _m("areas/t/late.html", memory_type="task", task_status="todo", due_at="2026-03-01"),
        _m("areas/t/soon.html", memory_type="task", task_status="blocked", due_at="2026-02-01"),
        _m("areas/t/undated.html", memory_type="task", task_status="doing"),
        _m("areas/t/done.html", memory_type="task", task_status="done", due_at="2026-01-01"),
    ]
    reports = [
        (f".memhtml/sleep/{rid}.html", f"<p><mark>{rid} ran 16 phases: {n} committed.</mark>")
        for n, rid in enumerate(["2026-01-03", "2026-01-10", "2026-01-10-2", "2026-01-02"] * 2)
    ]
    runs = [run_from_report(p, d.encode()) for p, d in reports[:4]]
    runs += [
        ListedRun(f"2025-12-{d:02d}", f".memhtml/sleep/2025-12-{d:02d}.html", "") for d in (1, 2)
    ]
    front = _page(site := render_site(rows, runs=[r for r in runs if r]), LISTING_NAME)
    recent = re.findall(r'<li><a class="title" href="memhtml-view/areas/(m\d+)\.html"', front)
    assert recent == [f"m{i:02d}" for i in range(11, 1, -1)]  # the last 10, newest first
    assert len(recent) == RECENT_SHOWN
    tasks = re.findall(r'href="memhtml-view/areas/t/(\w+)\.html"', front)
    assert tasks == ["soon", "late", "undated"]  # by due date, undated last, done left out
    assert '<span class="status blocked">blocked</span>' in front
    assert "Open tasks <small>(3, by due date)</small>" in front
    shown = re.findall(r'<a href="\.memhtml/sleep/([\d-]+)\.html"><strong>', front)
    assert shown == ["2026-01-10-2", "2026-01-10", "2026-01-03", "2026-01-02", "2025-12-02"]
    assert len(shown) == RUNS_SHOWN and "(the last 5 of 6)" in front
    assert "<strong>2026-01-10-2</strong></a> — ran 16 phases: 2 committed.</li>" in front
    assert "memhtml-view/areas/t/done.html" in site  # a done task still has its view


def test_an_empty_front_page_says_there_is_nothing_yet() -> None:
    front = _page(render_site([]), LISTING_NAME)
    assert "No memory yet." in front and "No open task." in front
    assert "No sleep run has been merged into this tree yet." in front


def test_only_run_reports_become_runs() -> None:
    assert run_from_report(".memhtml/sleep/notes.html", b"<mark>x</mark>") is None
    assert run_from_report(".memhtml/sleep/2026-01-02.pending.jsonl", b"") is None
    run = run_from_report(".memhtml/sleep/2026-01-02-3.html", b"<p>no mark</p>")
    assert run == ListedRun("2026-01-02-3", ".memhtml/sleep/2026-01-02-3.html", "")


def test_the_generated_root_names_are_declared_once() -> None:
    assert GENERATED_ROOT_NAMES == (LISTING_NAME, SITEMAP_NAME, STYLESHEET_NAME, VIEW_DIR)
    site = render_site([_m("areas/x.html")], runs=())
    assert {p.split("/", 1)[0] for p in site} - {"areas"} <= set(GENERATED_ROOT_NAMES)
