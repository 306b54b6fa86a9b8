"""Discrimination gate inspection: target vs control ranks and margins per probe, worst first.

Run headless (CI does): ``python notebooks/gate_inspection.py`` runs the gate
(``memhtml.eval.gate.run_gate``, fake embedder) into a temporary report
directory and inspects it; ``--report PATH`` reads an existing per-probe table
instead (``probes.json`` or ``probes.parquet`` from
``memhtml eval discriminate --report-dir DIR``, or the DIR itself);
``--mode local`` runs the gate with the MiniLM model. A missing report, or a
gate that cannot be imported, stops the notebook with an error: it never
inspects nothing silently.

Then, for the probe queries, the arms are captured once on the same fixture
and replayed (memhtml.analysis.replay) to show which arm lets a control win
and what the weights and MMR lambda do to the inversions.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import json
    import tempfile
    from pathlib import Path

    import marimo as mo
    import polars as pl

    from memhtml.analysis import render
    from memhtml.analysis.replay import FusionConfig, capture
    from memhtml.contracts.vocab import DEFAULT_RRF_K, DEFAULT_WEIGHTS
    from memhtml.domain.mmr import DEFAULT_MMR_LAMBDA


@app.cell
def _():
    mo.md("""
    # Discrimination gate inspection

    Each probe asks for a target fact that has near-identical controls (one
    token flipped). A probe fails when a control ranks above the target or
    ties it. Worst probes first: failures, then the smallest margin.
    """)
    return


@app.cell
def _():
    args = mo.cli_args()
    report_arg = args.get("report")
    mode = str(args.get("mode", "fake"))
    seed = int(args.get("seed", 7))
    size = int(args.get("size", 300))
    return mode, report_arg, seed, size


@app.cell
def _(mode, report_arg, seed, size):
    def _read_table(path):
        p = Path(path)
        if p.is_dir():
            p = p / "probes.json" if (p / "probes.json").is_file() else p / "probes.parquet"
        if not p.is_file():
            raise FileNotFoundError(
                f"--report {path}: no probes.json or probes.parquet there"
                " (write one with: memhtml eval discriminate --report-dir DIR)"
            )
        if p.suffix == ".parquet":
            return pl.read_parquet(p), {"source": str(p)}
        raw = json.loads(p.read_text())
        if "probes" not in raw:
            raise ValueError(f"{p}: not a gate report (no 'probes' list)")
        return pl.DataFrame(raw["probes"], infer_schema_length=None), raw.get("meta", {})

    def _run_gate():
        try:
            from memhtml.eval.gate import run_gate
        except ImportError as exc:
            raise RuntimeError(
                f"the discrimination gate (memhtml.eval.gate) is not importable: {exc};"
                " pass --report PATH to inspect a saved report"
            ) from exc
        out = Path(tempfile.mkdtemp(prefix="gate-inspection-"))
        gate = run_gate(mode=mode, seed=seed, size=size, report_dir=out)
        if gate.skipped:
            raise RuntimeError(f"the gate was skipped: {gate.reason}")
        table, _ = _read_table(out / "probes.json")
        return table, {k: v for k, v in gate.to_data().items() if k != "failing"}

    probes, meta = _read_table(report_arg) if report_arg else _run_gate()
    if probes.height == 0:
        raise ValueError("the gate report has no probes")
    print(
        f"gate: passed={meta.get('passed')} mrr={meta.get('mrr')}"
        f" failing={meta.get('failing_probes')} probes={probes.height}"
    )
    return meta, probes


@app.cell
def _(meta, probes):
    worst = (
        probes.with_columns(
            pl.col("margin").fill_null(float("-inf")).alias("_m"),
            (~pl.col("passed")).alias("_failed"),
        )
        .sort(["_failed", "_m"], descending=[True, False])
        .drop(["_m", "_failed"])
    )
    cols = [
        "probe_id",
        "kind",
        "passed",
        "target_rank",
        "best_control_rank",
        "margin",
        "target_fts_rank",
        "control_fts_rank",
        "target_vector_rank",
        "control_vector_rank",
        "target_recency_rank",
        "control_recency_rank",
        "query",
    ]
    worst_view = worst.select([c for c in cols if c in worst.columns])
    print(
        render.text_table(
            ["probe", "kind", "passed", "target", "control", "margin"],
            [
                [
                    r["probe_id"],
                    r["kind"],
                    r["passed"],
                    r["target_rank"],
                    r["best_control_rank"],
                    r["margin"],
                ]
                for r in worst_view.head(10).iter_rows(named=True)
            ],
            digits=5,
        )
    )
    mo.vstack(
        [
            mo.md(
                f"**passed**: {meta.get('passed')} · **MRR** {meta.get('mrr')} ·"
                f" **failing** {meta.get('failing_probes')} of {probes.height}"
            ),
            mo.ui.table(worst_view, selection=None),
        ]
    )
    return (worst,)


@app.cell
def _(probes):
    by_kind = (
        probes.group_by("kind")
        .agg(
            pl.len().alias("probes"),
            (~pl.col("passed")).sum().alias("failing"),
            pl.col("reciprocal_rank").mean().alias("mrr"),
            pl.col("margin").min().alias("worst_margin"),
        )
        .sort("kind")
    )
    mo.vstack(
        [
            mo.md("### By kind"),
            mo.ui.table(by_kind, selection=None),
            mo.Html(
                render.bars_html(
                    [(r["kind"], r["mrr"]) for r in by_kind.iter_rows(named=True)],
                    title="MRR by probe kind",
                    scale=1.0,
                    digits=3,
                )
            ),
        ]
    )
    return


@app.cell
def _(probes):
    def _arm_blame(frame):
        failing = frame.filter(~pl.col("passed"))
        rows = []
        for arm in ("fts", "vector", "recency"):
            t, c = f"target_{arm}_rank", f"control_{arm}_rank"
            if t not in frame.columns:
                continue
            worse = failing.filter(
                pl.col(c).is_not_null() & (pl.col(t).is_null() | (pl.col(c) < pl.col(t)))
            ).height
            tied = failing.filter(pl.col(c).is_not_null() & (pl.col(c) == pl.col(t))).height
            rows.append(
                {"arm": arm, "control_ahead": worse, "tied": tied, "failing_probes": failing.height}
            )
        return pl.DataFrame(rows)

    blame = _arm_blame(probes)
    mo.vstack(
        [
            mo.md("### In failing probes, which arm ranks the control ahead?"),
            mo.ui.table(blame, selection=None),
        ]
    )
    return


@app.cell
def _(meta, mode, report_arg, seed, size):
    def _replay():
        """Capture the probe queries' arms on the same fixture and replay alternatives."""
        import memhtml
        from memhtml.eval.fixture import generate_fixture, write_fixture

        plan = generate_fixture(seed, size, str(meta.get("now") or "2026-01-01T00:00:00Z"))
        root = Path(tempfile.mkdtemp(prefix="gate-replay-")) / "fixture"
        write_fixture(plan, root)
        embedder = {"fake": "fake", "local": "local"}.get(mode, "fake")
        corpus = memhtml.open(root, embedder=embedder, now=plan.now)
        try:
            corpus.index.rebuild(embed=True, progress=False)
            cap = capture(corpus, [(p.probe_id, p.query) for p in plan.probes], arm_limit=50)
        finally:
            corpus.close()
        return cap, plan.probes

    def _inversions(cap, probe_list, config):
        failing, rr = 0, 0.0
        for p in probe_list:
            ranked = cap.ranking(p.probe_id, config, 50)
            pos = {path: i for i, path in enumerate(ranked, start=1)}
            t = pos.get(p.target)
            rr += 1.0 / t if t else 0.0
            if t is None or any(pos.get(c, 10**9) < t for c in p.controls):
                failing += 1
        return failing, rr / len(probe_list)

    rows = []
    if report_arg is None or meta.get("seed") is not None:
        cap, probe_list = _replay()
        zero = dict.fromkeys(DEFAULT_WEIGHTS, 0.0)
        configs = [
            ("production", DEFAULT_WEIGHTS),
            ("fts only", {**zero, "fts": 1.0}),
            ("vector only", {**zero, "vector": 1.0}),
            ("fts+vector", {**zero, "fts": 1.0, "vector": 1.0}),
            ("production without recency", {**DEFAULT_WEIGHTS, "recency": 0.0}),
            ("fts 0.5, vector 1, no recency", {**DEFAULT_WEIGHTS, "fts": 0.5, "recency": 0.0}),
        ]
        for name, w in configs:
            for lam in (DEFAULT_MMR_LAMBDA, None):
                failing, mrr = _inversions(cap, probe_list, FusionConfig(w, DEFAULT_RRF_K, lam))
                rows.append({"config": name, "mmr_lambda": lam, "failing": failing, "mrr": mrr})
    replay_table = pl.DataFrame(rows)
    if rows:
        print(
            render.text_table(["config", "mmr", "failing", "mrr"], [list(r.values()) for r in rows])
        )
    mo.vstack(
        [
            mo.md("### Replayed alternatives (strict inversions only; ties are not counted here)"),
            mo.ui.table(replay_table, selection=None),
        ]
    )
    return


if __name__ == "__main__":
    app.run()
