"""`memhtml publish` as a program and as a person sees it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_publish_answers_a_publish_report_and_a_rerun_commits_nothing(
    store: Path, cli: Callable[..., tuple[int, dict[str, Any]]]
) -> None:
    code, first = cli("publish")
    assert code == 0 and first["type"] == "publish.report"
    assert first["data"]["commit_sha"] and first["data"]["written"] == first["data"]["artifacts"]
    code, again = cli("publish")
    assert code == 0 and again["data"]["commit_sha"] is None and again["data"]["written"] == 0
    assert (store / "index.html").is_file()


def test_an_out_inside_the_repo_is_a_usage_error(
    store: Path, cli: Callable[..., tuple[int, dict[str, Any]]]
) -> None:
    code, payload = cli("publish", "--out", str(store / "site"))
    assert code == 2 and payload["code"] == "ERR_OUT_INSIDE_REPO"
    assert not (store / "site").exists()


def test_a_person_reads_what_was_published(
    store: Path, tmp_path: Path, terminal: Callable[..., tuple[int, str]]
) -> None:
    code, text = terminal("publish", "--out", str(tmp_path / "site"))
    assert code == 0
    assert text.startswith(f"published 2 memories (0 archived) to {tmp_path / 'site'}:")
    assert "2 memories copied" in text
    assert f"open {tmp_path / 'site'}/index.html" in text
