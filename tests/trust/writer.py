"""A writer process for the concurrency proof: `python writer.py cli|mcp ROOT NAME N`.

Writes N memories through one door and prints each acknowledged path on a line.
`cli` runs one `memhtml write` process per memory; `mcp` starts one MCP server
and calls `memory_write` N times over stdio with the SDK's client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def _claim(name: str, i: int) -> tuple[str, str]:
    return f"{name} fact {i}", f"Writer {name} recorded fact number {i} (token {name}x{i})."


def cli(root: str, name: str, n: int) -> None:
    for i in range(n):
        title, claim = _claim(name, i)
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "memhtml.cli", "write", "--repo", root, "--dense"),
                *("--type", "semantic", "--title", title, "--claim", claim),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        envelope = json.loads(proc.stdout)
        if proc.returncode == 0 and envelope["ok"]:
            print(envelope["data"]["path"], flush=True)
        else:
            print("FAILED " + proc.stdout.strip(), flush=True)


def mcp(root: str, name: str, n: int) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "memhtml.mcp.server", "--repo", root],
            env={**os.environ, "MEMHTML_LOG": "WARNING"},
        )
        async with Client(params) as client:
            for i in range(n):
                title, claim = _claim(name, i)
                result = await client.call_tool(
                    "memory_write", {"title": title, "memory_type": "semantic", "claim": claim}
                )
                envelope = result.structured_content or {}
                if envelope.get("ok"):
                    print(envelope["data"]["path"], flush=True)
                else:
                    print("FAILED " + json.dumps(envelope), flush=True)

    anyio.run(main)


if __name__ == "__main__":
    door, root, name, count = sys.argv[1:5]
    {"cli": cli, "mcp": mcp}[door](root, name, int(count))
