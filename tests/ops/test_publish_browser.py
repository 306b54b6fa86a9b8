"""The published site of the fixture corpus, opened in a real headless Chromium.

Debian's `chromium` driven by Playwright's Python API through its executable
path (Playwright's own browser download is never used). The site is served
two ways, by `http.server` on 127.0.0.1 and straight from `file://`; in both a
person starts at the root index, walks to a memory and back, follows an
authored link, and every link on every page (listings and memories alike)
must resolve: no 404, no missing file, no fragment without its entry.

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
    """The fixture corpus (seed 7, 120 files), published and committed."""
    import memhtml
    from memhtml.eval.fixture import generate_fixture, write_fixture

    root = tmp_path_factory.mktemp("site") / "memory"
    write_fixture(generate_fixture(7, 120, "2026-01-01T00:00:00Z"), root)
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
    links: [...doc.querySelectorAll("a[href], link[rel=stylesheet]")]
      .map(a => new URL(a.getAttribute("href"), url).href),
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

    A listing is opened in the browser (the rendered page's links and ids); any
    other target (a memory, the stylesheet) is fetched, over HTTP or from the
    file the browser resolved the link to, and a memory's links are read by the
    browser's own parser. Every link must answer, and a fragment must name an
    element of its page.
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
        if url.endswith("/index.html"):
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


def _walk_to_a_memory_and_back(page: Any, base: str) -> None:
    """Root -> resources/ -> resources/postgres/ -> a memory -> back -> an authored link."""
    page.goto(base + "index.html")
    assert page.title() == "Memory"
    # The shipped stylesheet applies (a relative href, from file:// too).
    assert page.evaluate("getComputedStyle(document.body).maxWidth") == "960px"
    page.click("ul.dirs >> text=resources/")
    assert page.url == base + "resources/index.html"
    page.click("ul.dirs >> text=resources/postgres/")
    listing = base + "resources/postgres/index.html"
    assert page.url == listing
    entry = page.locator("li#audit-db-major-version\\.html")
    gist = entry.inner_text().split(" — ", 1)[1].splitlines()[0]
    entry.locator("a").first.click()
    assert page.url == base + "resources/postgres/audit-db-major-version.html"
    assert page.inner_text("mark") == gist  # the memory itself, its claim as listed
    page.go_back()
    assert page.url == listing
    # The authored `supersedes` link leads to the archived version's entry, marked archived.
    entry.locator("ul.links a").first.click()
    assert page.url == (
        base + "archive/2025/resources/postgres/index.html#audit-db-major-version.html"
    )
    archived = page.locator("li#audit-db-major-version\\.html")
    assert "archived" in (archived.get_attribute("class") or "")
    assert archived.locator(".status.archived").inner_text() == "archived"
    # Up again through the breadcrumb.
    page.click("nav >> text=Memory")
    assert page.url == base + "index.html"


def _screenshots(page: Any, base: str, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    shots = {
        "publish-root.png": "index.html",
        "publish-listing.png": "resources/postgres/index.html",
        "publish-memory.png": "resources/postgres/audit-db-major-version.html",
    }
    written = []
    for name, rel in shots.items():
        page.goto(base + rel)
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
        _walk_to_a_memory_and_back(page, base)
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
    assert failures == [
        f"{base}areas/a.html: no file",
        f"{base}areas/index.html: no #b.html in {base}areas/x/index.html",
    ]
