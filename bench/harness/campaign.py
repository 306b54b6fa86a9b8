"""Benchmark campaigns: harness x dataset x settings cells, serial or on Ray, resumable.

    python -m bench.harness.campaign run SPEC.toml --out DIR [--ray [ADDRESS]] [--workers N]
    python -m bench.harness.campaign report DIR [--metric recall@10 ...] [--by-category]
        [--categories multi-hop,temporal] [--baseline NAME] [--reps N] [--seed N]
    python -m bench.harness.campaign prune DIR   # drop cell files the current plan does not name

A spec (TOML or JSON; docs/research.md, section Campaigns) names datasets (a
harness with its data) and settings (weights, k, MMR lambda, embedder,
flags) and the baseline setting. Each dataset x setting cell runs the
harness's own `run` (the same code as ``python -m bench.harness.<name>``, its
scopes serial inside the cell) and lands as ``DIR/cells/<id>.parquet`` the
moment it finishes; a rerun computes only the cells not there (the id
hashes the harness, the data's digest, the flags, the embedder and the
code). ``--ray`` hands the cells to Ray workers instead of running them one
after the other here: the rows are the same (the measured ``latency_ms``
column aside).

``run`` prints the per-setting table and the deltas against the baseline
with bootstrap intervals (DuckDB over the cell files); ``report`` prints
them again, for any metric and per category; notebooks/campaign.py shows
them as the campaign fills. Each run appends one line to ``DIR/runs.jsonl``
(cells computed / skipped / failed, wall seconds, executor, load average).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from bench.harness import common as h
from memhtml.analysis import campaign as cp
from memhtml.analysis.fanout import Serial

HARNESSES: dict[str, str] = {
    "locomo": "bench.harness.locomo",
    "beam": "bench.harness.beam",
    "factconsolidation": "bench.harness.factconsolidation",
    "longmemeval": "bench.harness.longmemeval",
}
# Prepended to a cell's flags (a later flag of the spec wins): a LoCoMo cell answers
# each question once, so it runs one ingest format (the single-turn headline).
CELL_DEFAULTS: dict[str, tuple[str, ...]] = {"locomo": ("--format", "plain")}
# What `run` prints when no --metric is named: each harness's headline metric.
HEADLINE_METRIC: dict[str, str] = {
    "locomo": "recall@10",
    "beam": "any@10",
    "factconsolidation": "hit@1",
    "longmemeval": "session_any@5",
}


def code_identity() -> dict[str, Any]:
    """What identifies the code a cell's rows come from (part of every cell id)."""
    root = h.REPO_ROOT
    readers = [root / "memhtml" / "analysis" / "campaign_tables.py"]
    return {
        "source": cp.source_digest(
            [root / "memhtml", root / "migrations", root / "bench" / "harness"], exclude=readers
        ),
        "packages": cp.package_versions(),
    }


def _cpu() -> float:
    """CPU seconds of this process and its finished children (git) so far."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class FlagError(Exception):
    """A cell's command line the harness does not accept (argparse's message)."""


def parse_cell(harness: str, argv: Sequence[str]) -> tuple[Any, argparse.Namespace]:
    """The harness module and its parsed flags; FlagError instead of argparse's exit."""
    mod = importlib.import_module(HARNESSES[harness])
    p = mod.parser()

    def refuse(message: str) -> NoReturn:
        raise FlagError(message)

    p.error = refuse  # type: ignore[method-assign]
    args = p.parse_args([*CELL_DEFAULTS.get(harness, ()), *argv, "--quiet"])
    return mod, args


def run_cell(task: cp.CellTask) -> cp.CellOutcome:
    """One cell: the harness's `run` on its command line, scopes serial (module level: a Ray
    worker imports it by name). A failure comes back as ``error``, never raised."""
    started = time.perf_counter()
    cpu = _cpu()
    info = {"pid": os.getpid(), "host": socket.gethostname(), "load_start": os.getloadavg()}
    try:
        mod, args = parse_cell(task.harness, task.argv)
        payload, rows = mod.run(args, Serial())
    except SystemExit as exc:  # a harness stops on bad data with a message
        return cp.CellOutcome(task.id, error=f"{task.harness}: {exc.code}")
    except Exception as exc:
        return cp.CellOutcome(task.id, error=f"{task.harness}: {type(exc).__name__}: {exc}")
    info["load_end"] = os.getloadavg()
    info["cpu_s"] = round(_cpu() - cpu, 3)
    return cp.CellOutcome(
        task.id,
        rows=rows,
        metrics=list(mod.METRICS),
        group=mod.GROUP,
        summary=payload["summary"],
        seconds=time.perf_counter() - started,
        info=info,
    )


def _say(text: str) -> None:
    """Progress to stderr, only on a terminal."""
    if sys.stderr.isatty():
        print(text, file=sys.stderr, flush=True)


def run(
    spec_path: Path, out: Path, executor: Any, *, quiet: bool = False
) -> tuple[cp.CampaignReport, cp.CampaignSpec]:
    """Plan, skip what is done, compute the rest on `executor`; one line to runs.jsonl."""
    spec = cp.load_spec(spec_path, harnesses=HARNESSES)
    refused = []
    for cell in cp.plan(spec, code={}):  # every command line parses before any cell runs
        try:
            parse_cell(cell.harness, cell.argv)
        except FlagError as exc:
            refused.append(f"{cell.label()}: {cell.harness} {exc}")
    if refused:
        raise SystemExit("campaign spec: flags the harness refuses:\n  " + "\n  ".join(refused))
    folder = cp.CampaignFolder(out)
    load_start = os.getloadavg()
    n = len(spec.datasets) * len(spec.settings)
    seen = 0

    def on_cell(cell: cp.Cell, status: str, outcome: cp.CellOutcome | None) -> None:
        nonlocal seen
        seen += 1
        took = f" {outcome.seconds:.1f} s" if outcome and status == "computed" else ""
        why = f": {outcome.error}" if outcome and outcome.error else ""
        _say(f"[{seen}/{n}] {cell.label()} ({cell.id[:8]}): {status}{took}{why}")

    report = cp.run_campaign(
        spec, folder, run_cell, executor, code=code_identity(), on_cell=on_cell
    )
    line = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **report.to_data(),
        "cpus": os.cpu_count(),
        "loadavg_start": list(load_start),
        "loadavg_end": list(os.getloadavg()),
    }
    with (folder.root / "runs.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
    if not quiet:
        print(
            f"campaign {spec.name}: {len(report.computed)} cells computed,"
            f" {len(report.skipped)} already done, {len(report.failed)} failed"
            f" in {report.seconds:.1f} s ({report.executor['kind']},"
            f" {report.executor['workers']} worker(s))"
        )
        for cid, why in report.failed.items():
            print(f"  failed {cid}: {why}")
        if report.other_files:
            print(
                f"  {report.other_files} cell file(s) of an earlier plan (another spec, or the"
                " code before an edit) are kept; `campaign prune DIR` removes them"
            )
    return report, spec


def tables(
    out: Path,
    *,
    metrics: Sequence[str] | None,
    by_category: bool,
    categories: Sequence[str] | None,
    baseline: str | None,
    reps: int | None,
    seed: int | None,
) -> dict[str, Any]:
    """The summary and delta tables (DuckDB over the cell files) as row lists."""
    from memhtml.analysis import campaign_tables as ct

    folder = cp.CampaignFolder(out)
    manifest = folder.manifest()
    con = ct.connect(out)
    if metrics is None:
        harnesses = sorted({c["harness"] for c in manifest["cells"]})
        known = ct.metrics_of(con)
        metrics = [HEADLINE_METRIC[x] for x in harnesses if HEADLINE_METRIC.get(x) in known]
    opts = {
        "by_category": by_category,
        "metrics": metrics,
        "categories": categories,
        "seed": manifest.get("seed", 0) if seed is None else seed,
        "reps": manifest.get("reps", 1000) if reps is None else reps,
        "level": manifest.get("level", 0.95),
    }
    base = baseline or manifest["baseline"]
    return {
        "progress": ct.progress(con).to_dicts(),
        "summary": ct.summary(con, **opts).to_dicts(),
        "baseline": base,
        "deltas": ct.deltas(con, base, **opts).to_dicts(),
        "options": opts,
    }


def print_tables(t: dict[str, Any]) -> None:
    from memhtml.analysis.render import text_table

    done = sum(r["done"] for r in t["progress"])
    total = sum(r["cells"] for r in t["progress"])
    level = t["options"]["level"]
    cat = ["category"] if t["options"]["by_category"] else []
    print(f"\ncells done: {done} of {total}")
    cols = ["dataset", "setting", *cat, "metric", "n", "mean", "ci_low", "ci_high"]
    print(f"\nper setting (mean, {level:.0%} bootstrap interval, {t['options']['reps']} reps)")
    print(text_table(cols, [[r[c] for c in cols] for r in t["summary"]], digits=4))
    cols = ["dataset", "setting", *cat, "metric", "n", "baseline", "value", "delta"]
    cols += ["ci_low", "ci_high"]
    print(f"\nagainst {t['baseline']} (paired by question)")
    print(text_table(cols, [[r[c] for c in cols] for r in t["deltas"]], digits=4))


def _csv(text: str | None) -> list[str] | None:
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.harness.campaign", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="compute the cells that are not done")
    r.add_argument("spec", type=Path, help="the campaign spec (.toml or .json)")
    r.add_argument("--out", type=Path, required=True, help="the campaign folder")
    r.add_argument("--quiet", action="store_true", help="no tables on stdout")
    h.add_cluster_flags(r)
    rep = sub.add_parser("report", help="the tables of a campaign folder")
    rep.add_argument("folder", type=Path)
    pr = sub.add_parser("prune", help="remove cell files the current plan does not name")
    pr.add_argument("folder", type=Path)
    for q in (r, rep):
        q.add_argument("--metric", default=None, help="metrics, comma list (default: headline)")
        q.add_argument("--by-category", action="store_true", help="one row per category")
        q.add_argument("--categories", default=None, help="only these categories, comma list")
        q.add_argument("--baseline", default=None, help="another baseline setting")
        q.add_argument("--reps", type=int, default=None, help="bootstrap replicates")
        q.add_argument("--seed", type=int, default=None, help="bootstrap seed")
        q.add_argument("--json", type=Path, default=None, help="also write the tables here")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    from memhtml.contracts.errors import MemhtmlError

    args = parser().parse_args(argv)
    out: dict[str, Any] = {}
    if args.command == "prune":
        try:
            gone = cp.prune(cp.CampaignFolder(args.folder))
        except MemhtmlError as exc:
            raise SystemExit(f"{exc.code}: {exc.message}") from None
        print(f"removed {len(gone)} cell file(s) the plan does not name")
        return {"removed": [p.name for p in gone]}
    try:
        if args.command == "run":
            with h.executor_for(args) as executor:
                report, _ = run(args.spec, args.out, executor, quiet=args.quiet)
            out["run"] = report.to_data()
            folder = args.out
        else:
            folder = args.folder
        if args.command == "report" or not args.quiet:
            out["tables"] = tables(
                folder,
                metrics=_csv(args.metric),
                by_category=args.by_category,
                categories=_csv(args.categories),
                baseline=args.baseline,
                reps=args.reps,
                seed=args.seed,
            )
            print_tables(out["tables"])
    except MemhtmlError as exc:
        raise SystemExit(f"{exc.code}: {exc.message}") from None
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
    failed = out.get("run", {}).get("failed")
    if failed:
        raise SystemExit(f"{len(failed)} cell(s) failed; rerun to retry them")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
