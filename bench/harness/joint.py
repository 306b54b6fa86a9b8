"""Fusion settings checked on LoCoMo and BEAM together, so that neither pays for the other.

Reads the arm captures two harness runs saved (`--save-capture DIR`; LoCoMo may
be one capture per conversation under DIR), replays a grid of fusion settings
offline (memhtml.analysis.replay: the production functions, so a replay of the
production settings is the production ranking) and scores each on both
benchmarks: LoCoMo evidence recall@10 over categories 1-4 on `plain` units,
BEAM any@10 and knowledge-update ordering.

Questions are split once, seeded, into train and held-out per benchmark. A
setting is chosen on TRAIN by the smaller of its two gains over production
(LoCoMo recall@10 gain, BEAM any@10 gain): the best setting is the one whose
worse benchmark gains most, so a setting that buys one benchmark with the
other cannot win. The table shows train and held-out side by side.

    MEMHTML_EMBED=local python -m bench.harness.locomo --embedder local --format plain \\
        --save-capture /tmp/cap/locomo --tag local-plain
    MEMHTML_EMBED=local python -m bench.harness.beam --embedder local \\
        --save-capture /tmp/cap/beam --tag local
    python -m bench.harness.joint --locomo /tmp/cap/locomo --beam /tmp/cap/beam --tag local
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from bench.harness import beam as beam_h
from bench.harness import common as h
from bench.harness import locomo as locomo_h
from bench.harness.levers import beam_id, locomo_id
from memhtml.analysis.replay import ArmCapture, FusionConfig
from memhtml.analysis.tuning import split_queries
from memhtml.contracts.vocab import (
    DEFAULT_MMR_LAMBDA,
    DEFAULT_RRF_K,
    DEFAULT_TIME_WEIGHT,
    DEFAULT_WEIGHTS,
)
from memhtml.eval.benchmarks import load_beam, load_locomo

LIMIT: Final = 50
GRID: Final[dict[str, tuple[float, ...]]] = {
    "fts": (1.0, 1.5, 2.0),
    "vector": (0.5, 1.0, 1.5),
    "recency": (0.0, 0.25, 0.5),
}
KS: Final = (10, 20)
TIME_WEIGHTS: Final = (0.0, DEFAULT_TIME_WEIGHT)


def _read_captures(root: Path) -> ArmCapture:
    """One capture (DIR/capture.json) or one per sub-folder, merged."""
    dirs = (
        [root]
        if (root / "capture.json").exists()
        else sorted(d for d in root.iterdir() if (d / "capture.json").exists())
    )
    if not dirs:
        raise SystemExit(f"no capture under {root}")
    merged = h.merge_captures([ArmCapture.read(d) for d in dirs])
    assert merged is not None
    anchor = h.FIXED_NOW[:10]  # the harnesses' corpus clock, for captures that lack it
    for q in merged.queries:
        merged.anchors.setdefault(q, anchor)
        if merged.anchors[q] is None:
            merged.anchors[q] = anchor
    return merged


Scorer = Callable[[list[str], Any], dict[str, Any]]


class Bench:
    """One benchmark's capture, questions and scorer."""

    def __init__(
        self,
        name: str,
        cap: ArmCapture,
        questions: dict[str, Any],
        to_id: Callable[[str], str],
        scorer: Scorer,
        metrics: Sequence[str],
        seed: int,
        held_out: float,
    ) -> None:
        self.name, self.cap, self.to_id, self.scorer, self.metrics = (
            name,
            cap,
            to_id,
            scorer,
            metrics,
        )
        self.questions = {q: questions[q] for q in cap.query_ids if q in questions}
        self.train, self.held = split_queries(self.questions, held_out, seed)

    def evaluate(self, config: FusionConfig, ids: Sequence[str]) -> dict[str, float | None]:
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for qid in ids:
            ranked = [self.to_id(p) for p in self.cap.ranking(qid, config, LIMIT)]
            row = self.scorer(ranked, self.questions[qid])
            for m in self.metrics:
                if row.get(m) is not None:
                    sums[m] = sums.get(m, 0.0) + float(row[m])
                    counts[m] = counts.get(m, 0) + 1
        return {m: (sums[m] / counts[m] if counts.get(m) else None) for m in self.metrics}


def _configs() -> list[FusionConfig]:
    out = []
    for fts, vec, rec, k, tw in itertools.product(
        GRID["fts"], GRID["vector"], GRID["recency"], KS, TIME_WEIGHTS
    ):
        weights = {**DEFAULT_WEIGHTS, "fts": fts, "vector": vec, "recency": rec}
        out.append(FusionConfig(weights, k, DEFAULT_MMR_LAMBDA, time_weight=tw))
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.harness.joint", description=__doc__)
    p.add_argument("--locomo", type=Path, required=True, help="LoCoMo plain capture(s)")
    p.add_argument("--beam", type=Path, required=True, help="BEAM capture")
    p.add_argument("--data-root", type=Path, default=None, help="benchmark data root")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--held-out", type=float, default=0.3)
    p.add_argument("--tag", default=None)
    p.add_argument("--out-dir", type=Path, default=h.RESULTS_DIR)
    args = p.parse_args(argv)
    started = time.perf_counter()
    root = args.data_root
    corpora, _ = load_locomo(
        h.data_path(root / "locomo" / "locomo10.json" if root else None, "locomo", "locomo10.json")
    )
    locomo_q = {q.qid: q for c in corpora for q in c.questions if q.category in locomo_h.HEADLINE}
    beam_corpora, _ = load_beam(
        h.data_path(root / "beam" / "100K" if root else None, "beam", "100K")
    )
    beam_q = {q.qid: q for c in beam_corpora for q in c.questions}
    benches = [
        Bench(
            "locomo-plain",
            _read_captures(args.locomo),
            locomo_q,
            locomo_id,
            lambda ids, q: locomo_h.score(ids, q.gold_ids),
            ("recall@10",),
            args.seed,
            args.held_out,
        ),
        Bench(
            "beam",
            _read_captures(args.beam),
            beam_q,
            beam_id,
            beam_h.score,
            ("any@10", "update_first"),
            args.seed,
            args.held_out,
        ),
    ]
    production = FusionConfig(dict(DEFAULT_WEIGHTS), DEFAULT_RRF_K, DEFAULT_MMR_LAMBDA)
    base = {
        b.name: {"train": b.evaluate(production, b.train), "held": b.evaluate(production, b.held)}
        for b in benches
    }
    rows = []
    for config in _configs():
        row: dict[str, Any] = {"config": config.label(), **config.to_data()}
        gains = []
        for b in benches:
            train, held = b.evaluate(config, b.train), b.evaluate(config, b.held)
            row[b.name] = {"train": train, "held": held}
            m = b.metrics[0]
            gains.append((train[m] or 0.0) - (base[b.name]["train"][m] or 0.0))
        row["worse_train_gain"] = min(gains)
        rows.append(row)
        print(f"{row['worse_train_gain']:+.4f}  {row['config']}", flush=True)
    rows.sort(key=lambda r: -r["worse_train_gain"])
    out = {
        "benchmark": "joint",
        "memhtml": h.git_commit(),
        "unit": {"locomo-plain": locomo_h.UNITS["plain"], "beam": beam_h.UNIT},
        "metric": "LoCoMo recall@10 (categories 1-4), BEAM any@10; the smaller train gain chooses",
        "split": {"seed": args.seed, "held_out": args.held_out},
        "n": {b.name: {"train": len(b.train), "held": len(b.held)} for b in benches},
        "production": {"config": production.label(), **base},
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
        "loadavg": list(os.getloadavg()),
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / (f"joint-{args.tag}.json" if args.tag else "joint.json")
    path.write_text(json.dumps(out, indent=2, default=str) + "\n")

    def fmt(v: float | None) -> str:
        return "" if v is None else f"{100 * v:.1f}"

    head = [
        "config",
        "worse gain",
        "LoCoMo R@10 train/held",
        "BEAM any@10 train/held",
        "BEAM update first train/held",
    ]
    table = []
    for r in [{"config": "production", "worse_train_gain": 0.0, **base}, *rows[:12]]:
        lo, be = r["locomo-plain"], r["beam"]
        table.append(
            [
                r["config"],
                f"{100 * r['worse_train_gain']:+.1f}",
                f"{fmt(lo['train']['recall@10'])} / {fmt(lo['held']['recall@10'])}",
                f"{fmt(be['train']['any@10'])} / {fmt(be['held']['any@10'])}",
                f"{fmt(be['train']['update_first'])} / {fmt(be['held']['update_first'])}",
            ]
        )
    h.print_table("fusion settings on LoCoMo and BEAM together", head, table)
    print(f"\nwrote {path}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
