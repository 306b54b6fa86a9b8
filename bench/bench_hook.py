"""The per-prompt hook as a host runs it: a cold `memhtml hook user-prompt-submit` process per
prompt, on a 10k store, with the default local embedder and with embeddings off.

Each run is timed from spawn to exit (what the host waits for), with its answer's kind read
from stderr (hybrid, or keyword recall because the model was not ready within the bound).
The modes run interleaved, so a change of machine load hits all of them alike. Target: p95
under 500 ms (the original memhtml answers in ~400 ms with embeddings off).

    python -m bench.bench_hook [--size 10000] [--runs 30] [--original]

`--original` also times the original memhtml's hook (0.15.1, embeddings off) on the same
store, after its own `index rebuild` (tools/original.sh; needs npm the first time).

`--cold-ab BEFORE_TREE` instead times cold `memhtml search` and `write` with
OTEL_EXPORTER_OTLP_ENDPOINT unset, this tree against BEFORE_TREE (a checkout of the commit
before the telemetry seam, bytecode compiled), interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.bench_search import indexed
from bench.common import summary, write_result
from bench.stores import CACHE
from bench.synth import SERVICES, THINGS, VERBS

ORIGINAL = next(
    (
        p / "shared" / "tools" / "original.sh"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "tools" / "original.sh").is_file()
    ),
    Path(os.environ.get("MEMHTML_ORIGINAL", "original.sh")),
)
TEMPLATES = (
    "how do we handle the {s} {t} when it {v}?",
    "what did we decide about {s} and its {t}",
    "the {t} on {s} {v} again last night, is there a runbook",
    "before I change the {s} {t}: anything I should know?",
)


def prompts(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(TEMPLATES).format(
            s=rng.choice(SERVICES), t=rng.choice(THINGS), v=rng.choice(VERBS)
        )
        for _ in range(n)
    ]


def payload(prompt: str, cwd: str) -> bytes:
    """Claude Code's UserPromptSubmit payload (its documented fields)."""
    return json.dumps(
        {
            "session_id": "bench",
            "transcript_path": "/tmp/bench.jsonl",
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    ).encode()


def run_once(argv: list[str], env: dict[str, str], stdin: bytes) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    ms = (time.perf_counter() - started) * 1000
    err = proc.stderr.decode("utf-8", "replace")
    out = proc.stdout.decode("utf-8", "replace")
    if "keywords only" in err or "did not load" in err:
        kind = "lexical"
    elif "time limit" in err:
        kind = "bounded"
    elif out.strip():
        kind = "answered"
    else:
        kind = "empty"
    try:
        text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        text = out  # the original answers Claude Code in plain text
    return {"ms": ms, "exit": proc.returncode, "kind": kind, "hits": text.count("\n- ")}


def hook_argv(root: Path) -> list[str]:
    script = Path(sys.executable).parent / "memhtml"
    head = [str(script)] if script.is_file() else [sys.executable, "-m", "memhtml.cli"]
    return [*head, "hook", "user-prompt-submit", "--host", "claude", "--repo", str(root)]


def original_store(n: int) -> Path:
    """A copy of the synthetic store indexed by the original memhtml (embeddings off)."""
    from bench.stores import cached_store

    root = CACHE / f"original-{n}"
    marker = root / ".bench-original"
    if not marker.exists():
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(
            cached_store(n), root, symlinks=True, ignore=shutil.ignore_patterns(".memhtml")
        )
        subprocess.run(
            [str(ORIGINAL), "index", "rebuild", "--repo", str(root)],
            check=True,
            capture_output=True,
        )
        marker.write_text("ok\n")
    return root


def bench_hook(size: int, runs: int, with_original: bool) -> dict[str, Any]:
    root = indexed(size, "local")
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    base.pop("MEMHTML_HOOK_TIME_LIMIT_MS", None)
    modes: dict[str, tuple[list[str], dict[str, str]]] = {
        "local (default)": (hook_argv(root), {**base, "MEMHTML_EMBED": "local"}),
        "embeddings off": (hook_argv(root), {**base, "MEMHTML_EMBED": "off"}),
    }
    if with_original:
        oroot = original_store(size)
        argv = [
            str(ORIGINAL),
            "hook",
            "user-prompt-submit",
            "--host",
            "claude",
            "--repo",
            str(oroot),
        ]
        modes["original 0.15.1, embeddings off"] = (argv, base)
    qs = prompts(runs)
    samples: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    for argv, env in modes.values():  # one warm-up each: page cache, pyc
        run_once(argv, env, payload(qs[0], str(root)))
    for q in qs:
        for name, (argv, env) in modes.items():
            samples[name].append(run_once(argv, env, payload(q, str(root))))
    out: dict[str, Any] = {"size": size, "runs": runs, "modes": {}}
    for name, rows in samples.items():
        kinds: dict[str, int] = {}
        for r in rows:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        out["modes"][name] = {
            **summary([r["ms"] for r in rows]),
            "max_ms": round(max(r["ms"] for r in rows), 1),
            "answers": kinds,
            "nonzero_exits": sum(1 for r in rows if r["exit"] != 0),
        }
    return out


def bench_cold_ab(before: Path, runs: int) -> dict[str, Any]:
    """Cold search and write with the seam (this tree) and without it (`before`), interleaved."""
    root = indexed(10000, "local")
    here = Path(__file__).resolve().parents[1]
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    trees = {"with the telemetry seam": here, "before it": before}
    qs = prompts(runs, seed=5)
    rows: dict[str, dict[str, list[float]]] = {t: {"search": [], "write": []} for t in trees}
    from bench.stores import fresh_copy

    wroot = CACHE / "cold-ab-write"
    if wroot.exists():
        shutil.rmtree(wroot)
    fresh_copy(1000, wroot)
    subprocess.run(
        [sys.executable, "-m", "memhtml.cli", "index", "rebuild", "--repo", str(wroot)],
        env={**base, "MEMHTML_EMBED": "off"},
        check=True,
        capture_output=True,
    )
    for i, q in enumerate(qs):
        for name, tree in trees.items():
            env = {**base, "PYTHONPATH": str(tree), "MEMHTML_EMBED": "off"}
            argv = [sys.executable, "-m", "memhtml.cli"]
            started = time.perf_counter()
            subprocess.run(
                [*argv, "search", q, "--repo", str(root), "--dense"],
                env=env,
                check=True,
                capture_output=True,
            )
            rows[name]["search"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            subprocess.run(
                [
                    *argv,
                    "write",
                    "--repo",
                    str(wroot),
                    "--title",
                    f"ab {name} {i}",
                    "--type",
                    "semantic",
                    "--claim",
                    f"Cold write {i} of {name}.",
                ],
                env=env,
                check=True,
                capture_output=True,
            )
            rows[name]["write"].append((time.perf_counter() - started) * 1000)
    return {
        "runs": runs,
        "trees": {k: str(v) for k, v in trees.items()},
        "cold": {t: {op: summary(v) for op, v in ops.items()} for t, ops in rows.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--original", action="store_true")
    parser.add_argument("--cold-ab", type=Path, metavar="BEFORE_TREE")
    args = parser.parse_args()
    if args.cold_ab:
        write_result("cold-telemetry-ab", bench_cold_ab(args.cold_ab, args.runs))
    else:
        write_result("hook", bench_hook(args.size, args.runs, args.original))


if __name__ == "__main__":
    main()
