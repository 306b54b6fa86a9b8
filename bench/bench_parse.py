"""Parse cost of memory files: `memhtml.html.parse_memory` per file, and its import time.

Issue 19's apply and rebuild rows have the HTML parse as their floor. This reads
N real memory files into memory first (the bench store's, by default all 10k),
then parses every one `--rounds` times and reports ms/file and files/s (the best
and the median round, wall and CPU), and the cold import of `memhtml.html` in a
fresh interpreter (best of `--imports`).

    python -m bench.bench_parse [--store PATH] [--limit N] [--rounds 5]
    python -m bench.bench_parse --code /tmp/parser-base   # another tree's memhtml, same files

Prints a summary and writes bench/results/parse.json (or `--name`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_STORE = Path(os.environ.get("MEMHTML_BENCH_CACHE", "/tmp/memhtml-bench")) / "store-10000-1"
IMPORT_PROBE = (
    "import time; t = time.perf_counter(); import memhtml.html; "
    "print((time.perf_counter() - t) * 1000)"
)


def memory_files(store: Path, limit: int | None) -> list[bytes]:
    """The bytes of the store's memory files (not .git, not .memhtml), sorted by path."""
    paths = sorted(
        p
        for p in store.rglob("*.html")
        if not any(part.startswith(".") for part in p.relative_to(store).parts)
    )
    return [p.read_bytes() for p in paths[:limit]]


def parse_rounds(files: list[bytes], rounds: int) -> dict[str, Any]:
    """Every file parsed once per round; per-round ms/file (wall and CPU)."""
    from memhtml.html import parse_memory

    for data in files[:200]:  # warm caches (regex, lxml) before timing
        parse_memory(data)
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), time.process_time()
        for data in files:
            parse_memory(data)
        wall.append((time.perf_counter() - started) * 1000 / len(files))
        cpu.append((time.process_time() - started_cpu) * 1000 / len(files))
    return {
        "files": len(files),
        "rounds": rounds,
        "ms_per_file_best": round(min(wall), 4),
        "ms_per_file_median": round(statistics.median(wall), 4),
        "cpu_ms_per_file_best": round(min(cpu), 4),
        "cpu_ms_per_file_median": round(statistics.median(cpu), 4),
        "files_per_s_best": round(1000 / min(wall), 1),
        "round_ms_per_file": [round(w, 4) for w in wall],
    }


def import_ms(code_root: Path | None, repeat: int) -> dict[str, float]:
    """Cold `import memhtml.html` in a fresh interpreter (after the interpreter's own start-up).

    Bytecode is cached (in a private prefix, written by one untimed import) as
    it is for an installed package, whatever PYTHONDONTWRITEBYTECODE says.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="bench-parse-pycache-")
    if code_root is not None:
        env["PYTHONPATH"] = str(code_root)
    times = []
    for _ in range(repeat + 1):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
        times.append(float(out.strip()))
    shutil.rmtree(env["PYTHONPYCACHEPREFIX"], ignore_errors=True)
    times = times[1:]  # the first import compiled the bytecode
    return {"best_ms": round(min(times), 2), "median_ms": round(statistics.median(times), 2)}


def main() -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--store", type=Path, default=DEFAULT_STORE)
    p.add_argument("--limit", type=int, default=None, help="parse only the first N files")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--imports", type=int, default=7, help="cold imports to time")
    p.add_argument("--code", type=Path, default=None, help="import memhtml from this tree")
    p.add_argument("--name", default="parse", help="bench/results/<name>.json")
    args = p.parse_args()
    if args.code is not None:
        sys.path.insert(0, str(args.code))
    import memhtml
    from bench.common import write_result  # imports memhtml: after --code is on the path

    files = memory_files(args.store, args.limit)
    load_before = os.getloadavg()
    parse = parse_rounds(files, args.rounds)
    load_after = os.getloadavg()
    imports = import_ms(args.code, args.imports) if args.imports else {}
    print(
        f"parse_memory: {parse['ms_per_file_best']:.3f} ms/file best,"
        f" {parse['ms_per_file_median']:.3f} median ({parse['files_per_s_best']:.0f} files/s);"
        f" cpu {parse['cpu_ms_per_file_best']:.3f} ms/file;"
        f" {parse['files']} files x {parse['rounds']} rounds; load {load_before[0]:.2f}"
    )
    if imports:
        print(f"import memhtml.html: {imports['best_ms']} ms best, {imports['median_ms']} median")
    payload = {
        "store": str(args.store),
        "code": str(Path(memhtml.__file__).parent),
        "parse": parse,
        "import_memhtml_html": imports,
        "load_before": load_before,
        "load_after": load_after,
    }
    write_result(args.name, payload)
    return payload


if __name__ == "__main__":
    main()
