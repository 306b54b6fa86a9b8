"""A wheel that only declares an entry point in `memhtml.embedders` serves write, index and
search by name (the example plugin, tests/plugins/hashbag, documented in docs/plugins.md).

The wheel is built and installed with pip into a folder of its own, put on the CLI's
PYTHONPATH: the test environment itself is left as it was. tests/test_wheel.py does the
same in a fresh virtual environment beside memhtml's own wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.distinfo import HASHBAG, PIP, build_wheel

pytestmark = pytest.mark.wheel


def test_the_example_plugin_wheel_serves_write_index_and_search(tmp_path: Path) -> None:
    wheel = build_wheel(HASHBAG, tmp_path / "dist")
    site = tmp_path / "site"
    subprocess.run(
        [*PIP, "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        check=True,
    )
    assert sorted(p.name for p in site.iterdir() if not p.name.startswith("_")) == [
        "memhtml_hashbag",
        "memhtml_hashbag-0.1.0.dist-info",
    ]
    root = tmp_path / "memory"
    env = {**os.environ, "PYTHONPATH": str(site), "MEMHTML_ROOT": str(root)}
    env.pop("MEMHTML_EMBED", None)

    def cli(*argv: str, embedder: str | None = "hashbag") -> dict[str, Any]:
        run_env = dict(env)
        if embedder is not None:
            run_env["MEMHTML_EMBED"] = embedder
        done = subprocess.run(
            [sys.executable, "-m", "memhtml.cli", *argv, "--dense"],
            capture_output=True,
            text=True,
            env=run_env,
            check=False,
        )
        out = json.loads(done.stdout)
        assert done.returncode == 0 and out["ok"], (out, done.stderr)
        return out["data"]

    cli("init", embedder=None)
    plugins = cli("manifest", embedder=None)["backends"]["embedders"]["plugins"]
    assert plugins == [
        {
            "name": "hashbag",
            "entry_point": "memhtml_hashbag:HashBagEmbedder",
            "distribution": "memhtml-hashbag",
            "version": "0.1.0",
        }
    ]
    facts = {
        "SQLite in WAL mode admits one writer and many readers.": "wal",
        "The deploy pipeline runs the migrations before the canary.": "deploy",
        "Alice prefers tea to coffee in the morning.": "tea",
    }
    for claim, title in facts.items():
        written = cli("write", "--title", title, "--type", "semantic", "--claim", claim)
        assert written["vectors"]["embedded"] >= 1 and "error" not in written["vectors"]
    status = cli("index", "status")
    assert json.dumps(status).count("example/hashbag-256") >= 1
    rebuilt = cli("index", "rebuild", "--embed", "--force")
    assert rebuilt is not None
    hits = cli("search", "which writer does WAL admit")
    assert hits["degraded"] is False and "vector" in hits["arms"]
    assert hits["hits"][0]["title"] == "wal"
    # Named on the command line instead of the environment, the same.
    by_flag = cli("search", "coffee or tea", "--embedder", "hashbag", embedder=None)
    assert by_flag["degraded"] is False and by_flag["hits"][0]["title"] == "tea"
