"""The `eval` command group: the discrimination gate, the fixture corpus, merge safety."""

from __future__ import annotations

from typing import Final

from memhtml.contracts.limits import MAX_FILTER_VALUES
from memhtml.surface.spec import Command, Param

H = "memhtml.cli.handlers.eval"
_NOW = "2026-01-01T00:00:00Z"

EVAL_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "eval discriminate",
        "The discrimination gate: every probe target must strictly outrank its flipped controls.",
        "eval.discrimination",
        f"{H}:discriminate",
        params=(
            Param(
                "mode",
                "embedder: fake (deterministic, CI), local (MiniLM), live (Bedrock)",
                default="fake",
                choices=("fake", "local", "live"),
            ),
            Param("seed", "fixture seed", type="int", default=7),
            Param(
                "now",
                "fixed clock for the fixture and the search (ISO instant)",
                default=_NOW,
                metavar="ISO",
            ),
            Param("size", "memory files in the fixture", type="int", default=300, minimum=60),
            Param("probes", "run only the first N probes (default: all)", type="int", minimum=1),
            Param(
                "mrr_floor",
                "mean reciprocal rank the targets must reach",
                type="float",
                default=0.85,
                minimum=0.0,
                maximum=1.0,
            ),
            Param(
                "report_dir",
                "write the per-probe table there (probes.json, probes.parquet)",
                metavar="DIR",
            ),
            Param(
                "weight",
                "diagnostic: override an arm weight, arm=number (repeatable)",
                multiple=True,
                metavar="ARM=W",
                max_count=MAX_FILTER_VALUES,
            ),
            Param(
                "mmr_lambda",
                "diagnostic: override MMR lambda (1 turns MMR off)",
                type="float",
                minimum=0.0,
                maximum=1.0,
            ),
        ),
        needs_repo=False,
        errors=(
            "ERR_DISCRIMINATION_FAILED",
            "ERR_MODEL_UNAVAILABLE",
            "ERR_INVALID_FLAG",
            "ERR_GIT",
        ),
        examples=(
            "memhtml eval discriminate --mode fake",
            "memhtml eval discriminate --mode local --report-dir /tmp/gate",
            "memhtml eval discriminate --mode live",
        ),
        details=(
            "Generates the fixture corpus (targets and their negation, number and qualifier"
            " controls) into a temporary memory root, indexes it with the mode's embedder and"
            " runs each probe through search with production weights (limit 50, explained)."
            " A probe fails when a control ranks above its target or ties it on fused score,"
            " or the target is missing; one failing probe, or MRR under the floor, fails the"
            " gate with ERR_DISCRIMINATION_FAILED (exit 1) listing the failing probes. live"
            " mode reports skipped: true and passed: null when Bedrock is out of reach."
        ),
    ),
    Command(
        "eval fixture",
        "Write the fixture corpus for a seed: a committed memory root, byte-identical per seed.",
        "eval.fixture",
        f"{H}:fixture",
        params=(
            Param("out", "directory to create (new or empty)", required=True, metavar="DIR"),
            Param("seed", "fixture seed", type="int", default=7),
            Param("size", "memory files", type="int", default=300, minimum=60),
            Param(
                "now",
                "fixed clock: dates are relative to it, and it dates the commit",
                default=_NOW,
                metavar="ISO",
            ),
        ),
        needs_repo=False,
        errors=("ERR_INVALID_FLAG", "ERR_GIT"),
        examples=(
            "memhtml eval fixture --seed 7 --out /tmp/fixture",
            "memhtml eval fixture --seed 11 --size 120 --out /tmp/small",
        ),
        details=(
            "Covers every memory type and PARA bucket, archived and superseded memories,"
            " tasks, arcs, people, entity/tag/alias metas, facets, citations, <time>, <dfn>,"
            " <code data-lang>, folds and asides, and authored links of all four edge classes."
            " The same seed, size and now give the same files and the same commit tree."
        ),
    ),
    Command(
        "eval merge-safety",
        "Score duplicate detectors on must-not-merge pairs and true paraphrases.",
        "eval.merge_safety",
        f"{H}:merge_safety",
        params=(
            Param("seed", "pair seed", type="int", default=7),
            Param(
                "threshold", "cosine threshold of the baseline detector", type="float", default=0.92
            ),
            Param(
                "embedder",
                "embedders for the cosine baseline (repeatable; default fake and local)",
                multiple=True,
                choices=("fake", "local", "bedrock"),
                max_count=MAX_FILTER_VALUES,
            ),
        ),
        needs_repo=False,
        errors=("ERR_INVALID_FLAG", "ERR_MODEL_UNAVAILABLE"),
        examples=(
            "memhtml eval merge-safety",
            "memhtml eval merge-safety --threshold 0.97 --embedder local",
        ),
        details=(
            "Must-not-merge pairs differ only in a negation, number, port, version, qualifier"
            " or identifier; paraphrase pairs reorder clauses, swap synonyms or turn an"
            " imperative passive. Reports write-time dedup (content-hash equality) and a"
            " cosine-threshold baseline per embedder: false merges (must be 0), paraphrase"
            " recall, and a threshold sweep."
        ),
    ),
)
