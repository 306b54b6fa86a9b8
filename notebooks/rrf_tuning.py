"""RRF weight tuning: weights -> metric heatmaps, k curve, train vs held-out.

Run headless (CI does): ``python notebooks/rrf_tuning.py`` (the discrimination
fixture, fake embedder); interactively: ``marimo edit notebooks/rrf_tuning.py``.

Inputs (command-line flags, also under ``marimo edit ... -- --flag value``):

- ``--capture DIR``: a capture written by a harness (``--save-capture DIR``:
  arms.parquet, vectors.parquet, gold.json, ...), e.g. LoCoMo with the local
  embedder. Without it the notebook builds the discrimination fixture (seed 7,
  300 memories, fake embedder) and captures its probe queries (gold: the target).
- ``--metric``: mrr (default), recall@K, ndcg@K, hit@K.
- ``--limit``: the ranking depth replayed (default 10).
- ``--seed`` / ``--held-out``: the split.
- ``--ray [ADDRESS]`` (and ``--workers N``): score the grid's configurations
  on Ray workers (a local cluster when no address; needs memhtml[cluster]).
  The report is the same as the serial one.

Every number is replayed through the production fusion (memhtml.domain.rrf
and memhtml.domain.mmr via memhtml.analysis.replay) and printed with the
held-out mean next to the train mean.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import json
    import os
    import tempfile
    from functools import partial
    from pathlib import Path

    import marimo as mo
    import polars as pl

    from memhtml.analysis import render
    from memhtml.analysis.fanout import executor_for
    from memhtml.analysis.replay import ArmCapture, FusionConfig, capture
    from memhtml.analysis.tuning import grid_search, split_queries
    from memhtml.contracts.vocab import DEFAULT_RRF_K, DEFAULT_WEIGHTS
    from memhtml.eval.benchmarks import metrics as bm


@app.cell
def _():
    mo.md("""
    # RRF weight tuning

    Arms captured once, re-fused offline with the production functions. Rows
    are always scored on a seeded **train** split and reported next to the
    **held-out** split: a configuration is only better if held-out agrees.
    """)
    return


@app.cell
def _():
    args = mo.cli_args()
    capture_dir = args.get("capture")
    metric_name = str(args.get("metric", "mrr"))
    limit = int(args.get("limit", 10))
    seed = int(args.get("seed", 0))
    held_share = float(args.get("held-out", 0.3))
    ray_address = args.get("ray")  # absent: serial; bare --ray: a local cluster
    workers = int(args["workers"]) if args.get("workers") else None
    return capture_dir, held_share, limit, metric_name, ray_address, seed, workers


@app.cell
def _(metric_name):
    def _metric(name):
        if name == "mrr":
            return bm.reciprocal_rank
        kind, _, k = name.partition("@")
        fns = {"recall": bm.recall_at_k, "ndcg": bm.ndcg_any_at_k, "hit": bm.hit_at_k}
        if kind not in fns or not k.isdigit():
            raise ValueError(f"--metric {name!r}: use mrr, recall@K, ndcg@K or hit@K")
        return partial(fns[kind], k=int(k))

    metric = _metric(metric_name)
    return (metric,)


@app.cell
def _(capture_dir):
    def _from_capture(path):
        folder = Path(path)
        if not (folder / "arms.parquet").is_file() or not (folder / "gold.json").is_file():
            raise FileNotFoundError(
                f"--capture {folder}: expected arms.parquet and gold.json there"
                " (write them with a harness's --save-capture DIR)"
            )
        cap = ArmCapture.read(folder)
        raw = json.loads((folder / "gold.json").read_text())
        gold = {q: frozenset(v["paths"]) for q, v in raw.items() if v["paths"]}
        return cap, gold, f"capture {folder}"

    def _from_fixture():
        import memhtml
        from memhtml.eval.fixture import generate_fixture, write_fixture

        plan = generate_fixture(7, 300, "2026-01-01T00:00:00Z")
        root = Path(tempfile.mkdtemp(prefix="rrf-tuning-")) / "fixture"
        write_fixture(plan, root)
        corpus = memhtml.open(root, embedder="fake", now=plan.now)
        try:
            corpus.index.rebuild(embed=True, progress=False)
            cap = capture(corpus, [(p.probe_id, p.query) for p in plan.probes], arm_limit=50)
        finally:
            corpus.close()
        gold = {p.probe_id: frozenset({p.target}) for p in plan.probes}
        return cap, gold, "discrimination fixture (seed 7, 300 memories, fake embedder)"

    arm_capture, gold, source = _from_capture(capture_dir) if capture_dir else _from_fixture()
    if not gold:
        raise ValueError(f"{source}: no query has gold; nothing to tune")
    print(f"source: {source}; {len(gold)} queries with gold")
    return arm_capture, gold, source


@app.cell
def _(arm_capture, gold, held_share, seed):
    train_ids, held_ids = split_queries(list(gold), held_share, seed)
    mo.md(f"**{len(train_ids)}** train / **{len(held_ids)}** held-out queries (seed {seed})")
    return held_ids, train_ids


@app.cell
def _(arm_capture, gold, limit, metric, metric_name, seed, held_share, ray_address, workers):
    _root = Path(__file__).resolve().parents[1]
    with executor_for(
        None if ray_address is None else (str(ray_address) or "local"),
        workers=workers,
        pythonpath=[_root],
    ) as _executor:
        report = grid_search(
            arm_capture,
            gold,
            metric,
            metric_name=metric_name,
            grid={
                "fts": (0.0, 0.5, 1.0, 1.5, 2.0),
                "vector": (0.0, 0.5, 1.0, 1.5, 2.0),
                "recency": (0.0, 0.25, 0.5, 1.0),
                "salience": (DEFAULT_WEIGHTS["salience"],),
            },
            ks=(10, 30, 60, 100),
            limit=limit,
            held_out=held_share,
            seed=seed,
            executor=_executor,
        )
    print(f"scored on {_executor.describe()['kind']} ({_executor.workers} worker(s))")
    print("\n".join(report.lines()))
    table = report.frame()
    return report, table


@app.cell
def _(report, table):
    def _cells(frame, value):
        best_k = report.best.config.k
        best_rec = report.best.config.weights["recency"]
        sub = frame.filter((pl.col("k") == best_k) & (pl.col("w_recency") == best_rec))
        return {(r["w_fts"], r["w_vector"]): r[value] for r in sub.iter_rows(named=True)}

    axis = sorted(set(table["w_fts"].to_list()))
    heat_train = render.heatmap_html(
        _cells(table, "train"),
        axis,
        sorted(set(table["w_vector"].to_list())),
        title=f"train {report.metric} (k={report.best.config.k},"
        f" recency={report.best.config.weights['recency']:g})",
        row_label="fts",
        col_label="vector",
    )
    heat_held = render.heatmap_html(
        _cells(table, "held_out"),
        axis,
        sorted(set(table["w_vector"].to_list())),
        title=f"held-out {report.metric}",
        row_label="fts",
        col_label="vector",
    )
    mo.hstack([mo.Html(heat_train), mo.Html(heat_held)])
    return


@app.cell
def _(report):
    frontier = pl.DataFrame(report.frontier("k"))
    recency = pl.DataFrame(report.frontier("recency"))
    print(
        render.text_table(
            ["k", "train", "held_out", "fts", "vector", "recency"],
            [
                [r["k"], r["train"], r["held_out"], r["w_fts"], r["w_vector"], r["w_recency"]]
                for r in frontier.iter_rows(named=True)
            ],
        )
    )
    mo.vstack(
        [
            mo.md("### Best configuration per k (chosen on train; held-out beside it)"),
            mo.ui.table(frontier, selection=None),
            mo.md("### Best configuration per recency weight"),
            mo.ui.table(recency, selection=None),
            mo.Html(
                render.bars_html(
                    [(f"k={r['k']}", r["held_out"]) for r in frontier.iter_rows(named=True)],
                    title=f"held-out {report.metric} of the best config per k",
                    digits=3,
                )
            ),
        ]
    )
    return


@app.cell
def _(arm_capture, gold, held_ids, limit, metric, report):
    def _mean(config, ids):
        return sum(metric(arm_capture.ranking(q, config, limit), gold[q]) for q in ids) / max(
            len(ids), 1
        )

    best = report.best.config
    rows = []
    for lam in (None, 0.9, 0.7, 0.5):
        for name, cfg in (
            ("production", FusionConfig(DEFAULT_WEIGHTS, DEFAULT_RRF_K, lam)),
            ("tuned", FusionConfig(best.weights, best.k, lam)),
        ):
            rows.append({"config": name, "mmr_lambda": lam, "held_out": _mean(cfg, held_ids)})
    mmr_table = pl.DataFrame(rows)
    mo.vstack([mo.md("### MMR lambda on the held-out split"), mo.ui.table(mmr_table)])
    return


@app.cell
def _(report, source):
    summary = {"source": source, **report.to_data()}
    out = os.environ.get("RRF_TUNING_OUT")
    if out:
        Path(out).write_text(json.dumps(summary, indent=2, default=str))
    mo.md(
        f"Best on train: `{report.best.config.label()}` — train {report.best.train:.4f},"
        f" held-out {report.best.held_out:.4f} (production held-out"
        f" {report.baseline.held_out:.4f})."
    )
    return


if __name__ == "__main__":
    app.run()
