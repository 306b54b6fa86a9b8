"""`memhtml.init` beside `memhtml.open`, and `init_repo` taking a str as well as a Path."""

from __future__ import annotations

from pathlib import Path

import pytest

import memhtml
from memhtml.store.layout import InitReport, init_repo


def test_init_repo_accepts_a_str(tmp_path: Path) -> None:
    report = init_repo(str(tmp_path / "mem"))
    assert report.created_repo and (tmp_path / "mem" / ".git").exists()
    assert report.root == str(tmp_path / "mem")


def test_init_repo_expands_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert init_repo("~/mem").root == str(tmp_path / "mem")


def test_memhtml_init_then_open(tmp_path: Path) -> None:
    root = str(tmp_path / "mem")
    report = memhtml.init(root)
    assert isinstance(report, InitReport)
    assert report.created_repo and report.commit_sha and "README.html" in report.created
    again = memhtml.init(root)
    assert not again.created_repo and again.created == [] and again.commit_sha is None
    with memhtml.open(root, embedder="fake") as corpus:
        assert corpus.write(title="T", type="semantic", claim="A fact.")["created"]


def test_memhtml_init_defaults_to_memhtml_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHTML_ROOT", str(tmp_path / "env-root"))
    assert memhtml.init().root == str(tmp_path / "env-root")
    assert "init" in memhtml.__all__
