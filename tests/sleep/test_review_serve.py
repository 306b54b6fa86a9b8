"""The served review page refuses whatever is not its own page asking (issue 30 item 3):
no token, a wrong token, a foreign Host, a foreign Origin, a page older than the branch."""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import memhtml
from memhtml.sleep import engine
from memhtml.sleep.review import review
from memhtml.sleep.serve import ReviewServer

from .engine_helpers import git, worktree_digest
from .test_engine_merge import passing_fixture_gate
from .test_refuse import _two_pairs


def _ask(
    server: ReviewServer, method: str, path: str, body: str = "", **headers: str
) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        sent = {"Content-Type": "application/x-www-form-urlencoded", **headers}
        conn.request(method, path, body=body.encode(), headers=sent)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_only_the_page_with_its_token_can_act(repo: Path) -> None:
    _two_pairs(repo)
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        night = engine.run(c, date="2026-03-02", progress=False)
        ids = [x["id"] for x in review(c, night["run_id"])["changes"] if x["kind"] == "fold"]
    server = ReviewServer(
        lambda: memhtml.open(repo, embedder="fake"),
        night["run_id"],
        merge_options={"fixture_gate": passing_fixture_gate},
    )
    server.start()
    before = git(repo, "rev-parse", "HEAD"), worktree_digest(repo)
    token = server.token
    assert len(token) >= 32 and server.url.startswith("http://127.0.0.1:")
    form = urlencode({"expect_tip": night["head_sha"], "refuse": ids[0]})
    try:
        assert _ask(server, "GET", "/")[0] == 404
        assert _ask(server, "GET", "/" + "x" * len(token) + "/")[0] == 404
        assert _ask(server, "POST", "/wrong/merge", form)[0] == 404
        status, _ = _ask(server, "GET", f"/{token}/", Host="evil.example:80")
        assert status == 404  # a rebound name reaching 127.0.0.1 is not the page's host
        status, _ = _ask(server, "POST", f"/{token}/merge", form, Origin="http://evil.example")
        assert status == 403
        status, page = _ask(server, "GET", f"/{token}/")
        assert status == 200 and all(i in page for i in ids)
        # a page made before the branch moved
        stale = urlencode({"expect_tip": night["base_sha"], "refuse": ids[0]})
        status, page = _ask(server, "POST", f"/{token}/merge", stale)
        assert status == 409 and "ERR_WRITE_CONFLICT" in page and "moved since" in page
        # a second browser submitting while a merge from the page runs
        assert server.merging.acquire(blocking=False)
        try:
            fresh = urlencode({"expect_tip": night["head_sha"], "refuse": ids[0]})
            status, page = _ask(server, "POST", f"/{token}/merge", fresh)
        finally:
            server.merging.release()
        assert status == 409 and "ERR_WRITE_CONFLICT" in page
        # an id that is not the run's
        bad = urlencode({"expect_tip": night["head_sha"], "refuse": "c0123456789ab"})
        status, page = _ask(server, "POST", f"/{token}/merge", bad)
        assert status == 400 and "ERR_UNKNOWN_CHANGE" in page
        assert (git(repo, "rev-parse", "HEAD"), worktree_digest(repo)) == before
    finally:
        server.stop()


def test_review_html_on_the_command_line(repo: Path, tmp_path: Path, monkeypatch: Any) -> None:
    from tests.cli.test_contract import call

    monkeypatch.setenv("MEMHTML_ROOT", str(repo))
    _two_pairs(repo)
    assert call("sleep", "run", "--date", "2026-03-02")[0] == 0
    out = tmp_path / "night.html"
    code, payload = call("sleep", "review", "2026-03-02", "--html", str(out))
    assert code == 0 and payload["data"]["html"] == str(out)
    text = out.read_text()
    assert "<form" not in text and all(c["id"] in text for c in payload["data"]["changes"])
    code, payload = call("sleep", "review", "2026-03-02", "--html", str(tmp_path / "no/such/x"))
    assert code == 1 and payload["code"] == "ERR_STORAGE"
