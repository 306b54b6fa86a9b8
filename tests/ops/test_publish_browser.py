"""The published site of the fixture corpus, opened in a real headless Chromium.

Debian's `chromium` driven by Playwright's Python API through its executable
path (Playwright's own browser download is never used). The site is served
two ways, by `http.server` on 127.0.0.1 and straight from `file://`; in both a
person starts at the front page (recent memories, open tasks, the sleep run
the fixture merged), walks to a memory's view page (its head, links in and
out, the file itself) and back to its folder, follows an authored link, and
reaches every link by keyboard; every link on every page (listings, views,
memories, reports) must resolve: no 404, no missing file, no fragment without
its element.

`MEMHTML_SCREENSHOT_DIR=docs/img` also writes the screenshots docs/publish.md
shows (they always go to the test's temp dir).
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlparse
from urllib.request import url2pathname

import pytest

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary (apt-get install chromium; .ci/run installs it)"
)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus (seed 7, 120 files) after one merged sleep run, published."""
    import io

    import memhtml
    from memhtml.cli.main import run
    from memhtml.eval.fixture import generate_fixture, write_fixture

    root = tmp_path_factory.mktemp("site") / "memory"
    write_fixture(generate_fixture(7, 120, "2026-01-01T00:00:00Z"), root)
    for argv in (["sleep", "run", "--date", "2026-01-02"], ["sleep", "merge", "2026-01-02"]):
        assert run(["--repo", str(root), *argv, "--json"], stdout=io.StringIO()) == 0, argv
    with memhtml.open(root, embedder="fake") as corpus:
        report = corpus.publish()
    assert report["commit_sha"] is not None
    return root


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (dev)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1100, "height": 800},
        )
        try:
            yield context
        finally:
            context.close()


_PARSE = """([html, url]) => {
  const doc = new DOMParser().parseFromString(html, "text/html");
  return {
    links: [...doc.querySelectorAll("a[href], link[rel=stylesheet], iframe[src]")]
      .map(a => new URL(a.getAttribute("href") ?? a.getAttribute("src"), url).href),
    ids: [...doc.querySelectorAll("[id]")].map(e => e.id),
  };
}"""


def _fetch(page: Any, url: str) -> tuple[str | None, str]:
    """(the text at `url`, or None when it does not resolve; why not)."""
    if url.startswith("file:"):
        path = Path(url2pathname(urlparse(url).path))
        return (path.read_text(encoding="utf-8"), "") if path.is_file() else (None, "no file")
    response = page.request.get(url)
    return (response.text(), "") if response.status == 200 else (None, f"HTTP {response.status}")


def _crawl(page: Any, base: str) -> dict[str, Any]:
    """Every page reachable from the root index, and every link on each, checked.

    A generated page (a listing or a view) is opened in the browser (the
    rendered page's links and ids); any other target (a memory, a sleep report,
    the stylesheet) is fetched, over HTTP or from the file the browser resolved
    the link to, and its links are read by the browser's own parser. Every link
    must answer, and a fragment must name an element of its page.
    """
    queue = [base + "index.html"]
    seen: set[str] = set()
    ids: dict[str, set[str]] = {}
    fragments: list[tuple[str, str, str]] = []  # (page, target, fragment)
    failures: list[str] = []
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        if url.endswith("/index.html") or "/memhtml-view/" in url:
            try:
                response = page.goto(url, wait_until="load")
            except Exception as exc:  # file:// answers a missing file with a navigation error
                failures.append(f"{url}: {exc}")
                continue
            if response is not None and response.status != 200:
                failures.append(f"{url}: HTTP {response.status}")
                continue
            assert page.evaluate("document.scripts.length") == 0, f"{url} carries a script"
            found = page.evaluate(_PARSE, [page.content(), url])
        else:
            text, why = _fetch(page, url)
            if text is None:
                failures.append(f"{url}: {why}")
                continue
            found = page.evaluate(_PARSE, [text, url]) if url.endswith(".html") else {}
        ids[url] = set(found.get("ids", ()))
        for link in found.get("links", ()):
            target, fragment = urldefrag(link)
            assert target.startswith(base), f"{url} links outside the site: {link}"
            if fragment:
                fragments.append((url, target, unquote(fragment)))
            queue.append(target)
    for source, target, fragment in fragments:
        if fragment not in ids.get(target, set()):
            failures.append(f"{source}: no #{fragment} in {target}")
    return {"seen": seen, "failures": failures}


def _front_page(page: Any, base: str) -> None:
    """The front page: what the store holds, recent memories, open tasks, the sleep run."""
    page.goto(base + "index.html")
    assert page.title() == "Memory"
    # The shipped stylesheet applies (a relative href, from file:// too).
    assert page.evaluate("getComputedStyle(document.body).maxWidth") == "960px"
    headings = page.locator("main h2").all_inner_texts()
    assert [h.split(" (")[0] for h in headings] == [
        "Folders",
        "Recently updated",
        "Sleep runs",
        "Open tasks",
    ]
    assert page.locator("ul.recent > li").count() == 10
    assert page.locator("ul.tasks > li").count() >= 1
    run = page.locator("ul.runs > li").first
    assert run.inner_text().startswith("2026-01-02 — ran ")
    run.locator("a").click()
    assert page.url == base + ".memhtml/sleep/2026-01-02.html"
    assert page.locator("h1").inner_text() == "Sleep run 2026-01-02"
    page.go_back()


def _walk_to_a_memory_and_back(page: Any, base: str) -> None:
    """Root -> resources/ -> resources/postgres/ -> a memory's view -> the file -> back to
    the folder -> an authored link -> the archived version -> the root."""
    page.goto(base + "index.html")
    page.click("ul.dirs >> text=resources/")
    assert page.url == base + "resources/index.html"
    page.click("ul.dirs >> text=resources/postgres/")
    listing = base + "resources/postgres/index.html"
    assert page.url == listing
    entry = page.locator("li#audit-db-major-version\\.html")
    gist = entry.inner_text().split(" — ", 1)[1].splitlines()[0]
    entry.locator("a").first.click()
    view = base + "memhtml-view/resources/postgres/audit-db-major-version.html"
    assert page.url == view
    # The view: title, claim, type and status, dates, links out and in, the file.
    assert page.locator("h1").inner_text() == "audit-db major version"
    assert page.inner_text("p.claim mark") == gist
    assert page.locator("code.type").inner_text() == "semantic"
    facts = page.locator("dl.facts").inner_text()
    assert "Created" in facts and "Updated" in facts and "Valid from" in facts
    assert "supersedes" in page.locator("ul.links").first.inner_text()
    frame = page.frame_locator("section.file iframe")
    assert frame.locator("mark").inner_text() == gist  # the memory file, framed as it is
    page.click("a.file")
    assert page.url == base + "resources/postgres/audit-db-major-version.html"
    assert page.inner_text("mark") == gist  # the memory itself, its claim as listed
    page.go_back()
    # The way back to its folder lands on its entry.
    page.click("p.back a")
    assert page.url == listing + "#audit-db-major-version.html"
    assert page.evaluate("document.querySelector(':target').id") == "audit-db-major-version.html"
    # The authored `supersedes` link leads to the archived version's view, marked archived.
    entry.locator("ul.links a").first.click()
    archived = base + "memhtml-view/archive/2025/resources/postgres/audit-db-major-version.html"
    assert page.url == archived
    assert page.locator("p .status.archived").first.inner_text() == "archived"
    banner = page.locator("p.banner")
    assert "superseded by" in banner.inner_text()
    banner.locator("a").click()  # and the banner leads back to what superseded it
    assert page.url == view
    # Up again through the breadcrumb.
    page.click("header nav >> text=Memory")
    assert page.url == base + "index.html"


def _keyboard_reaches_every_link(page: Any, url: str) -> None:
    """Tab alone reaches every link of the page, the skip link first, and it works."""
    page.goto(url)
    wanted = set(page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)"))
    reached: list[str] = []
    for _ in range(len(wanted) + 10):
        page.keyboard.press("Tab")
        target = page.evaluate("document.activeElement.href || ''")
        if target:
            reached.append(target)
        if wanted <= set(reached):
            break
    assert reached and reached[0].endswith("#main"), reached[:3]
    assert wanted - set(reached) == set()
    page.goto(url)
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # the skip link
    assert page.url.endswith("#main")


def _screenshots(page: Any, base: str, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    shots = {
        "publish-root.png": "index.html",
        "publish-listing.png": "resources/postgres/index.html",
        "publish-memory.png": "memhtml-view/resources/postgres/audit-db-major-version.html",
    }
    written = []
    for name, rel in shots.items():
        page.goto(base + rel)
        page.wait_for_load_state("load")
        page.screenshot(path=str(out / name), full_page=False)
        written.append(out / name)
    return written


@pytest.mark.parametrize("mode", ["http", "file"])
def test_the_published_fixture_browses_with_no_broken_link(
    mode: str, site: Path, server: str, browser: Any, tmp_path: Path
) -> None:
    base = server if mode == "http" else site.as_uri() + "/"
    page = browser.new_page()
    try:
        crawl = _crawl(page, base)
        assert crawl["failures"] == []
        visited = {unquote(u[len(base) :]) for u in crawl["seen"]}
        # Every memory the index holds, active and archived, is reached from the root.
        import memhtml

        with memhtml.open(site, embedder="fake") as corpus:
            paths = {r[0] for r in corpus.conn.execute("SELECT path FROM files")}
        assert paths - visited == set()
        assert any(p.startswith("archive/") for p in paths)
        assert not any(p.startswith("memhtml-view/") for p in paths)
        assert {"memhtml-view/" + p for p in paths} - visited == set()  # a view each
        _front_page(page, base)
        _walk_to_a_memory_and_back(page, base)
        for rel in ("index.html", "memhtml-view/resources/postgres/audit-db-major-version.html"):
            _keyboard_reaches_every_link(page, base + rel)
        shots = _screenshots(page, base, tmp_path / "screenshots")
        assert all(p.stat().st_size > 1000 for p in shots)
        docs_dir = os.environ.get("MEMHTML_SCREENSHOT_DIR")
        if docs_dir and mode == "http":
            for shot in shots:
                shutil.copy(shot, Path(docs_dir) / shot.name)
    finally:
        page.close()


def test_the_crawl_reports_what_does_not_resolve(browser: Any, repo: Path) -> None:
    """The check can fail: a listed memory gone from disk and an entry gone from its page."""
    import memhtml

    with memhtml.open(repo, embedder="fake") as corpus:
        corpus.write(title="Alpha", type="semantic", claim="Alpha holds.", path="areas/a.html")
        corpus.write(title="Beta", type="semantic", claim="Beta holds.", path="areas/x/b.html")
        corpus.link("areas/a.html", "relates_to", "areas/x/b.html")
        corpus.publish()
    (repo / "areas" / "a.html").unlink()
    listing = repo / "areas" / "x" / "index.html"
    listing.write_text(listing.read_text().replace('id="b.html"', 'id="gone"'))
    page = browser.new_page()
    try:
        base = repo.as_uri() + "/"
        failures = _crawl(page, base)["failures"]
    finally:
        page.close()
    missing = f"no #b.html in {base}areas/x/index.html"
    assert sorted(failures) == [
        f"{base}areas/a.html: no file",  # linked by its listing entry and its view
        f"{base}index.html: {missing}",  # the front page's "in areas/x" of a recent memory
        f"{base}memhtml-view/areas/x/b.html: {missing}",  # the view's way back
    ]
