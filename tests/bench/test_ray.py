"""`--ray` gives what the serial run gives: the executor, harnesses, sweeps and campaigns.

One local Ray cluster (2 CPUs) serves every test of this module; each `--ray`
run below joins it (an executor finding Ray initialised uses that session and
leaves it running). Rows are compared whole except the measured
``latency_ms`` column; summaries, ablations and tuning reports exactly.
"""

from __future__ import annotations

import json
import operator
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")
pl = pytest.importorskip("polars")
pq = pytest.importorskip("pyarrow.parquet")

from memhtml.analysis import fanout  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "memhtml" / "eval" / "benchmarks" / "samples"


@pytest.fixture(scope="module")
def cluster() -> Iterator[fanout.RayCluster]:
    ex = fanout.RayCluster(workers=2, pythonpath=[ROOT])
    try:
        yield ex
    finally:
        ex.close()


def _common(out: Path, work: Path) -> list[str]:
    return ["--embedder", "fake", "--out-dir", str(out), "--workdir", str(work), "--quiet"]


def _rows(path: Path) -> Any:
    return pl.read_parquet(path).drop("latency_ms")


def test_the_ray_executor_matches_serial(cluster: fanout.RayCluster) -> None:
    assert cluster.workers == 2 and cluster.describe()["kind"] == "ray"
    items = list(range(-20, 20))
    assert cluster.map(abs, items) == fanout.Serial().map(abs, items)
    assert cluster.map(operator.add, [1, 2, 3], shared=10) == [11, 12, 13]
    got = dict(cluster.as_completed(abs, [-1, -2, -3]))
    assert got == {0: 1, 1: 2, 2: 3}
    with pytest.raises(ValueError, match="invalid literal"):
        cluster.map(int, ["1", "x"])
    with pytest.raises(SystemExit) as info:
        cluster.map(sys.exit, ["the data is wrong"])
    assert info.value.code == "the data is wrong"


def _harness_pair(tmp_path: Path, mod: Any, name: str, argv: list[str]) -> tuple[Any, ...]:
    serial = mod.main([*argv, *_common(tmp_path / "s", tmp_path / "ws")])
    ray = mod.main([*argv, "--ray", *_common(tmp_path / "r", tmp_path / "wr")])
    return serial, ray, f"{name}.questions.parquet"


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("locomo", ["--data", str(SAMPLES / "locomo_sample.json"), "--ablations", "--tune"]),
        (
            "factconsolidation",
            [
                "--data",
                str(SAMPLES / "factconsolidation_sample.json"),
                "--heuristic",
                str(SAMPLES / "factconsolidation_heuristic_sample.json"),
                "--ablations",
            ],
        ),
        ("beam", ["--data", str(SAMPLES / "beam"), "--ablations"]),
        ("longmemeval", ["--data", str(SAMPLES / "longmemeval_sample.json"), "--tune"]),
    ],
)
def test_a_harness_with_ray_gives_the_serial_results(
    cluster: fanout.RayCluster, tmp_path: Path, name: str, argv: list[str]
) -> None:
    import importlib

    mod = importlib.import_module(f"bench.harness.{name}")
    serial, ray, parquet = _harness_pair(tmp_path, mod, name, argv)
    assert ray["executor"]["kind"] == "ray" and serial["executor"]["kind"] == "serial"
    assert ray["summary"] == serial["summary"]
    assert ray["load_report"] == serial["load_report"]
    for key in ("ablations", "recency_sweep", "replay_check", "formats"):
        if key in serial:
            if key == "formats":
                assert {f: b["summary"] for f, b in ray[key].items()} == {
                    f: b["summary"] for f, b in serial[key].items()
                }
            else:
                assert ray[key] == serial[key], key
    if "tuning" in serial:
        assert ray["tuning"]["best"] == serial["tuning"]["best"]
        assert ray["tuning"]["held_out_metrics"] == serial["tuning"]["held_out_metrics"]
    assert _rows(tmp_path / "r" / parquet).equals(_rows(tmp_path / "s" / parquet))


def test_a_tuning_sweep_on_ray_is_the_serial_sweep(cluster: fanout.RayCluster) -> None:
    import memhtml
    from memhtml.analysis.replay import capture
    from memhtml.analysis.tuning import coordinate_search, grid_search
    from memhtml.eval.benchmarks import metrics as bm
    from memhtml.eval.fixture import generate_fixture, write_fixture

    plan = generate_fixture(7, 120, "2026-01-01T00:00:00Z")
    root = Path(__import__("tempfile").mkdtemp(prefix="ray-tuning-")) / "fx"
    write_fixture(plan, root)
    corpus = memhtml.open(root, embedder="fake", now=plan.now)
    try:
        corpus.index.rebuild(embed=True, progress=False)
        cap = capture(corpus, [(p.probe_id, p.query) for p in plan.probes], arm_limit=40)
    finally:
        corpus.close()
    gold = {p.probe_id: frozenset({p.target}) for p in plan.probes}
    metric = partial(bm.recall_at_k, k=5)
    kw: dict[str, Any] = {"metric_name": "recall@5", "limit": 10, "ks": (10, 60)}
    grid = {"fts": (0.5, 1.5), "vector": (0.5, 1.0), "recency": (0.0, 0.25), "salience": (0.4,)}
    here = grid_search(cap, gold, metric, grid=grid, **kw)
    there = grid_search(cap, gold, metric, grid=grid, executor=cluster, **kw)
    assert len(here.scored) == 16
    assert [s.to_row() for s in there.scored] == [s.to_row() for s in here.scored]
    assert there.to_data() == here.to_data()
    walk = coordinate_search(cap, gold, metric, grid=grid, **kw)
    walk_ray = coordinate_search(cap, gold, metric, grid=grid, executor=cluster, **kw)
    assert [s.to_row() for s in walk_ray.scored] == [s.to_row() for s in walk.scored]


def test_the_lever_sweep_on_ray_is_the_serial_sweep(
    cluster: fanout.RayCluster, tmp_path: Path
) -> None:
    from bench.harness import levers, locomo

    data_root = tmp_path / "data"
    (data_root / "locomo").mkdir(parents=True)
    (data_root / "locomo" / "locomo10.json").write_bytes(
        (SAMPLES / "locomo_sample.json").read_bytes()
    )
    kept = ["--data", str(SAMPLES / "locomo_sample.json"), "--format", "plain", "--keep"]
    locomo.main([*kept, *_common(tmp_path / "res", tmp_path / "kept")])
    argv = ["--locomo", str(tmp_path / "kept" / "locomo-plain"), "--data-root", str(data_root)]
    argv += ["--embedder", "fake", "--out-dir", str(tmp_path / "lev")]
    serial = levers.main([*argv, "--tag", "s"])
    ray = levers.main([*argv, "--tag", "r", "--ray"])
    (res_s,), (res_r,) = serial["results"], ray["results"]
    assert res_s["scopes"] == res_r["scopes"] == ["conv-s1", "conv-s2"]

    def strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "ms_per_query"} for r in rows]

    assert strip(res_r["rows"]) == strip(res_s["rows"])
    assert ray["executor"]["kind"] == "ray"


def test_a_campaign_on_ray_writes_the_serial_cells(
    cluster: fanout.RayCluster, tmp_path: Path
) -> None:
    from bench.harness import campaign
    from tests.bench.test_campaign import cell_files, write_spec

    spec = write_spec(tmp_path)
    serial = campaign.main(["run", str(spec), "--out", str(tmp_path / "s")])
    ray = campaign.main(["run", str(spec), "--out", str(tmp_path / "r"), "--ray"])
    assert ray["run"]["executor"]["kind"] == "ray" and ray["run"]["executor"]["workers"] == 2
    assert sorted(ray["run"]["computed"]) == sorted(serial["run"]["computed"])
    s_files, r_files = cell_files(tmp_path / "s"), cell_files(tmp_path / "r")
    assert set(s_files) == set(r_files) and len(s_files) == 4
    for cid in s_files:
        assert _rows(r_files[cid]).equals(_rows(s_files[cid])), cid
        meta_s = json.loads(pq.read_metadata(s_files[cid]).metadata[b"memhtml.campaign.cell"])
        meta_r = json.loads(pq.read_metadata(r_files[cid]).metadata[b"memhtml.campaign.cell"])
        assert meta_r["summary"] == meta_s["summary"]
        assert meta_r["identity"] == meta_s["identity"]
    assert ray["tables"]["summary"] == serial["tables"]["summary"]
    assert ray["tables"]["deltas"] == serial["tables"]["deltas"]
    # a serial rerun finds the Ray run's cells done
    again = campaign.main(["run", str(spec), "--out", str(tmp_path / "r"), "--quiet"])
    assert again["run"]["computed"] == [] and len(again["run"]["skipped"]) == 4
