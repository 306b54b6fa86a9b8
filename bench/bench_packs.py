"""Object store upkeep (issue 19): what many packs cost git, and what the upkeep buys back.

Every apply of more than 100 ops writes one pack and nothing used to repack, so
a long-lived memory collects packs. For N = 1, 50, 200 packs in a copy of the
cached store (N - 1 packs of 150 fresh blobs, each its own `git fast-import`,
as an apply's `store_blobs` writes them) this times, on two copies measured
in turn under the same load:

* before: the N packs as they are (upkeep off: `gc.auto 0` in the copy's config);
* after: the same N packs once `memhtml.store.upkeep.keep_in_shape` ran (what the
  write after the one that crossed the limit sees; at N <= 50 it does nothing);

the figures: `git cat-file --batch-check` over 1,000 existing objects (drawn
from every pack) and over 1,000 absent ids (what git asks before writing an
object: each miss probes every pack index), `git status` as memhtml runs it,
a cold CLI `write` (MEMHTML_EMBED=off) and a warm in-process `write` (the git
share of a write, without the interpreter's start-up). Also the repack's own wall
time (the one write that crosses the limit pays it), a cold write that crosses
it, the check's cost when nothing is needed (no subprocess), and, on a copy of
`.git` alone at 10k and 100k, the repack at 51 packs (the first count over the
limit) and at 200: geometric against the all-into-one `repack -A` that `git gc`
would run.

    python -m bench.bench_packs [--size 10000] [--packs 1 50 200] [--repeat 7] [--cold 5]
        [--warm 15] [--repack-sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import memhtml
from bench.bench_store import cold_cli_write
from bench.common import summary, write_result
from bench.stores import cached_store, fresh_copy
from memhtml.store.git import Git, blob_sha, status_argv
from memhtml.store.upkeep import PACK_LIMIT, keep_in_shape, shape

BLOBS_PER_PACK = 150  # over fast-import's unpack limit (<= 100 objects are written loose)
SAMPLE = 1000
PACK_LIMIT_PLUS_ONE = PACK_LIMIT + 1  # the first count a write repacks at
STATUS_ARGV = status_argv()  # the command a write's or a read's status check runs


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=root, input=stdin, capture_output=True, check=True
    ).stdout


def add_packs(root: Path, count: int, seed: int) -> list[str]:
    """`count` packs of BLOBS_PER_PACK fresh blobs, one fast-import each; their blob ids.

    Each import also commits its blobs on a side ref (refs/bench/packs), so they
    are reachable as an apply's are (an all-into-one repack would loosen them
    otherwise); HEAD and the working tree do not move.
    """
    rng = random.Random(seed)
    words = "memory pack index object lookup probe git store corpus write commit tree"
    vocab = words.split()
    shas: list[str] = []
    for p in range(count):
        blobs = [
            (
                f"<p>pack {seed}-{p} blob {b}: "
                + " ".join(rng.choice(vocab) for _ in range(rng.randint(120, 260)))
                + "</p>\n"
            ).encode()
            for b in range(BLOBS_PER_PACK)
        ]
        stream = [
            b"blob\nmark :%d\ndata %d\n%b\n" % (i + 1, len(d), d) for i, d in enumerate(blobs)
        ]
        stream.append(b"commit refs/bench/packs\ncommitter bench <bench@memhtml> 0 +0000\ndata 0\n")
        if p or _has_ref(root):
            stream.append(b"from refs/bench/packs^0\n")
        stream.extend(
            b"M 100644 :%d bench/%d-%d/%d\n" % (i + 1, seed, p, i) for i in range(len(blobs))
        )
        _git(root, "fast-import", "--quiet", "--done", stdin=b"".join(stream) + b"\ndone\n")
        shas.extend(blob_sha(b) for b in blobs)
    return shas


def _has_ref(root: Path) -> bool:
    proc = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", "refs/bench/packs"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


def timed_run(root: Path, argv: list[str], stdin: bytes | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=root, input=stdin, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


def upkeep_off(root: Path) -> None:
    """The copy measured "before" never repacks: gc.auto 0, as for git's own gc --auto."""
    _git(root, "config", "gc.auto", "0")


def check_cost_us(root: Path, n: int = 2000) -> float:
    """Median µs of the upkeep check when the store is in shape (no subprocess)."""
    git = Git(root)
    times = []
    for _ in range(n):
        started = time.perf_counter()
        assert keep_in_shape(git) is None
        times.append((time.perf_counter() - started) * 1e6)
    return round(statistics.median(times), 1)


def one_count(
    base: Path, n_packs: int, tmp: Path, repeat: int, cold: int, warm: int
) -> dict[str, Any]:
    """Before/after figures at `n_packs` packs."""
    load0 = os.getloadavg()[0]
    before, after, crossing = tmp / f"before-{n_packs}", tmp / f"after-{n_packs}", tmp / "cross"
    shutil.copytree(base, before, symlinks=True)
    added = add_packs(before, n_packs - 1, seed=n_packs)
    shutil.copytree(before, after, symlinks=True)
    shutil.copytree(before, crossing, symlinks=True)
    upkeep_off(before)
    up = keep_in_shape(Git(after))
    shape_before, shape_after = shape(before / ".git/objects"), shape(after / ".git/objects")

    rng = random.Random(n_packs)
    existing = [
        line.split()[2] for line in _git(base, "ls-tree", "-r", "HEAD").decode().splitlines()
    ]
    pool = existing + added
    present = "\n".join(rng.sample(pool, SAMPLE)).encode() + b"\n"
    absent = "\n".join(f"{rng.getrandbits(160):040x}" for _ in range(SAMPLE)).encode() + b"\n"
    lookup = ["git", "cat-file", "--batch-check"]
    figures: dict[str, dict[str, list[float]]] = {
        k: {"lookup": [], "missing": [], "status": [], "cold_write": []}
        for k in ("before", "after")
    }
    roots = {"before": before, "after": after}
    for _ in range(repeat):
        for key, root in roots.items():
            figures[key]["lookup"].append(timed_run(root, lookup, present))
            figures[key]["missing"].append(timed_run(root, lookup, absent))
            figures[key]["status"].append(timed_run(root, STATUS_ARGV))
    for root in roots.values():
        cold_cli_write(root, -1)  # the first write after a copy reads a cold page cache
    for i in range(cold):
        for key, root in roots.items():
            figures[key]["cold_write"].append(cold_cli_write(root, i))
    corpora = {key: memhtml.open(root, embedder="off") for key, root in roots.items()}
    for key, corpus in corpora.items():
        figures[key]["warm_write"] = []
        corpus.write(title="Warm-up", type="semantic", claim=f"The {key} copy is warm.")
    for i in range(warm):
        for key, corpus in corpora.items():
            started = time.perf_counter()
            corpus.write(title=f"Warm {i}", type="semantic", claim=f"Warm write {i} lands.")
            figures[key]["warm_write"].append((time.perf_counter() - started) * 1000)
    for corpus in corpora.values():
        corpus.close()
    cross_ms = cold_cli_write(crossing, 0)
    check_us = check_cost_us(after)
    row = {
        "packs": n_packs,
        "shape_before": shape_before._asdict(),
        "shape_after": shape_after._asdict(),
        "repack_ms": None if up is None else round(up.ms, 1),
        "repack_ok": None if up is None else up.ok,
        "crossing_cold_write_ms": round(cross_ms, 1),
        "crossing_shape_after": shape(crossing / ".git/objects")._asdict(),
        "check_us_when_in_shape": check_us,
        **{
            key: {name: summary(values) for name, values in figs.items()}
            for key, figs in figures.items()
        },
        "load_avg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
    }
    for path in (before, after, crossing):
        shutil.rmtree(path)
    return row


def repack_costs(size: int, tmp: Path) -> list[dict[str, Any]]:
    """The repack a crossing write pays, at 51 packs (the first over the limit) and at 200,
    on a copy of the store's .git alone: geometric (ours) against an all-into-one
    `repack -d -l -A` (what `git gc --auto` would run), each on its own copy."""
    source = fresh_git(size, tmp / "git-source")
    rows = []
    for n in (PACK_LIMIT_PLUS_ONE, 200):
        load0 = os.getloadavg()[0]
        row: dict[str, Any] = {"store_size": size, "packs": n}
        for name, argv in (
            ("geometric_ms", ["git", "repack", "-d", "-q", "--geometric=2"]),
            ("all_into_one_ms", ["git", "repack", "-d", "-q", "-l", "-A"]),
        ):
            copy = tmp / f"git-{n}-{name}"
            shutil.copytree(source, copy)
            add_packs(copy, n - 1, seed=n)
            row[name] = round(timed_run(copy, argv), 1)
            row[name.replace("_ms", "_packs_after")] = shape(copy / "objects").packs
            shutil.rmtree(copy)
        row["load_avg_1m"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
        rows.append(row)
        print(
            f"repack at {size}, {n} packs: geometric {row['geometric_ms']} ms"
            f" ({row['geometric_packs_after']} packs), all-into-one {row['all_into_one_ms']} ms;"
            f" load {row['load_avg_1m']}",
            file=sys.stderr,
        )
    shutil.rmtree(source)
    return rows


def fresh_git(size: int, dest: Path) -> Path:
    """A bare copy of the cached store's object store and refs (no working tree)."""
    shutil.copytree(cached_store(size) / ".git", dest, symlinks=True)
    _git(dest, "config", "core.bare", "true")
    return dest


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--packs", type=int, nargs="+", default=[1, 50, 200])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--warm", type=int, default=15)
    parser.add_argument("--repack-sizes", type=int, nargs="*", default=[10000, 100000])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base = fresh_copy(args.size, tmp / "base")
        corpus = memhtml.open(base, embedder="off")
        corpus.index.rebuild(embed=False)
        corpus.close()
        for n in args.packs:
            row = one_count(base, n, tmp, args.repeat, args.cold, args.warm)
            rows.append(row)
            b, a = row["before"], row["after"]
            print(
                f"{n} packs ({row['shape_before']['packs']} -> {row['shape_after']['packs']},"
                f" repack {row['repack_ms']} ms): lookup {b['lookup']['p50_ms']} ->"
                f" {a['lookup']['p50_ms']} ms, missing {b['missing']['p50_ms']} ->"
                f" {a['missing']['p50_ms']} ms, status {b['status']['p50_ms']} ->"
                f" {a['status']['p50_ms']} ms, cold write {b['cold_write']['p50_ms']} ->"
                f" {a['cold_write']['p50_ms']} ms, warm write {b['warm_write']['p50_ms']} ->"
                f" {a['warm_write']['p50_ms']} ms (crossing write {row['crossing_cold_write_ms']}"
                f" ms); check {row['check_us_when_in_shape']} µs; load {row['load_avg_1m']}",
                file=sys.stderr,
            )
        repacks = [r for size in args.repack_sizes for r in repack_costs(size, tmp)]
    write_result(
        "packs",
        {
            "repack": repacks,
            "store_size": args.size,
            "blobs_per_pack": BLOBS_PER_PACK,
            "sample": SAMPLE,
            "embedder": "off",
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
