"""Benchmark report: the retrieval harnesses' result JSON as tables and bar charts.

Run headless (CI does): ``python notebooks/bench_report.py`` reads every
harness result under ``bench/results/`` (``--results DIR`` for another
folder, ``--glob PATTERN`` to narrow it). A folder without any harness result
stops the notebook with an error.

Results come from ``python -m bench.harness.<name>``; docs/research.md has
one command per number.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import json
    from pathlib import Path

    import marimo as mo
    import polars as pl

    from memhtml.analysis import render

    BENCHMARKS = ("locomo", "factconsolidation", "beam", "longmemeval")


@app.cell
def _():
    mo.md("""
    # Retrieval benchmarks

    Retrieval only (no LLM): each harness writes one memory per turn / fact /
    message through the real write path and asks every question through
    `Corpus.search`. Published references are shown next to our numbers.
    """)
    return


@app.cell
def _():
    args = mo.cli_args()
    folder = Path(args.get("results") or Path(__file__).resolve().parents[1] / "bench" / "results")
    pattern = str(args.get("glob", "*.json"))
    if not folder.is_dir():
        raise FileNotFoundError(f"--results {folder}: no such folder")
    results = {}
    for _path in sorted(folder.glob(pattern)):
        try:
            _data = json.loads(_path.read_text())
        except (OSError, json.JSONDecodeError) as _exc:
            raise ValueError(f"{_path}: unreadable result: {_exc}") from _exc
        if isinstance(_data, dict) and _data.get("benchmark") in BENCHMARKS:
            results[_path.stem] = _data
    if not results:
        raise FileNotFoundError(
            f"no harness results ({', '.join(BENCHMARKS)}) in {folder}/{pattern};"
            " run e.g. python -m bench.harness.locomo"
        )
    print(f"{len(results)} result files: {', '.join(sorted(results))}")
    return (results,)


@app.cell
def _(results):
    def runs_of(_name):
        return {_k: v for _k, v in results.items() if v["benchmark"] == _name}

    def cfg_label(_r):
        w = _r["weights"]
        return (
            f"{_r['embedder']} fts={w['fts']:g} vec={w['vector']:g} rec={w['recency']:g}"
            f" sal={w['salience']:g} k={_r['k']} mmr={_r['mmr_lambda']}"
        )

    return cfg_label, runs_of


@app.cell
def _(cfg_label, runs_of):
    locomo_rows = []
    for _stem, _r in runs_of("locomo").items():
        # one run may hold several ingest formats (plain, bare, context) side by side;
        # an older result holds one, at the top level
        _formats = _r.get("formats") or {
            _r.get("format") or "?": {"unit": _r.get("unit"), "summary": _r["summary"]}
        }
        for _fmt, _block in _formats.items():
            _head = _block["summary"]["headline_categories_1_4"]
            _cats = _block["summary"]["all_categories"]["groups"]
            _row = {
                "result": _stem,
                "format": _fmt,
                "unit": _block.get("unit") or "?",
                "headline": _fmt == _r.get("format"),
                "config": cfg_label(_r),
                "n": _head["overall"]["n"],
            }
            for _k in _r["ks"]:
                _row[f"R@{_k}"] = 100 * _head["overall"]["metrics"][f"recall@{_k}"]["mean"]
            for _cat in ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial"):
                if _cat in _cats:
                    _row[f"{_cat} R@10"] = 100 * _cats[_cat]["metrics"]["recall@10"]["mean"]
            locomo_rows.append(_row)
    locomo = pl.DataFrame(locomo_rows, infer_schema_length=None) if locomo_rows else pl.DataFrame()
    published = pl.DataFrame(
        [
            {"method": "DRAGON (paper)", "R@5": 56.7, "R@10": 66.2, "R@25": 76.7, "R@50": 82.7},
            {"method": "RRF(BM25, MiniLM)", "R@5": 47.8, "R@10": 58.8, "R@25": 71.5, "R@50": 80.1},
            {"method": "RRF, date prefixed", "R@5": 51.5, "R@10": 62.0, "R@25": 74.3, "R@50": 81.2},
        ]
    ).with_columns(pl.lit("one dialog turn").alias("unit"))
    if locomo_rows:
        print(
            render.text_table(
                ["result", "format", "R@5", "R@10", "R@25", "R@50"],
                [
                    [_r["result"], _r["format"], _r["R@5"], _r["R@10"], _r["R@25"], _r["R@50"]]
                    for _r in locomo_rows
                ],
                digits=1,
            )
        )
    bars = [(f"{_r['result']} [{_r['format']}]", _r["R@10"]) for _r in locomo_rows] + [
        (f"{_m['method']} [turn]", _m["R@10"]) for _m in published.iter_rows(named=True)
    ]
    mo.vstack(
        [
            mo.md(
                "## LoCoMo evidence recall@k (categories 1–4, n = 1,535 on the full set)\n\n"
                "Formats side by side. `bare` is the published baselines' unit (one turn,"
                " 'Speaker: text', no date); `plain` is one turn written as production writes"
                " it (the headline); `context` is a windowed unit (a turn plus the previous"
                " one) with no same-unit reference."
            ),
            mo.ui.table(locomo, selection=None) if locomo_rows else mo.md("_no LoCoMo result_"),
            mo.md("Published references (unit: one dialog turn)"),
            mo.ui.table(published, selection=None),
            mo.Html(render.bars_html(bars, title="recall@10", scale=100.0)),
        ]
    )
    return


@app.cell
def _(cfg_label, runs_of):
    fc_rows = []
    for _stem, _r in runs_of("factconsolidation").items():
        for _size, _block in _r["summary"]["by_size"]["groups"].items():
            _m = _block["metrics"]
            fc_rows.append(
                {
                    "result": _stem,
                    "unit": _r.get("unit", "?"),
                    "config": cfg_label(_r),
                    "size": _size,
                    "n": _block["n"],
                    "hit@1": 100 * _m["hit@1"]["mean"],
                    "hit@5": 100 * _m["hit@5"]["mean"],
                    "stale_above_current": 100 * _m["stale_above_current"]["mean"],
                }
            )
    fc = pl.DataFrame(fc_rows) if fc_rows else pl.DataFrame()
    if fc_rows:
        print(
            render.text_table(
                ["result", "size", "hit@1", "hit@5", "stale>current"],
                [
                    [_r["result"], _r["size"], _r["hit@1"], _r["hit@5"], _r["stale_above_current"]]
                    for _r in fc_rows
                ],
                digits=1,
            )
        )
    mo.vstack(
        [
            mo.md("## FactConsolidation (single-hop): current fact vs stale predecessors"),
            mo.md("Targets: stale-above-current ≤ 5% at every size, hit@1 ≥ 85%."),
            mo.ui.table(fc, selection=None) if fc_rows else mo.md("_no FactConsolidation result_"),
            mo.Html(
                render.bars_html(
                    [(f"{_r['result']} {_r['size']}", _r["stale_above_current"]) for _r in fc_rows],
                    title="stale-above-current (%)",
                    scale=100.0,
                )
            ),
        ]
    )
    return


@app.cell
def _(cfg_label, runs_of):
    beam_rows = []
    for _stem, _r in runs_of("beam").items():
        _blocks = {"overall": _r["summary"]["overall"], **_r["summary"]["groups"]}
        for _cat, _block in _blocks.items():
            _m = _block["metrics"]
            beam_rows.append(
                {
                    "result": _stem,
                    "unit": _r.get("unit", "?"),
                    "category": _cat,
                    "n": _block["n"],
                    **{
                        _name: None if _m[_name]["mean"] is None else 100 * _m[_name]["mean"]
                        for _name in ("any@10", "all@10", "any@50", "both@10", "update_first")
                    },
                }
            )
    beam = pl.DataFrame(beam_rows) if beam_rows else pl.DataFrame()
    mo.vstack(
        [
            mo.md("## BEAM 100K: message ids against source_chat_ids"),
            mo.ui.table(beam, selection=None) if beam_rows else mo.md("_no BEAM result_"),
        ]
    )
    return


@app.cell
def _(results):
    ablation_rows = []
    for _stem, _r in results.items():
        for _t in _r.get("ablations", []):
            ablation_rows.append(
                {
                    "result": _stem,
                    "config": _t["config"],
                    "n": _t["n"],
                    **{_m: v for _m, v in _t["overall"].items() if isinstance(v, (int, float))},
                }
            )
    ablations = pl.DataFrame(ablation_rows, infer_schema_length=None) if ablation_rows else None
    tuning_lines = [
        f"{_stem}:\n" + "\n".join(_r["tuning"]["lines"])
        for _stem, _r in results.items()
        if "tuning" in _r
    ]
    if tuning_lines:
        print("\n".join(tuning_lines))
    mo.vstack(
        [
            mo.md("## Ablations (replayed from one capture per run)"),
            mo.ui.table(ablations, selection=None) if ablations is not None else mo.md("_none_"),
            mo.md("## Tuning (train vs held-out)"),
            mo.md("```\n" + "\n\n".join(tuning_lines) + "\n```")
            if tuning_lines
            else mo.md("_no tuning run_"),
        ]
    )
    return


if __name__ == "__main__":
    app.run()
