"""The sleep commands on the command line: envelopes, exit codes, typed refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memhtml.cli.main import run
from memhtml.contracts.envelope import ErrorEnvelope, SuccessEnvelope, validate_envelope
from memhtml.sleep import engine
from memhtml.sleep.phase import PhaseOutcome, SleepContext

from .engine_helpers import DATE, StandIn, git, seed


def call(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run(list(argv), stdout=out)
    return code, json.loads(out.getvalue())


@pytest.fixture
def root(corpus: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    seed(corpus)
    monkeypatch.setenv("MEMHTML_ROOT", str(corpus.root))
    monkeypatch.setenv("MEMHTML_NOW", f"{DATE}T10:00:00Z")
    return Path(corpus.root)


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> dict[str, StandIn]:
    """Every phase but preflight and report replaced by a no-op (a test may swap one)."""
    chosen: dict[str, StandIn] = {}
    real = engine.load_phase

    def load(name: str, registry: Any) -> Any:
        if name in ("preflight", "report"):
            return real(name, registry)
        return chosen.setdefault(name, StandIn(name))

    monkeypatch.setattr(engine, "load_phase", load)
    return chosen


def test_run_review_status_and_plan_answer_envelopes(root: Path, stand_ins: Any) -> None:
    code, out = call("sleep", "run")
    assert code == 0 and isinstance(validate_envelope(out), SuccessEnvelope)
    assert out["type"] == "sleep.report" and out["data"]["run_id"] == DATE
    for argv, kind in (
        (["sleep", "review"], "sleep.review"),
        (["sleep", "review", DATE], "sleep.review"),
        (["sleep", "status"], "sleep.report"),
        (["sleep", "plan"], "sleep.plan"),
        (["sleep", "run", "--dry-run", "--phases", "integrity"], "sleep.report"),
    ):
        code, got = call(*argv)
        assert code == 0 and got["type"] == kind, got
    assert got["data"]["dry_run"] is True


def test_a_failed_phase_exits_1_with_the_whole_run_in_details(
    root: Path, stand_ins: dict[str, StandIn]
) -> None:
    def boom(_ctx: SleepContext) -> PhaseOutcome:
        raise ValueError("no")

    stand_ins["integrity"] = StandIn("integrity", boom)
    code, out = call("sleep", "run")
    assert code == 1
    envelope = validate_envelope(out)
    assert isinstance(envelope, ErrorEnvelope) and envelope.code == "ERR_PARTIAL_FAILURE"
    assert out["details"]["failed_phases"] == ["integrity"]
    assert out["details"]["report_path"] == f".memhtml/sleep/{DATE}.html"
    assert git(root, "cat-file", "-e", f"sleep/{DATE}:.memhtml/sleep/{DATE}.html") == ""


@pytest.mark.parametrize(
    ("argv", "code", "exit_code"),
    [
        (["sleep", "run", "--phases", "dedup-merge,nap"], "ERR_INVALID_FLAG", 2),
        (["sleep", "run", "--date", "2026-13-40"], "ERR_INVALID_FLAG", 2),
        (["sleep", "run", "--max-llm-calls", "-1"], "ERR_INVALID_FLAG", 2),
        (["sleep", "merge"], "ERR_MISSING_ARGUMENT", 2),
        (["sleep", "merge", "2026-01-01"], "ERR_PATH_NOT_FOUND", 1),
        (["sleep", "resume", "nope"], "ERR_PATH_NOT_FOUND", 1),
        (["sleep", "review", "2026-01-01"], "ERR_PATH_NOT_FOUND", 1),
    ],
)
def test_bad_input_is_a_typed_error(
    root: Path, stand_ins: Any, argv: list[str], code: str, exit_code: int
) -> None:
    got, out = call(*argv)
    assert (got, out["code"]) == (exit_code, code), out


def test_a_dirty_tree_is_refused_on_the_command_line(root: Path, stand_ins: Any) -> None:
    (root / "scratch.txt").write_text("mine")
    code, out = call("sleep", "run")
    assert (code, out["code"]) == (1, "ERR_DIRTY_TREE")
    assert out["details"]["paths"] == ["scratch.txt"]


def test_merge_on_the_command_line_says_when_the_gate_is_skipped(
    root: Path, stand_ins: Any
) -> None:
    _, ran = call("sleep", "run")
    code, out = call("sleep", "merge", DATE, "--skip-gate")
    assert code == 0 and out["type"] == "sleep.merge"
    assert out["data"]["skip_gate"] is True and out["data"]["gate"] == {"skipped": True}
    assert git(root, "rev-parse", "HEAD") == ran["data"]["head_sha"]
    # the merged branch is cleaned up; its commits are main's history
    assert git(root, "branch", "--list", "sleep/*") == ""
