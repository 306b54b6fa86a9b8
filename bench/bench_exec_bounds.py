"""Code mode under a hostile script: the parent's memory and time, in-process, CLI and MCP.

The repro of issue 29 (item 5): `parse` from /workspace/lib/nhp.mjs given
42 MB of attribute-dense HTML, `parse("<p a=1 b=2 c=3 d=4 e=5>x</p>".repeat(1500000))`,
with `--memory-mb 512`. Measured three ways, each in a fresh process:

- in-process: `run_exec` in a child Python; its peak RSS over the execution
  (VmHWM after resetting it through /proc/self/clear_refs), its RSS after,
  and the wall time, with a 2 s and a 30 s time bound;
- CLI: a cold `memhtml exec`; wall time, and the CLI process's own peak RSS
  polled from /proc (VmHWM; the worker is another process);
- MCP: `python -m memhtml.mcp.server`; the repro through the `exec` tool
  (30 s bound), a `memory_list` sent 0.5 s later (its round trip says whether
  the server answered while the script ran), and the server's RSS after.

`--before DIR` runs the same against another checkout's `memhtml` package
(e.g. `git archive 7a6261e memhtml | tar -x -C DIR`), for the figures before
a change; results go to bench/results/exec_bounds[_before].json.

    python -m bench.bench_exec_bounds [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.common import write_result

REPRO = (
    'import { parse } from "/workspace/lib/nhp.mjs"\n'
    'const doc = parse("<p a=1 b=2 c=3 d=4 e=5>x</p>".repeat(1500000))\n'
    "console.log(doc.childNodes.length)\n"
)

IN_PROCESS = textwrap.dedent(
    """
    import json, re, sys, time
    from memhtml.codemode import ExecLimits, run_exec
    from memhtml.store.git import Git

    def status(field):
        text = open("/proc/self/status").read()
        return int(re.search(field + r":\\s+(\\d+)", text).group(1)) / 1024

    git = Git(sys.argv[1])
    run_exec(git, "void 0")  # this process's imports are not the script's
    script, timeout_ms = sys.argv[2], int(sys.argv[3])
    with open("/proc/self/clear_refs", "w") as reset:
        reset.write("5")
    before = status("VmRSS")
    started = time.perf_counter()
    report = run_exec(git, script, limits=ExecLimits(timeout_ms=timeout_ms, memory_mb=512))
    wall = (time.perf_counter() - started) * 1000
    print(json.dumps({
        "wall_ms": round(wall), "rss_before_mb": round(before, 1),
        "peak_growth_mb": round(status("VmHWM") - before, 1),
        "rss_after_growth_mb": round(status("VmRSS") - before, 1),
        "exit_code": report.exit_code, "limit": report.limit and report.limit.to_data(),
    }))
    """
)


def _env(before: Path | None) -> dict[str, str]:
    env = {**os.environ, "MEMHTML_EMBED": "fake", "MEMHTML_LLM": "off"}
    if before is not None:
        env["PYTHONPATH"] = str(before)
    return env


def _store(root: Path) -> Path:
    from memhtml.store.layout import init_repo

    init_repo(root)
    note = root / "areas" / "inbox" / "a-fact.html"
    note.write_text(
        "<!doctype html><html><head><title>A fact</title>"
        '<meta name="memhtml-type" content="semantic"></head>'
        "<body><article><p><mark>The sky is blue.</mark></p></article></body></html>\n"
    )
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
    quiet = ["git", "-C", str(root), "commit", "-q", "--no-verify", "-m", "a fact"]
    subprocess.run(quiet, check=True, capture_output=True)
    return root


def _status_mb(pid: int, field: str) -> float:
    """A /proc/<pid>/status size (VmRSS, VmHWM) in MiB; 0 once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(rf"{field}:\s+(\d+)", text)
    return int(found.group(1)) / 1024 if found else 0.0


def _find_process(pid: int, needle: str) -> int:
    """A descendant of `pid` whose command line holds `needle`."""
    todo = [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").iterdir():
            for child in (task / "children").read_text().split():
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
                if needle.encode() in cmdline:
                    return int(child)
                todo.append(int(child))
    raise LookupError(needle)


def in_process(root: Path, env: dict[str, str], timeout_ms: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(root), REPRO, str(timeout_ms)],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        check=True,
    )
    return {"timeout_ms": timeout_ms, **json.loads(proc.stdout)}


def cli(root: Path, env: dict[str, str], timeout_ms: int) -> dict[str, Any]:
    argv = [sys.executable, "-m", "memhtml.cli", "exec", "--repo", str(root), "--script", REPRO]
    argv += ["--memory-mb", "512", "--timeout-ms", str(timeout_ms), "--dense"]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, cwd="/")
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, _status_mb(proc.pid, "VmHWM"))
        time.sleep(0.01)
    wall = (time.perf_counter() - started) * 1000
    assert proc.stdout is not None
    data = json.loads(proc.stdout.read())["data"]
    return {
        "timeout_ms": timeout_ms,
        "wall_ms": round(wall),
        "cli_peak_rss_mb": round(peak, 1),
        "exit_code": data["exit_code"],
        "limit": data["limit"],
    }


async def _mcp(root: Path, env: dict[str, str]) -> dict[str, Any]:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memhtml.mcp.server", "--repo", str(root)],
        env=env,
        cwd="/",
    )
    out: dict[str, Any] = {}
    async with Client(params, cache=None, read_timeout_seconds=120) as client:
        await client.call_tool("memory_list", {})
        server = _find_process(os.getpid(), "memhtml.mcp.server")
        rss_before = _status_mb(server, "VmRSS")

        async def run_exec() -> None:
            started = time.perf_counter()
            result = await client.call_tool("exec", {"script": REPRO, "memory_mb": 512})
            out["exec_wall_ms"] = round((time.perf_counter() - started) * 1000)
            data = (result.structured_content or {}).get("data") or {}
            out["exec_limit"] = data.get("limit")

        async with anyio.create_task_group() as group:
            group.start_soon(run_exec)
            await anyio.sleep(0.5)
            started = time.perf_counter()
            await client.call_tool("memory_list", {})
            out["list_during_exec_ms"] = round((time.perf_counter() - started) * 1000)
            out["list_answered_before_exec"] = "exec_wall_ms" not in out
        out["server_rss_before_mb"] = round(rss_before, 1)
        out["server_rss_after_mb"] = round(_status_mb(server, "VmRSS"), 1)
        out["server_peak_rss_mb"] = round(_status_mb(server, "VmHWM"), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, help="a checkout's folder holding memhtml/")
    args = parser.parse_args()
    env = _env(args.before)
    import anyio

    with tempfile.TemporaryDirectory(prefix="bench-exec-bounds-") as tmp:
        root = _store(Path(tmp) / "memory")
        rows = {
            "in_process": [in_process(root, env, t) for t in (2000, 30000)],
            "cli": [cli(root, env, t) for t in (2000, 30000)],
            "mcp": anyio.run(_mcp, root, env),
        }
    for name, row in rows.items():
        print(name, row, file=sys.stderr)
    write_result(
        "exec_bounds_before" if args.before else "exec_bounds",
        {"script": REPRO, "memory_mb": 512, "code": str(args.before or "this checkout"), **rows},
    )


if __name__ == "__main__":
    main()
