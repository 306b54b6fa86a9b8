"""The discrimination gate: scoring rules, the failure path, the modes, and the CI gate itself.

The CI gate tests state the issue's targets: MRR >= 0.95 and zero inversions in fake and
local mode, so a change that degrades retrieval fails the build.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memhtml.cli.main import run
from memhtml.contracts.errors import DiscriminationFailedError
from memhtml.contracts.vocab import DEFAULT_WEIGHTS
from memhtml.eval.gate import GateReport, run_gate, score_probe
from memhtml.eval.probes import Probe
from memhtml.index.retrieval import Hit, SearchResult

BROKEN_WEIGHTS = {"fts": 0.0, "vector": 0.0, "recency": 1.0, "salience": 0.0}


@pytest.fixture(scope="module")
def fake_report(tmp_path_factory: pytest.TempPathFactory) -> GateReport:
    return run_gate("fake", report_dir=tmp_path_factory.mktemp("fake-report"))


@pytest.fixture(scope="module")
def local_report() -> GateReport:
    return run_gate("local")


# --- scoring rules (pure) ------------------------------------------------------------------


def _probe(controls: tuple[str, ...] = ("c1", "c2")) -> Probe:
    return Probe(
        probe_id="01-x", kind="negation", query="q", target="t", controls=controls,
        control_kinds=("negation",) * len(controls), target_claim="T.",
        control_claims=("C.",) * len(controls), target_token="", control_tokens=("Do not",),
    )  # fmt: skip


def _result(*ranked: tuple[str, float]) -> SearchResult:
    hits = [
        Hit(path=p, title=p, gist=p, memory_type="semantic", score=s,
            arms={"fts": {"rank": i, "weight": 1.0, "contribution": s}})
        for i, (p, s) in enumerate(ranked, start=1)
    ]  # fmt: skip
    return SearchResult("q", hits, False, None, ["fts"], {"fts": 1.0}, 60, None)


def test_target_first_passes_with_its_margin() -> None:
    r = score_probe(_probe(), _result(("t", 0.05), ("x", 0.04), ("c1", 0.03)))
    assert r.passed and r.target_rank == 1 and r.control_ranks == (3, None)
    assert r.margin == pytest.approx(0.05 - 0.03) and not r.margin_is_bound
    assert r.reciprocal_rank == 1.0 and r.target_arms == {"fts": 1}


def test_a_control_above_the_target_is_an_inversion() -> None:
    r = score_probe(_probe(), _result(("c2", 0.05), ("t", 0.04), ("c1", 0.01)))
    assert not r.passed and r.inverted == ("c2",)
    assert r.margin == pytest.approx(-0.01) and r.reciprocal_rank == 0.5


def test_a_tie_on_fused_score_is_reported_not_failed_when_the_target_ranks_first() -> None:
    r = score_probe(_probe(), _result(("t", 0.04), ("c1", 0.04)))
    assert r.passed and r.inverted == () and r.tied == ("c1",) and r.margin == 0.0
    below = score_probe(_probe(), _result(("c1", 0.04), ("t", 0.04)))
    assert not below.passed and below.inverted == ("c1",)


def test_a_missing_target_fails_and_controls_absent_bound_the_margin() -> None:
    missing = score_probe(_probe(), _result(("c1", 0.05), ("x", 0.04)))
    assert not missing.passed and missing.target_rank is None and missing.margin is None
    assert missing.reciprocal_rank == 0.0
    alone = score_probe(_probe(), _result(("t", 0.05), ("x", 0.01)))
    assert alone.passed and alone.margin_is_bound and alone.margin == pytest.approx(0.04)


# --- the CI gate ---------------------------------------------------------------------------


def test_fake_gate_meets_the_targets(fake_report: GateReport) -> None:
    assert fake_report.inversions == 0
    assert fake_report.mrr is not None and fake_report.mrr >= 0.95
    assert fake_report.passed is True


def test_fake_gate_does_not_regress(fake_report: GateReport) -> None:
    r = fake_report
    assert (r.mode, r.files, r.probes, r.degraded, r.skipped) == ("fake", 300, 60, False, False)
    assert set(r.by_kind) == {"negation", "number", "qualifier"}
    assert r.failing == []
    assert r.weights == DEFAULT_WEIGHTS
    assert r.duration_s < 30  # the < 3 s target is measured by bench/bench_gate.py


def test_fake_gate_is_deterministic(fake_report: GateReport) -> None:
    again = run_gate("fake", probes=12)
    first = {r.probe.probe_id: (r.target_rank, r.control_ranks) for r in fake_report.results}
    for r in again.results:
        assert first[r.probe.probe_id] == (r.target_rank, r.control_ranks)


def test_report_table_is_written(fake_report: GateReport) -> None:
    files = fake_report.report_files
    data = json.loads(Path(str(files["json"])).read_text())
    assert len(data["probes"]) == 60 and data["meta"]["mode"] == "fake"
    row = data["probes"][0]
    for key in (
        "probe_id",
        "kind",
        "query",
        "target",
        "target_rank",
        "control_ranks",
        "margin",
        "passed",
        "target_fts_rank",
        "control_vector_rank",
    ):
        assert key in row
    pl = pytest.importorskip("polars")
    frame = pl.read_parquet(str(files["parquet"]))
    assert frame.height == 60 and "control_ranks" in frame.columns


def test_local_gate_meets_the_targets(local_report: GateReport) -> None:
    assert local_report.inversions == 0
    assert local_report.mrr is not None and local_report.mrr >= 0.95
    assert local_report.passed is True


def test_local_gate_runs_the_real_model(local_report: GateReport) -> None:
    r = local_report
    assert (r.mode, r.probes, r.degraded, r.skipped) == ("local", 60, False, False)
    assert r.failing == []


# --- the failure path ----------------------------------------------------------------------


def test_a_broken_retriever_fails_the_gate() -> None:
    report = run_gate("fake", size=80, probes=6, weights=BROKEN_WEIGHTS)
    assert report.passed is False and report.mrr == 0.0 and len(report.failing) == 6
    with pytest.raises(DiscriminationFailedError) as caught:
        report.raise_for_failure()
    err = caught.value
    assert err.code == "ERR_DISCRIMINATION_FAILED" and err.exit_code == 1
    assert len(err.details["failing"]) == 6
    assert {"query", "target", "target_rank", "controls"} <= set(err.details["failing"][0])


def test_recency_dominance_inverts_probes() -> None:
    report = run_gate("fake", size=80, weights={"fts": 1.0, "vector": 1.0, "recency": 40.0})
    assert report.passed is False


def test_cli_exits_1_with_the_failing_probes() -> None:
    out = io.StringIO()
    code = run(
        ["eval", "discriminate", "--mode", "fake", "--size", "80", "--probes", "3",
         "--weight", "fts=0", "--weight", "vector=0", "--weight", "recency=1", "--dense"],
        stdout=out,
    )  # fmt: skip
    envelope = json.loads(out.getvalue())
    assert code == 1 and envelope["code"] == "ERR_DISCRIMINATION_FAILED"
    assert len(envelope["details"]["failing"]) == 3


def test_cli_passing_run_answers_eval_discrimination() -> None:
    out = io.StringIO()
    code = run(["eval", "discriminate", "--seed", "1", "--size", "80", "--probes", "3",
                "--dense"], stdout=out)  # fmt: skip
    envelope = json.loads(out.getvalue())
    assert code == 0 and envelope["type"] == "eval.discrimination"
    data = envelope["data"]
    assert data["passed"] is True and data["probes"] == 3 and data["mrr"] == 1.0
    assert data["inversions"] == 0 and data["worst_margin"] > 0


def test_bad_arguments_are_usage_errors() -> None:
    from memhtml.contracts.errors import InvalidFlagError

    with pytest.raises(InvalidFlagError):
        run_gate("offline")
    with pytest.raises(InvalidFlagError):
        run_gate("fake", mrr_floor=1.5)
    with pytest.raises(InvalidFlagError):
        run_gate("fake", probes=0)


# --- live mode -----------------------------------------------------------------------------


def _no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("MEMHTML_AWS_REGION", "us-east-1")


def test_live_without_credentials_is_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_aws(monkeypatch, tmp_path)
    report = run_gate("live")
    assert report.skipped is True and report.passed is None
    assert report.reason and "credentials" in report.reason
    report.raise_for_failure()  # a skip is not a failure...
    assert report.to_data()["passed"] is None  # ...and never a pass


def test_live_with_garbage_credentials_and_no_network_is_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_aws(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAGARBAGEGARBAGE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "garbage/garbage/garbage/garbage/garbage0")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # nothing listens: no network
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    report = run_gate("live")
    assert report.skipped is True and report.passed is None
    assert report.reason and "unreachable" in report.reason


def test_cli_live_skip_is_an_ok_envelope_with_passed_null(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_aws(monkeypatch, tmp_path)
    out = io.StringIO()
    code = run(["eval", "discriminate", "--mode", "live", "--dense"], stdout=out)
    envelope = json.loads(out.getvalue())
    assert code == 0 and envelope["type"] == "eval.discrimination"
    assert envelope["data"]["skipped"] is True
    assert "passed" not in envelope["data"] or envelope["data"]["passed"] is None
