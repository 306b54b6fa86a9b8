"""Handlers for the eval group: thin calls into memhtml.eval."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation
from memhtml.index.retrieval import parse_weights


def discriminate(
    inv: Invocation,
    *,
    mode: str = "fake",
    seed: int = 7,
    now: str = "2026-01-01T00:00:00Z",
    size: int = 300,
    probes: int | None = None,
    mrr_floor: float = 0.85,
    report_dir: str | None = None,
    weight: list[str] | None = None,
    mmr_lambda: float | None = None,
) -> dict[str, Any]:
    """Run the gate; a failing gate raises ERR_DISCRIMINATION_FAILED."""
    from memhtml.eval.gate import run_gate

    report = run_gate(
        mode,
        seed=seed,
        size=size,
        probes=probes,
        now=now,
        mrr_floor=mrr_floor,
        report_dir=report_dir,
        weights=parse_weights(weight),
        mmr_lambda=mmr_lambda,
    )
    report.raise_for_failure()
    return report.to_data()


def human_discriminate(data: dict[str, Any]) -> str:
    """A summary for a person at a terminal."""
    if data["skipped"]:
        return f"gate ({data['mode']}): SKIPPED — {data['reason']}"
    lines = [
        f"gate ({data['mode']}): {'PASS' if data['passed'] else 'FAIL'}"
        f"  probes {data['probes']}  files {data['files']}  MRR {data['mrr']:.4f}"
        f"  inversions {data['inversions']}  worst margin {data['worst_margin']:.6f}"
        f"  {data['duration_s']:.2f}s",
    ]
    for kind, row in data["by_kind"].items():
        lines.append(
            f"  {kind:10s} probes {row['probes']:3d}  MRR {row['mrr']:.4f}"
            f"  failing {row['failing']}"
        )
    return "\n".join(lines)


def fixture(
    inv: Invocation,
    out: str,
    seed: int = 7,
    size: int = 300,
    now: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    """Generate and commit the fixture corpus."""
    from memhtml.eval.fixture import fixture_coverage, generate_fixture, write_fixture

    plan = generate_fixture(seed, size, now)
    written = write_fixture(plan, out)
    coverage = fixture_coverage(plan.files)
    return {
        **plan.summary(),
        **written.to_data(),
        "coverage": {k: v for k, v in coverage.items() if k != "invalid"},
        "invalid_files": len(coverage["invalid"]),
        "probe_set": [p.to_data() for p in plan.probes],
    }


def merge_safety(
    inv: Invocation, seed: int = 7, threshold: float = 0.92, embedder: list[str] | None = None
) -> dict[str, Any]:
    """Score write-time dedup and the cosine baseline on the merge-safety pairs."""
    from memhtml.eval.merge_safety import run_merge_safety

    return run_merge_safety(
        seed=seed, threshold=threshold, embedders=tuple(embedder or ("fake", "local"))
    )
