"""Each harness end to end on a tiny sample in the benchmark's own format (fake embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.vocab import DEFAULT_RRF_K, DEFAULT_WEIGHTS
from memhtml.eval.benchmarks import SAMPLES_DIR

pl = pytest.importorskip("polars")

SAMPLES = SAMPLES_DIR


def _common(tmp_path: Path) -> list[str]:
    return [
        "--embedder",
        "fake",
        "--out-dir",
        str(tmp_path / "results"),
        "--workdir",
        str(tmp_path),
        "--tag",
        "test",
        "--quiet",
    ]


def _read(tmp_path: Path, name: str) -> tuple[dict[str, Any], Any]:
    payload = json.loads((tmp_path / "results" / f"{name}-test.json").read_text())
    table = pl.read_parquet(tmp_path / "results" / f"{name}-test.questions.parquet")
    return payload, table


def _provenance(payload: dict[str, Any]) -> None:
    assert payload["format"] and payload["unit"]  # every result states its unit and format
    assert payload["embedder"] == "fake"
    assert payload["weights"] == DEFAULT_WEIGHTS
    assert payload["k"] == DEFAULT_RRF_K and payload["mmr_lambda"] == 0.7
    assert payload["production_defaults"] is True
    assert len(payload["dataset"]["sha256"]) == 64
    assert "commit" in payload["memhtml"]
    assert payload["replay_check"]["checked"] == payload["replay_check"]["equal"] > 0


def test_locomo(tmp_path: Path) -> None:
    from bench.harness import locomo

    payload = locomo.main(
        [
            "--data",
            str(SAMPLES / "locomo_sample.json"),
            "--ablations",
            "--tune",
            "--tune-method",
            "coordinate",
            *_common(tmp_path),
        ]
    )
    _provenance(payload)
    disk, table = _read(tmp_path, "locomo")
    assert disk["summary"] == payload["summary"]
    head = payload["summary"]["headline_categories_1_4"]
    assert head["overall"]["n"] == 6
    assert set(head["overall"]["metrics"]) >= {"recall@5", "recall@10", "recall@25", "recall@50"}
    assert "adversarial" in payload["summary"]["all_categories"]["groups"]
    # one command, three formats, one table; the headline is the single-turn `plain`
    assert payload["format"] == "plain" and payload["formats_run"] == ["plain", "bare", "context"]
    assert payload["unit"] == locomo.UNITS["plain"]
    assert set(payload["formats"]) == {"plain", "bare", "context"}
    assert payload["formats"]["plain"]["summary"] == payload["summary"]
    assert payload["formats"]["context"]["unit"].startswith("windowed")
    assert not payload["formats"]["context"]["comparable_with_published"]
    assert [r["format"] for r in payload["table"]][:3] == ["plain", "bare", "context"]
    assert all(r["unit"] for r in payload["table"])
    md = (tmp_path / "results" / "locomo-test.md").read_text()
    assert "| bare |" in md and "DRAGON" in md
    assert table.height == 7 * 3
    assert sorted(set(table["format"].to_list())) == ["bare", "context", "plain"]
    assert "question" not in table.columns  # ids and numbers only, no benchmark text
    names = [row["config"] for row in payload["ablations"]]
    assert "fts only (lexical)" in names and "vector only" in names
    assert "all four (production weights) + MMR 0.7" in names
    assert payload["tuning"]["n_held_out"] > 0
    assert any("held-out" in line for line in payload["tuning"]["lines"])
    assert payload["tuning"]["held_out_metrics"][0]["config"].startswith("production")
    # every memory sits at a path that names its dia_id
    assert locomo.doc_path("conv-26", "D3:5") == "areas/locomo/conv-26/d3-5.html"


@pytest.mark.parametrize("fmt", ["plain", "dated", "context"])
def test_locomo_formats(fmt: str) -> None:
    from bench.harness import locomo
    from memhtml.eval.benchmarks import load_locomo

    corpora, _ = load_locomo(SAMPLES / "locomo_sample.json")
    ops = locomo.to_ops(corpora[0], fmt)
    doc_id, op = ops[1]
    assert doc_id == "D1:2" and op["path"].endswith("/d1-2.html")
    assert op["event_at"].startswith("2023-05-08")
    assert op["claim"].startswith("[8 May 2023] ") == (fmt != "plain")
    assert bool(op["body"]) == (fmt == "context")


def test_locomo_bare_is_the_baseline_unit() -> None:
    from bench.harness import locomo
    from memhtml.eval.benchmarks import load_locomo

    corpora, _ = load_locomo(SAMPLES / "locomo_sample.json")
    docs = corpora[0].docs
    for (doc_id, op), doc in zip(locomo.to_ops(corpora[0], "bare"), docs, strict=True):
        assert op["title"] == doc_id == doc.doc_id  # title = the dialog id
        assert op["claim"] == doc.text  # "Speaker: text" (+ the caption the loader adds)
        assert op["claim"].startswith(f"{doc.speaker}: ")
        assert "event_at" not in op and "entity" not in op and op["body"] == []


def test_locomo_format_list() -> None:
    from bench.harness import locomo

    assert locomo.parse_formats("plain, bare,context,plain") == ("plain", "bare", "context")
    assert locomo.headline_format(("bare", "plain")) == "plain"
    assert locomo.headline_format(("context", "bare")) == "context"
    with pytest.raises(SystemExit):
        locomo.parse_formats("plain,windowed")
    with pytest.raises(SystemExit):
        locomo.parse_formats(" , ")


def test_k_help_states_the_production_k(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.harness import locomo

    with pytest.raises(SystemExit):
        locomo.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"RRF k (default: production, {DEFAULT_RRF_K})" in text


def test_factconsolidation(tmp_path: Path) -> None:
    from bench.harness import factconsolidation as fc

    payload = fc.main(
        [
            "--data",
            str(SAMPLES / "factconsolidation_sample.json"),
            "--heuristic",
            str(SAMPLES / "factconsolidation_heuristic_sample.json"),
            "--sizes",
            "6k",
            "--ablations",
            *_common(tmp_path),
        ]
    )
    _provenance(payload)
    _, table = _read(tmp_path, "factconsolidation")
    groups = payload["summary"]["by_size"]["groups"]
    assert set(groups) == {"6k"}
    assert set(groups["6k"]["metrics"]) >= {"hit@1", "hit@5", "stale_above_current"}
    assert table.height == groups["6k"]["n"]
    assert payload["recency_sweep"][0]["config"].startswith("fts=1 vector=1 recency=0")
    assert fc.doc_path("6k", "12") == "areas/factconsolidation/6k/f000012.html"


def test_beam(tmp_path: Path) -> None:
    from bench.harness import beam

    payload = beam.main(["--data", str(SAMPLES / "beam"), "--ablations", *_common(tmp_path)])
    _provenance(payload)
    _, table = _read(tmp_path, "beam")
    metrics = payload["summary"]["overall"]["metrics"]
    assert {"any@10", "all@10", "both@10", "update_first"} <= set(metrics)
    assert metrics["both@10"]["n"] >= 1 and metrics["update_first"]["n"] >= 1
    assert table.height == payload["summary"]["overall"]["n"]


def test_beam_split_message_keeps_all_text() -> None:
    from bench.harness.beam import split_message

    text = "user: First sentence here. Second one.\n\nA new paragraph with more."
    claim, body = split_message(text)
    assert claim == "user: First sentence here."
    assert body == ["Second one.", "A new paragraph with more."]
    long = "x" * 1000
    claim, body = split_message(long)
    assert len(claim) <= 280 and claim + "".join(body) == long


def test_longmemeval(tmp_path: Path) -> None:
    from bench.harness import longmemeval

    payload = longmemeval.main(
        ["--data", str(SAMPLES / "longmemeval_sample.json"), "--tune", *_common(tmp_path)]
    )
    _provenance(payload)
    metrics = payload["summary"]["overall"]["metrics"]
    for k in (1, 3, 5, 10, 30, 50):
        for level in ("turn", "session"):
            assert f"{level}_any@{k}" in metrics and f"{level}_ndcg@{k}" in metrics
    assert payload["load_report"]["skipped"] == {"abstention question (_abs)": 1}


def test_longmemeval_needs_data(tmp_path: Path) -> None:
    from bench.harness import longmemeval

    with pytest.raises(SystemExit):
        longmemeval.main(_common(tmp_path))


def test_parse_weights() -> None:
    from bench.harness.common import metric_by_name, parse_weights

    assert parse_weights("recency=1,fts=2") == {
        "fts": 2.0,
        "vector": 1.0,
        "recency": 1.0,
        "salience": 0.4,
    }
    assert parse_weights(None) is None
    with pytest.raises(SystemExit):
        parse_weights("bogus=1")
    assert metric_by_name("recall@10")(["a", "b"], {"b"}) == 1.0
    assert metric_by_name("mrr")(["a", "b"], {"b"}) == 0.5


def test_locomo_through_an_openai_compatible_endpoint(tmp_path: Path, monkeypatch) -> None:
    """`--embedder openai` against the stand-in that serves the fake's rows: the same table."""
    from bench.embed_standin import StandIn
    from bench.harness import locomo
    from memhtml.embed import registry

    def table(embedder: str) -> dict[str, Any]:
        args = ["--data", str(SAMPLES / "locomo_sample.json"), "--format", "plain"]
        (tmp_path / embedder).mkdir()
        common = _common(tmp_path / embedder)
        common[1] = embedder
        return locomo.main([*args, *common])

    with StandIn() as server:
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        registry.clear_cache()
        try:
            remote = table("openai")
        finally:
            registry.clear_cache()
    assert remote["embedder"] == "openai"
    assert remote["embedder_model"] == "openai:stand-in-embed@384"
    assert server.documents > 0
    assert remote["summary"] == table("fake")["summary"]
