"""Each marimo notebook runs headless as a plain script (`python notebooks/x.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("marimo")
pytest.importorskip("polars")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
TIMEOUT = 240  # generous: CI machines are shared; each runs in well under a minute alone


def _run(name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(NOTEBOOKS / name), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=ROOT,
        env={**os.environ, "MEMHTML_EMBED": "fake", **(env or {})},
    )


def test_rrf_tuning_on_the_fixture(tmp_path: Path) -> None:
    out = tmp_path / "tuning.json"
    proc = _run("rrf_tuning.py", env={"RRF_TUNING_OUT": str(out)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "held-out" in proc.stdout
    summary = json.loads(out.read_text())
    assert summary["n_held_out"] > 0 and summary["configs"] > 100
    assert {"train", "held_out"} <= set(summary["best"])


def test_rrf_tuning_on_a_saved_capture(tmp_path: Path) -> None:
    """A harness capture (--save-capture) is a valid notebook input."""
    from bench.harness import locomo

    samples = ROOT / "memhtml" / "eval" / "benchmarks" / "samples"
    cap = tmp_path / "capture"
    locomo.main(
        [
            "--data",
            str(samples / "locomo_sample.json"),
            "--embedder",
            "fake",
            "--save-capture",
            str(cap),
            "--out-dir",
            str(tmp_path / "res"),
            "--workdir",
            str(tmp_path),
            "--quiet",
        ]
    )
    proc = _run("rrf_tuning.py", "--capture", str(cap), "--metric", "recall@10")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "capture" in proc.stdout and "held-out" in proc.stdout


def test_rrf_tuning_fails_loudly_on_a_missing_capture(tmp_path: Path) -> None:
    proc = _run("rrf_tuning.py", "--capture", str(tmp_path / "nothing"))
    assert proc.returncode != 0
    assert "FileNotFoundError" in proc.stderr


def test_gate_inspection_runs_the_gate() -> None:
    proc = _run("gate_inspection.py")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gate: passed=" in proc.stdout
    assert "production" in proc.stdout


def test_gate_inspection_fails_loudly_without_its_report(tmp_path: Path) -> None:
    proc = _run("gate_inspection.py", "--report", str(tmp_path / "missing"))
    assert proc.returncode != 0
    assert "FileNotFoundError" in proc.stderr and "--report" in proc.stderr


def test_gate_inspection_reads_a_saved_report(tmp_path: Path) -> None:
    """The per-probe table alone (no gate import needed for the tables)."""
    rows = [
        {
            "probe_id": f"p{i}",
            "kind": "negation" if i % 2 else "number",
            "query": "q",
            "target": "t",
            "passed": i != 3,
            "target_rank": 1 if i != 3 else 4,
            "best_control_rank": 2 if i != 3 else 1,
            "margin": 0.01 * (i - 3),
            "reciprocal_rank": 1.0 if i != 3 else 0.25,
            "target_fts_rank": 1,
            "control_fts_rank": 2,
            "target_vector_rank": 3,
            "control_vector_rank": 1,
            "target_recency_rank": 1,
            "control_recency_rank": 2,
        }
        for i in range(6)
    ]
    report = tmp_path / "probes.json"
    report.write_text(json.dumps({"meta": {"passed": False, "mrr": 0.875}, "probes": rows}))
    proc = _run("gate_inspection.py", "--report", str(report))
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = next(
        line for line in proc.stdout.splitlines() if line[:1] == "p" and line[1:2].isdigit()
    )
    assert first.startswith("p3 ")  # the failing probe comes first


def test_bench_report(tmp_path: Path) -> None:
    from bench.harness import factconsolidation, locomo

    samples = ROOT / "memhtml" / "eval" / "benchmarks" / "samples"
    res = tmp_path / "results"
    common = ["--embedder", "fake", "--out-dir", str(res), "--workdir", str(tmp_path), "--quiet"]
    locomo.main(["--data", str(samples / "locomo_sample.json"), "--ablations", *common])
    factconsolidation.main(
        [
            "--data",
            str(samples / "factconsolidation_sample.json"),
            "--heuristic",
            str(samples / "factconsolidation_heuristic_sample.json"),
            *common,
        ]
    )
    proc = _run("bench_report.py", "--results", str(res))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 result files" in proc.stdout
    # the LoCoMo run's three formats side by side
    for fmt in ("plain", "bare", "context"):
        assert f" {fmt} " in proc.stdout


def test_bench_report_fails_loudly_without_results(tmp_path: Path) -> None:
    proc = _run("bench_report.py", "--results", str(tmp_path))
    assert proc.returncode != 0
    assert "no harness results" in proc.stderr


def test_rrf_tuning_on_ray_equals_serial(tmp_path: Path) -> None:
    """`--ray` shares the grid out to a local cluster; the tuning summary is the same."""
    pytest.importorskip("ray")
    serial, ray = tmp_path / "serial.json", tmp_path / "ray.json"
    proc = _run("rrf_tuning.py", env={"RRF_TUNING_OUT": str(serial)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run("rrf_tuning.py", "--ray", "--workers", "2", env={"RRF_TUNING_OUT": str(ray)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "scored on ray (2 worker(s))" in proc.stdout
    assert json.loads(ray.read_text()) == json.loads(serial.read_text())


def _partial_campaign(folder: Path) -> None:
    """Two settings done, a third planned and not run yet (a campaign half-way)."""
    from memhtml.analysis.campaign import CampaignFolder, Cell, CellOutcome

    camp = CampaignFolder(folder)
    camp.cells_dir.mkdir(parents=True)
    cells = []
    for i, setting in enumerate(("base", "new", "later")):
        cid = f"{i:032d}"
        cells.append({"cell": cid, "dataset": "d", "setting": setting, "harness": "locomo"})
        if setting == "later":
            continue
        rows = [{"qid": f"q{j}", "category": "c", "recall@10": float(j % 2 or i)} for j in range(4)]
        cell = Cell(cid, "d", setting, "locomo", (), {"setting": setting})
        camp.write_cell(cell, CellOutcome(cid, rows=rows, metrics=["recall@10"]))
    camp.write_manifest({"campaign": "half", "baseline": "base", "reps": 100, "cells": cells})


def test_campaign_notebook_shows_the_table_as_it_fills(tmp_path: Path) -> None:
    _partial_campaign(tmp_path / "camp")
    proc = _run("campaign.py", "--campaign", str(tmp_path / "camp"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "campaign half: 2 of 3 cells done" in proc.stdout
    lines = proc.stdout.splitlines()
    base = next(x for x in lines if x.split()[:3] == ["d", "base", "recall@10"])
    assert base.split()[3:5] == ["4", "0.5000"]  # n, mean
    new = next(x for x in lines if x.split()[:3] == ["d", "new", "recall@10"])
    assert new.split()[3:5] == ["4", "1.0000"]
    assert "against base (paired by question)" in proc.stdout
    delta = [x for x in lines if x.split()[:2] == ["d", "new"]][-1].split()
    assert delta[3:7] == ["4", "0.5000", "1.0000", "0.5000"]  # n, baseline, value, delta


def test_campaign_notebook_fails_loudly_without_a_campaign(tmp_path: Path) -> None:
    proc = _run("campaign.py", "--campaign", str(tmp_path))
    assert proc.returncode != 0
    assert "not a campaign folder" in proc.stderr
    proc = _run("campaign.py")
    assert proc.returncode != 0 and "--campaign DIR" in proc.stderr
