"""The review page in a real headless Chromium: read the night, refuse one change with the
keyboard alone, merge; main holds the other change and not the refused one (issue 30 item 3).

Driven like the published site's test (tests/ops/test_publish_browser.py: Debian's
chromium through Playwright's Python API). `MEMHTML_SCREENSHOT_DIR=docs/img` also
writes the screenshots docs/sleep.md shows.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import memhtml
from memhtml.sleep import engine
from memhtml.sleep.page import write_page
from memhtml.sleep.review import review
from memhtml.sleep.serve import ReviewServer
from tests.ops.test_publish_browser import browser, pytestmark  # noqa: F401 (fixture, skip)

from .engine_helpers import git
from .test_engine_merge import passing_fixture_gate
from .test_refuse import _two_pairs

_FOCUSED = "() => { const e = document.activeElement; return [e.tagName, e.value || ''] }"


def _tab_to(page: Any, tag: str, value: str = "", limit: int = 300) -> None:
    """Press Tab until the focused element is `tag` (with `value`)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        got_tag, got_value = page.evaluate(_FOCUSED)
        if got_tag == tag and (not value or got_value == value):
            return
    raise AssertionError(f"Tab never reached <{tag}> {value}")


def _opener(repo: Path) -> Any:
    return lambda: memhtml.open(repo, embedder="fake")


def test_refuse_one_fold_in_the_browser_and_merge(
    repo: Path,
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    paths = _two_pairs(repo)
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        night = engine.run(c, date="2026-03-02", progress=False)
        folds = [x for x in review(c, night["run_id"])["changes"] if x["kind"] == "fold"]
    refused = next(f for f in folds if paths["a2"] in f["summary"])
    kept = next(f for f in folds if paths["b2"] in f["summary"])
    server = ReviewServer(
        _opener(repo), night["run_id"], merge_options={"fixture_gate": passing_fixture_gate}
    )
    url = server.start()
    shots = tmp_path / "shots"
    shots.mkdir()
    page = browser.new_page()
    try:
        page.goto(url)
        assert page.locator("article.change").count() >= 2
        for f in (refused, kept):
            article = page.locator(f"article[id='{f['id']}']")
            assert f["summary"] in article.inner_text()
            assert "cosine" in article.inner_text()  # the reason is on the page
            assert article.locator("pre.diff .add").count() > 0  # and the diff
        page.screenshot(path=str(shots / "sleep-review.png"), full_page=False)
        page.add_style_tag(content=".actions { position: static; }")  # for the close-up
        page.locator(f"article[id='{kept['id']}']").screenshot(
            path=str(shots / "sleep-review-change.png")
        )
        # keyboard alone: Tab to the refused change's box, Space, Tab to the button, Enter
        _tab_to(page, "INPUT", refused["id"])
        page.keyboard.press("Space")
        assert page.locator(f"input[value='{refused['id']}']").is_checked()
        assert not page.locator(f"input[value='{kept['id']}']").is_checked()
        _tab_to(page, "BUTTON")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        text = page.inner_text("main")
        assert "merged" in text and refused["id"] in text and "corpus gate" in text
        page.screenshot(path=str(shots / "sleep-review-merged.png"), full_page=False)
        # a second submission of the same page: typed, nothing moves
        head = git(repo, "rev-parse", "HEAD")
        page.go_back()
        page.reload()
        assert page.locator("form").count() == 0  # a merged run's page has no form
        response = page.request.post(url + "merge", form={"expect_tip": night["head_sha"]})
        assert response.status == 409 and "ERR_WRITE_CONFLICT" in response.text()
        assert git(repo, "rev-parse", "HEAD") == head
    finally:
        page.close()
        server.stop()
    # main holds the kept fold and not the refused one
    assert (repo / paths["a2"]).exists()
    assert not (repo / paths["b2"]).exists()
    assert git(repo, "status", "--porcelain") == ""
    docs_dir = os.environ.get("MEMHTML_SCREENSHOT_DIR")
    for shot in shots.iterdir():
        assert shot.stat().st_size > 1000
        if docs_dir:
            shutil.copy(shot, Path(docs_dir) / shot.name)


def test_the_written_page_stands_alone_and_is_read_only(
    repo: Path,
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    _two_pairs(repo)
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        night = engine.run(c, date="2026-03-02", progress=False)
        data = review(c, night["run_id"])
    out = write_page(data, str(tmp_path / "review.html"))
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(Path(out).as_uri())
        assert page.locator("article.change").count() == len(data["changes"])
        assert page.locator("form, input, button, script").count() == 0
        assert page.evaluate("getComputedStyle(document.body).maxWidth") != "none"  # styled
        assert requests == [Path(out).as_uri()]  # nothing else is fetched
    finally:
        page.close()
