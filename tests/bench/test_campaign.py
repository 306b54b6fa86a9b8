"""Campaigns over the real harnesses on the bundled samples (serial; Ray: test_ray.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pl = pytest.importorskip("polars")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "memhtml" / "eval" / "benchmarks" / "samples"


def write_spec(tmp_path: Path, name: str = "spec.json", **over: Any) -> Path:
    """Two datasets (LoCoMo and FactConsolidation samples) x two settings: four cells."""
    spec: dict[str, Any] = {
        "name": "samples",
        "baseline": "production",
        "embedder": "fake",
        "reps": 200,
        "datasets": [
            {"name": "locomo", "harness": "locomo", "data": str(SAMPLES / "locomo_sample.json")},
            {
                "name": "fc",
                "harness": "factconsolidation",
                "data": str(SAMPLES / "factconsolidation_sample.json"),
                "files": {"heuristic": str(SAMPLES / "factconsolidation_heuristic_sample.json")},
            },
        ],
        "settings": [
            {"name": "production"},
            {"name": "fts-only", "weights": "fts=1,vector=0,recency=0,salience=0"},
        ],
    }
    spec.update(over)
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    return path


def cell_files(folder: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted((folder / "cells").glob("*.parquet"))}


def test_a_campaign_runs_each_cell_as_its_harness_does(tmp_path: Path) -> None:
    from bench.harness import campaign, locomo

    out = campaign.main(["run", str(write_spec(tmp_path)), "--out", str(tmp_path / "c")])
    assert len(out["run"]["computed"]) == 4 and not out["run"]["failed"]
    manifest = json.loads((tmp_path / "c" / "campaign.json").read_text())
    files = cell_files(tmp_path / "c")
    assert set(files) == {c["cell"] for c in manifest["cells"]}
    # the production LoCoMo cell holds what `python -m bench.harness.locomo --format plain` gives
    prod = next(
        c for c in manifest["cells"] if (c["dataset"], c["setting"]) == ("locomo", "production")
    )
    cell = pl.read_parquet(files[prod["cell"]])
    payload = locomo.main(
        [
            "--data",
            str(SAMPLES / "locomo_sample.json"),
            "--embedder",
            "fake",
            "--format",
            "plain",
            "--out-dir",
            str(tmp_path / "res"),
            "--quiet",
        ]
    )
    alone = pl.read_parquet(tmp_path / "res" / "locomo.questions.parquet")
    assert cell["qid"].to_list() == alone["qid"].to_list()
    assert cell["recall@10"].to_list() == alone["recall@10"].to_list()
    assert cell["top10"].to_list() == alone["top10"].to_list()
    meta = json.loads(pq.read_metadata(files[prod["cell"]]).metadata[b"memhtml.campaign.cell"])
    assert meta["summary"] == payload["summary"]
    # the tables: a per-setting row for each headline metric, a delta row per non-baseline
    tables = out["tables"]
    assert {(r["dataset"], r["setting"], r["metric"]) for r in tables["summary"]} == {
        ("locomo", "production", "recall@10"),
        ("locomo", "fts-only", "recall@10"),
        ("fc", "production", "hit@1"),
        ("fc", "fts-only", "hit@1"),
    }
    head = next(r for r in tables["summary"] if r["setting"] == "production" and r["n"] == 7)
    overall = payload["summary"]["all_categories"]["overall"]["metrics"]
    assert head["mean"] == pytest.approx(overall["recall@10"]["mean"])
    assert {r["setting"] for r in tables["deltas"]} == {"fts-only"}


def test_a_killed_campaign_resumes_with_only_the_missing_cells(tmp_path: Path) -> None:
    """SIGKILL a serial run once its first cell has landed; the rerun computes the rest."""
    spec = write_spec(tmp_path)
    folder = tmp_path / "c"
    argv = ["run", str(spec), "--out", str(folder), "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.harness.campaign", *argv],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "MEMHTML_EMBED": "fake"},
    )
    try:
        deadline = time.monotonic() + 240
        while not cell_files(folder) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    done = cell_files(folder)
    assert 1 <= len(done) < 4
    before = {cid: (p.stat().st_ino, p.stat().st_mtime_ns) for cid, p in done.items()}

    from bench.harness import campaign
    from memhtml.analysis.campaign import CampaignFolder

    for cid in done:  # every file a killed run left is whole
        assert CampaignFolder(folder).is_done(cid)
    out = campaign.main(["run", str(spec), "--out", str(folder), "--quiet"])
    assert sorted(out["run"]["skipped"]) == sorted(done)
    assert len(out["run"]["computed"]) == 4 - len(done)
    assert not set(out["run"]["computed"]) & set(done)
    after = cell_files(folder)
    assert len(after) == 4
    for cid, stamp in before.items():  # finished cells were not rewritten
        assert (after[cid].stat().st_ino, after[cid].stat().st_mtime_ns) == stamp
    assert not list((folder / "cells").glob(".memhtml-*.tmp"))
    runs = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 1 and runs[0]["computed"] == out["run"]["computed"]


def test_a_bad_cell_fails_alone_and_the_run_says_so(tmp_path: Path) -> None:
    """A LoCoMo cell fed a FactConsolidation file fails; the other cells land; exit non-zero."""
    from bench.harness import campaign

    spec = write_spec(
        tmp_path,
        datasets=[
            {"name": "ok", "harness": "locomo", "data": str(SAMPLES / "locomo_sample.json")},
            {
                "name": "wrong",
                "harness": "locomo",
                "data": str(SAMPLES / "factconsolidation_sample.json"),
            },
        ],
        settings=[{"name": "production"}],
    )
    with pytest.raises(SystemExit, match="1 cell"):
        campaign.main(["run", str(spec), "--out", str(tmp_path / "c"), "--quiet"])
    assert len(cell_files(tmp_path / "c")) == 1
    line = json.loads((tmp_path / "c" / "runs.jsonl").read_text())
    (why,) = line["failed"].values()
    assert why.startswith("locomo: ")


def test_a_bad_spec_stops_before_any_cell(tmp_path: Path) -> None:
    from bench.harness import campaign

    spec = write_spec(tmp_path, settings=[{"name": "production", "weights": "fts=lots"}])
    with pytest.raises(SystemExit, match=r"ERR_INVALID_FLAG: campaign spec: settings\[0\].weights"):
        campaign.main(["run", str(spec), "--out", str(tmp_path / "c")])
    assert not (tmp_path / "c").exists()
    spec = write_spec(tmp_path, datasets=[{"name": "x", "harness": "nope", "data": str(spec)}])
    with pytest.raises(SystemExit, match="locomo"):  # the message lists the harnesses
        campaign.main(["run", str(spec), "--out", str(tmp_path / "c")])


def test_a_flag_the_harness_refuses_stops_the_run_before_any_cell(tmp_path: Path) -> None:
    from bench.harness import campaign

    spec = write_spec(tmp_path, settings=[{"name": "production", "args": ["--no-such-flag"]}])
    with pytest.raises(SystemExit, match=r"locomo x production: locomo unrecognized arguments"):
        campaign.main(["run", str(spec), "--out", str(tmp_path / "c")])
    assert not (tmp_path / "c").exists()


def test_report_prints_the_tables_by_category(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.harness import campaign

    campaign.main(["run", str(write_spec(tmp_path)), "--out", str(tmp_path / "c"), "--quiet"])
    capsys.readouterr()
    out = campaign.main(
        [
            *["report", str(tmp_path / "c"), "--by-category", "--metric", "recall@10,mrr"],
            *["--json", str(tmp_path / "t.json")],
        ]
    )
    text = capsys.readouterr().out
    assert "cells done: 4 of 4" in text and "multi-hop" in text
    cats = {r["category"] for r in out["tables"]["summary"] if r["dataset"] == "locomo"}
    assert {"multi-hop", "single-hop", "adversarial"} <= cats
    assert json.loads((tmp_path / "t.json").read_text())["tables"]["baseline"] == "production"
