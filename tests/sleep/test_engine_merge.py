"""`sleep merge`: refusals leave main unchanged; a merge moves main, applies the ledger, indexes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import (
    DirtyTreeError,
    DiscriminationFailedError,
    InvalidMemoryError,
    PathNotFoundError,
    WriteConflictError,
)
from memhtml.eval.gate import GateReport
from memhtml.html import add_link, set_meta
from memhtml.sleep import engine
from memhtml.sleep.merge import merge
from memhtml.sleep.phase import PhaseOutcome, SleepContext

from .engine_helpers import DATE, archive, git, registry, seed, stamp, worktree_digest


def passing_fixture_gate() -> GateReport:
    """The fixture gate's verdict without its 2-6 s run (one test runs the real one)."""
    return GateReport(mode="fake", seed=7, size=0, now="", mrr_floor=0.85, passed=True)


@pytest.fixture
def seeded(corpus: Any) -> dict[str, str]:
    return seed(corpus)


def _night(corpus: Any, **bodies: Any) -> dict[str, Any]:
    return engine.run(corpus, date=DATE, registry=registry(**bodies), progress=False)


def _merge(corpus: Any, run_id: str = DATE, **options: Any) -> dict[str, Any]:
    return merge(corpus, run_id, fixture_gate=passing_fixture_gate, **options)


def _main(root: Path) -> tuple[str, dict[str, str]]:
    return git(root, "rev-parse", "HEAD"), worktree_digest(root)


def _hand_commit(root: Path, tmp: Path, edit: Any) -> str:
    """A person checks the run's branch out elsewhere, edits it, and commits."""
    where = tmp / "hand"
    git(root, "worktree", "add", "-q", str(where), f"sleep/{DATE}")
    try:
        edit(where)
        git(where, "add", "-A")
        git(where, "commit", "-qm", "edited by hand")
        return git(where, "rev-parse", "HEAD")
    finally:
        git(root, "worktree", "remove", "--force", str(where))
        shutil.rmtree(where, ignore_errors=True)


def test_an_unknown_run_id_is_refused(corpus: Any, seeded: dict[str, str]) -> None:
    before = _main(corpus.root)
    for bad in ("2026-01-01", "not-a-run", "../../etc"):
        with pytest.raises(PathNotFoundError):
            _merge(corpus, bad)
    assert _main(corpus.root) == before


def test_a_dirty_tree_is_refused(corpus: Any, seeded: dict[str, str]) -> None:
    _night(corpus, dedup_merge=stamp(seeded["a"]))
    (corpus.root / seeded["d"]).write_text("edited, not committed")
    head = git(corpus.root, "rev-parse", "HEAD")
    with pytest.raises(DirtyTreeError):
        _merge(corpus)
    assert git(corpus.root, "rev-parse", "HEAD") == head
    assert (corpus.root / seeded["d"]).read_text() == "edited, not committed"


def test_a_hand_edit_that_breaks_the_format_is_refused(
    corpus: Any, seeded: dict[str, str], tmp_path: Path
) -> None:
    _night(corpus, dedup_merge=stamp(seeded["a"]))
    before = _main(corpus.root)
    _hand_commit(corpus.root, tmp_path, lambda w: (w / seeded["b"]).write_text("<p>oops</p>"))
    with pytest.raises(InvalidMemoryError) as err:
        _merge(corpus)
    assert seeded["b"] in err.value.message
    assert _main(corpus.root) == before


def test_a_hand_commit_merging_a_twin_into_the_other_is_refused(
    corpus: Any, seeded: dict[str, str], tmp_path: Path
) -> None:
    _night(corpus, confidence_decay=stamp(seeded["d"]))
    before = _main(corpus.root)
    a, b = seeded["a"], seeded["b"]  # port 8080 / port 9090: twins

    def fold(where: Path) -> None:
        dest = f"archive/2026/{b}"
        (where / dest).parent.mkdir(parents=True, exist_ok=True)
        text = (where / b).read_text()
        text = set_meta(text, "memhtml-status", "archived")
        text = set_meta(text, "memhtml-archived", "2026-03-02T00:00:00Z")
        text = set_meta(text, "memhtml-superseded-by", f"/{a}")
        (where / dest).write_text(text)
        (where / b).unlink()
        (where / a).write_text(add_link((where / a).read_text(), "supersedes", dest))

    _hand_commit(corpus.root, tmp_path, fold)
    with pytest.raises(DiscriminationFailedError) as err:
        _merge(corpus)
    assert err.value.code == "ERR_DISCRIMINATION_FAILED"
    regressions = err.value.details["gate"]["corpus"]["regressions"]
    assert {regressions[0]["a"], regressions[0]["b"]} == {a, b}
    assert "merged" in regressions[0]["why"]
    assert _main(corpus.root) == before


def test_a_hand_commit_that_loses_a_twin_in_search_is_refused(
    corpus: Any, seeded: dict[str, str], tmp_path: Path
) -> None:
    _night(corpus)
    before = _main(corpus.root)
    a = seeded["a"]

    def blur(where: Path) -> None:
        text = (where / a).read_text()
        (where / a).write_text(text.replace("The api listens on port 8080.", "Bananas are yellow."))

    _hand_commit(corpus.root, tmp_path, blur)
    with pytest.raises(DiscriminationFailedError) as err:
        _merge(corpus)
    why = err.value.details["gate"]["corpus"]["regressions"][0]["why"]
    assert "no longer ranks above" in why
    assert _main(corpus.root) == before


def test_merge_fast_forwards_applies_the_ledger_and_indexes(
    corpus: Any, seeded: dict[str, str]
) -> None:
    def marks(ctx: SleepContext) -> PhaseOutcome:
        return PhaseOutcome(
            marks=[
                {
                    "kind": "entity-corroboration",
                    "entity_type": "svc",
                    "alias": "api",
                    "canonical": "api-gw",
                },
                {
                    "kind": "edge-promotion",
                    "src": seeded["a"],
                    "rel": "relates_to",
                    "dst": seeded["d"],
                },
                {"kind": "consolidation-watermark", "name": "traces", "value": "session-9"},
                {"kind": "something-from-the-future", "x": 1},
            ]
        )

    data = _night(corpus, relationship_mining=marks, retention_triage=archive(seeded["c"]))
    ledger = git(corpus.root, "show", f"{data['head_sha']}:.memhtml/sleep/{DATE}.pending.jsonl")
    lines = ledger.splitlines()
    assert len(lines) == 5 and '"phase":"relationship-mining"' in ledger
    # The archive's usage move is a mark of its own phase, written by the engine.
    assert '"kind":"usage-move"' in lines[-1] and '"phase":"retention-triage"' in lines[-1]
    out = _merge(corpus)
    root = corpus.root
    assert out["mode"] == "fast-forward" and out["merged"] is True
    assert git(root, "rev-parse", "HEAD") == data["head_sha"]
    assert (out["marks_applied"], out["marks_pending"]) == (4, 1)
    assert out["ledger"]["pending_kinds"] == {"something-from-the-future": 1}
    assert not (root / seeded["c"]).exists() and (root / f"archive/2026/{seeded['c']}").exists()
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    conn = corpus.conn
    assert conn.execute(
        "SELECT count, promoted FROM state.entity_corroboration WHERE alias = 'api'"
    ).fetchone() == (1, 0)
    assert conn.execute("SELECT value FROM state.sleep_watermarks").fetchone() == ("session-9",)
    assert conn.execute(
        "SELECT provenance FROM edges WHERE derived = 1 AND src_path = ?", (seeded["a"],)
    ).fetchone() == ("sleep",)
    assert conn.execute(
        "SELECT archived FROM files WHERE path = ?", (f"archive/2026/{seeded['c']}",)
    ).fetchone() == (1,)
    # A second merge of the same run applies nothing twice.
    again = _merge(corpus)
    assert again["mode"] == "already-merged"
    assert again["marks_applied"] == 0 and again["ledger"]["already_applied"] == 4


def test_merge_when_main_moved_meanwhile(corpus: Any, seeded: dict[str, str]) -> None:
    data = _night(corpus, confidence_decay=stamp(seeded["a"]))
    corpus.write(title="Later", type="semantic", claim="Main moved on while sleep ran.")
    out = _merge(corpus)
    root = corpus.root
    assert out["mode"] == "merge"
    assert git(root, "rev-parse", "HEAD^2") == data["head_sha"]
    assert "memhtml-confidence" in (root / seeded["a"]).read_text()
    assert git(root, "status", "--porcelain") == ""


def test_a_conflicting_merge_is_aborted_and_main_unchanged(
    corpus: Any, seeded: dict[str, str]
) -> None:
    def rewrite(ctx: SleepContext) -> PhaseOutcome:
        text = ctx.view.read(seeded["d"]).decode()
        ctx.view.write(seeded["d"], text.replace("for a day", "for a week").encode())
        return PhaseOutcome(counts={"rewritten": 1})

    _night(corpus, compress=rewrite)
    target = corpus.root / seeded["d"]  # meanwhile a person edits the same article on main
    target.write_text(target.read_text().replace("for a day", "for an hour"))
    git(corpus.root, "commit", "-qam", "by hand on main")
    before = _main(corpus.root)
    with pytest.raises(WriteConflictError):
        _merge(corpus)
    assert _main(corpus.root) == before
    assert not (corpus.root / ".git" / "MERGE_HEAD").exists()


def test_skip_gate_says_so(corpus: Any, seeded: dict[str, str]) -> None:
    _night(corpus, dedup_merge=stamp(seeded["a"]))
    out = merge(corpus, DATE, skip_gate=True)
    assert out["skip_gate"] is True and out["gate"] == {"skipped": True}


def test_the_real_fixture_gate_runs_at_merge(corpus: Any, seeded: dict[str, str]) -> None:
    _night(corpus, dedup_merge=stamp(seeded["a"]))
    out = merge(corpus, DATE)
    assert out["gate"]["fixture"]["passed"] is True and out["gate"]["fixture"]["probes"] > 0
    assert out["gate"]["corpus"]["twins"] >= 1


def test_the_report_is_served_as_an_mcp_resource(corpus: Any, seeded: dict[str, str]) -> None:
    from memhtml.mcp.resources import read_resource

    _night(corpus)
    uri = f"memhtml://sleep/{DATE}"
    before = read_resource(lambda: corpus, uri)
    assert before.mime_type == "text/html" and f"Sleep run {DATE}" in before.text
    _merge(corpus)
    assert git(corpus.root, "branch", "--list", f"sleep/{DATE}") == ""  # the merge deleted it
    assert read_resource(lambda: corpus, uri).text == before.text
    with pytest.raises(PathNotFoundError):
        read_resource(lambda: corpus, "memhtml://sleep/2020-01-01")
