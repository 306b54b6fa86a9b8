"""A benchmark campaign's tables, as its cells land.

Run headless (CI does): ``python notebooks/campaign.py --campaign DIR`` prints
the tables once; interactively, ``marimo edit notebooks/campaign.py --
--campaign DIR`` re-reads the folder every few seconds while
``python -m bench.harness.campaign run`` (serial or ``--ray``) fills it.

Flags: ``--campaign DIR`` (required: a folder ``campaign run --out`` wrote),
``--metric recall@10,mrr`` (default: every metric of the finished cells),
``--by-category``, ``--categories a,b``, ``--baseline NAME`` (default: the
spec's), ``--reps N`` and ``--seed N`` (default: the spec's), ``--every
SECONDS`` (the refresh period, default 5).

Every number is DuckDB SQL over the cells' Parquet files
(memhtml.analysis.campaign_tables): means with a percentile bootstrap
interval per setting, and each setting minus the baseline, paired by
question. A folder that is not a campaign stops the notebook with an error.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    from pathlib import Path

    import marimo as mo

    from memhtml.analysis import campaign_tables as ct
    from memhtml.analysis import render
    from memhtml.analysis.campaign import CampaignFolder


@app.cell
def _():
    mo.md("""
    # Benchmark campaign

    Each dataset x setting cell is one harness run; its per-question rows land
    as one Parquet file when it finishes. The tables below are DuckDB SQL over
    the files that are there now, so they fill as the campaign runs.
    """)
    return


@app.cell
def _():
    args = mo.cli_args()
    if not args.get("campaign"):
        raise FileNotFoundError("--campaign DIR: name a campaign folder (campaign run --out DIR)")
    folder = Path(str(args["campaign"]))
    manifest = CampaignFolder(folder).manifest()  # a clear error when it is not a campaign

    def _csv(key):
        value = args.get(key)
        return [x.strip() for x in str(value).split(",") if x.strip()] if value else None

    options = {
        "metrics": _csv("metric"),
        "by_category": "by-category" in args,
        "categories": _csv("categories"),
        "seed": int(args.get("seed", manifest.get("seed", 0))),
        "reps": int(args.get("reps", manifest.get("reps", 1000))),
        "level": float(manifest.get("level", 0.95)),
    }
    baseline = str(args.get("baseline") or manifest["baseline"])
    every = float(args.get("every", 5))
    return baseline, every, folder, manifest, options


@app.cell
def _(every):
    # Interactive only: each tick re-runs the cells below; a script run reads once.
    refresh = mo.ui.refresh(default_interval=f"{every:g}s", label="re-read the folder")
    refresh
    return (refresh,)


@app.cell
def _(folder, manifest, refresh):
    refresh.value  # depend on the ticks
    con = ct.connect(folder)
    progress = ct.progress(con)
    done, total = int(progress["done"].sum()), int(progress["cells"].sum())
    print(f"campaign {manifest['campaign']}: {done} of {total} cells done")
    mo.vstack(
        [
            mo.md(f"**{done} of {total}** cells done (campaign `{manifest['campaign']}`)"),
            mo.ui.table(progress, selection=None),
        ]
    )
    return con, done


@app.cell
def _(con, done, options):
    mo.stop(done == 0, mo.md("No cell has finished yet."))
    table = ct.summary(con, **options)
    _cat = ["category"] if options["by_category"] else []
    print(
        render.text_table(
            ["dataset", "setting", *_cat, "metric", "n", "mean", "ci_low", "ci_high"],
            [
                [
                    *[r[c] for c in ("dataset", "setting", *_cat, "metric", "n", "mean")],
                    *[r["ci_low"], r["ci_high"]],
                ]
                for r in table.iter_rows(named=True)
            ],
            digits=4,
        )
    )
    mo.vstack(
        [
            mo.md(
                f"### Per setting: mean and {options['level']:.0%} bootstrap interval"
                f" ({options['reps']} replicates, seed {options['seed']})"
            ),
            mo.ui.table(table, selection=None),
        ]
    )
    return (table,)


@app.cell
def _(baseline, con, done, options):
    mo.stop(done == 0)
    delta = ct.deltas(con, baseline, **options)
    _cat = ["category"] if options["by_category"] else []
    _cols = ["dataset", "setting", *_cat, "metric", "n", "baseline", "value", "delta"]
    _cols += ["ci_low", "ci_high"]
    print(f"\nagainst {baseline} (paired by question)")
    print(
        render.text_table(
            _cols,
            [[r[c] for c in _cols] for r in delta.iter_rows(named=True)],
            digits=4,
        )
    )
    bars = render.bars_html(
        [
            (f"{r['dataset']} {r['setting']} {r['metric']}", r["delta"])
            for r in delta.iter_rows(named=True)
        ],
        title=f"delta against {baseline}",
        digits=4,
    )
    mo.vstack(
        [
            mo.md(f"### Against `{baseline}`, paired by question"),
            mo.ui.table(delta, selection=None),
            mo.Html(bars),
        ]
    )
    return


if __name__ == "__main__":
    app.run()
