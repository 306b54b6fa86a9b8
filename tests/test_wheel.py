"""`pip install memhtml` in a fresh virtual environment: what it resolves, and what then works.

memhtml's wheel is built from this checkout (pip and the dev extra's hatchling,
no build isolation), installed with pip into a new venv without any extra, and
next to it the example embedder plugin's wheel (tests/plugins/hashbag). pip
resolves the dependencies from the configured index (or its cache) like a
user's install. Then:

- the declared mcp major (2.x, at least 2.1) is what got installed, and neither
  boto3 nor GitPython is;
- init, write, search and the MCP server's import work there;
- the plugin, which only declares an entry point, serves write, index and search by name;
- a Bedrock backend refuses with ERR_MODEL_UNAVAILABLE naming the `bedrock` extra.

It takes a fresh install's time (docs/benchmarks.md, "The wheel in a fresh venv"); CI runs
it with the rest (`pytest -m wheel` runs it alone, `-m 'not wheel'` leaves it out). pip must
reach its index or find every dependency in its cache: without either the install fails
with pip's own message, never a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.distinfo import HASHBAG, build_wheel

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("wheel")
    ours = build_wheel(ROOT, base / "dist")
    plugin = build_wheel(HASHBAG, base / "dist")
    env_dir = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    done = subprocess.run(
        [
            str(env_dir / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            str(ours),
            str(plugin),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    yield env_dir


def _python(venv: Path, code: str) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=venv,  # not the checkout: the installed package is what imports
    )
    return done.stdout.strip()


def test_the_declared_mcp_major_and_no_boto3_or_gitpython(venv: Path) -> None:
    code = (
        "import json, importlib.metadata as m\n"
        "def v(name):\n"
        "    try: return m.version(name)\n"
        "    except m.PackageNotFoundError: return None\n"
        "print(json.dumps({'mcp': v('mcp'), 'boto3': v('boto3'), 'botocore': v('botocore'),"
        " 'GitPython': v('GitPython'), 'tomlkit': v('tomlkit'),"
        " 'requires': m.requires('memhtml'), 'memhtml': m.distribution('memhtml').locate_file('')"
        ".as_posix()}))"
    )
    found = json.loads(_python(venv, code))
    major, minor = (int(x) for x in found["mcp"].split(".")[:2])
    assert major == 2 and minor >= 1
    assert found["boto3"] is None and found["botocore"] is None
    assert found["GitPython"] is None
    assert found["tomlkit"] is not None
    requires = [r.replace("'", '"') for r in found["requires"]]
    assert "mcp<3,>=2.1" in requires
    assert 'boto3>=1.34; extra == "bedrock"' in requires
    assert not any(r.lower().startswith("gitpython") for r in requires)
    assert found["memhtml"].startswith(str(venv))  # the wheel's copy, not this checkout


def _cli(venv: Path, root: Path, *argv: str, **env: str) -> tuple[int, dict[str, Any]]:
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHTML_", "PYTHON"))}
    run_env.update({"MEMHTML_ROOT": str(root), **env})
    done = subprocess.run(
        [str(venv / "bin" / "memhtml"), *argv, "--dense"],
        capture_output=True,
        text=True,
        env=run_env,
        check=False,
        cwd=venv,
    )
    return done.returncode, json.loads(done.stdout)


def test_init_write_and_search_with_the_plugin_by_name(venv: Path, tmp_path: Path) -> None:
    root = tmp_path / "memory"
    assert _cli(venv, root, "init")[0] == 0
    code, m = _cli(venv, root, "manifest")
    assert [p["name"] for p in m["data"]["backends"]["embedders"]["plugins"]] == ["hashbag"]
    code, out = _cli(
        venv,
        root,
        "write",
        "--title",
        "wal",
        "--type",
        "semantic",
        "--claim",
        "SQLite in WAL mode admits one writer and many readers.",
        MEMHTML_EMBED="hashbag",
    )
    assert code == 0 and out["data"]["vectors"]["model"] == "example/hashbag-256"
    assert out["data"]["vectors"]["embedded"] >= 1
    # Written with vectors off, then embedded by the plugin through the index.
    claim = "Alice prefers tea to coffee in the morning."
    argv = ("write", "--title", "tea", "--type", "semantic", "--claim", claim)
    assert _cli(venv, root, *argv, MEMHTML_EMBED="off")[0] == 0
    code, out = _cli(venv, root, "index", "embed", MEMHTML_EMBED="hashbag")
    assert code == 0 and out["data"]["embedded"] >= 1 and not out["data"].get("error")
    assert out["data"]["model"] == "example/hashbag-256"
    code, hits = _cli(venv, root, "search", "coffee or tea", MEMHTML_EMBED="hashbag")
    assert code == 0 and hits["data"]["degraded"] is False and "vector" in hits["data"]["arms"]
    assert hits["data"]["hits"][0]["title"] == "tea"


def test_bedrock_without_its_extra_names_the_extra(venv: Path, tmp_path: Path) -> None:
    root = tmp_path / "memory"
    _cli(venv, root, "init")
    claim = "A memory the Bedrock embedder would embed."
    argv = ("write", "--title", "t", "--type", "semantic", "--claim", claim)
    code, written = _cli(venv, root, *argv, MEMHTML_EMBED="bedrock")
    assert code == 0 and written["data"]["created"]  # the write lands; its vectors wait
    assert "pip install 'memhtml[bedrock]'" in written["data"]["vectors"]["error"]
    code, out = _cli(venv, root, "index", "embed", MEMHTML_EMBED="bedrock")
    assert code == 1 and out["code"] == "ERR_MODEL_UNAVAILABLE"
    assert "pip install 'memhtml[bedrock]'" in out["error"]
    assert out["suggestions"][0] == "pip install 'memhtml[bedrock]'"
    code, out = _cli(venv, root, "sleep", "run", MEMHTML_LLM="bedrock", MEMHTML_EMBED="off")
    assert code == 1 and out["code"] == "ERR_MODEL_UNAVAILABLE", out
    assert out["suggestions"][0] == "pip install 'memhtml[bedrock]'"


def test_the_mcp_server_imports_against_the_resolved_sdk(venv: Path) -> None:
    assert _python(venv, "import memhtml.mcp.server as s; print(s.EXEC_SLOTS)") == "2"
