"""Every deterministic phase over a whole corpus: valid files, hashes kept, a second night idle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.html import parse_memory
from memhtml.index.indexer import indexable
from memhtml.sleep.phase import PHASE_ORDER
from memhtml.sleep.phases import load
from tests.sleep.phase_harness import commit_files, run_phase

RUN_DATE = "2026-02-01"
BROKEN = b"<!doctype html><html><head><title>half</title></head><body><article><p>cut"


def phases() -> list[str]:
    return [p for p in PHASE_ORDER if p not in ("preflight", "report")]


def hashes(corpus: Any) -> dict[str, str]:
    return dict(corpus.conn.execute("SELECT path, content_hash FROM files").fetchall())


@pytest.fixture(params=[False, True], ids=["night", "deep-night"])
def fixture_corpus(request: Any, tmp_path: Path) -> Any:
    from memhtml.eval.fixture import generate_fixture, write_fixture

    write_fixture(generate_fixture(size=160), tmp_path / "fx")
    corpus = memhtml.open(tmp_path / "fx", embedder="fake")
    corpus.index.rebuild()
    commit_files(corpus, {"areas/inbox/broken.html": BROKEN}, "an unparseable file")
    corpus.deep = request.param
    yield corpus
    corpus.close()


def test_a_night_keeps_every_file_valid_and_a_second_night_is_idle(fixture_corpus: Any) -> None:
    corpus = fixture_corpus
    deep = corpus.deep
    committed = []
    for name in phases():
        before = hashes(corpus)
        ran = run_phase(corpus, name, date=RUN_DATE, deep=deep)
        assert ran.outcome.status in ("ok", "skipped"), (name, ran.outcome.detail)
        if load(name).needs_model:
            assert ran.outcome.status == "skipped"
        if ran.commit_sha:
            committed.append(name)
        origin = {t.path: t.from_path for t in ran.outcome.touched if t.from_path}
        for path in ran.changed:
            if not indexable(path) or not (corpus.root / path).exists():
                continue
            doc = parse_memory((corpus.root / path).read_bytes())
            assert doc.ok, (name, path, doc.violations)
            was = before.get(origin.get(path, path))
            if was is not None:  # an edited or moved memory: the article never changes
                assert doc.content_hash == was, (name, path)
        touched = {t.path for t in ran.outcome.touched}
        assert set(ran.changed) - {p for p in ran.changed if not indexable(p)} <= touched | {
            t.from_path for t in ran.outcome.touched
        }, name
    assert (corpus.root / "areas/inbox/broken.html").read_bytes() == BROKEN
    health = corpus.health()
    assert health["dangling"] == []
    # The fixture records no reads: retention reports its bands but evicts nothing.
    assert {"person-links", "confidence-decay"} <= set(committed)
    assert "retention-triage" not in committed
    # the second night, right after: the deterministic phases commit nothing
    again = [n for n in phases() if run_phase(corpus, n, date=RUN_DATE, deep=deep).commit_sha]
    assert again == []


def test_plans_answer_without_staging(fixture_corpus: Any) -> None:
    from tests.sleep.phase_harness import make_context

    for name in phases():
        ctx = make_context(fixture_corpus, date=RUN_DATE, deep=fixture_corpus.deep)
        found = load(name).plan(ctx)
        assert set(found) == {"counts", "unknown"}, name
        assert all(isinstance(v, int) for v in found["counts"].values()), name
        assert ctx.view.changes() == [], name
