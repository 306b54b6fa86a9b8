"""The trace plane sits beside the index (layer 4): it imports nothing above it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "memhtml"
BELOW = ("contracts", "domain", "html", "store", "embed", "index", "trace")


def test_trace_imports_only_lower_layers() -> None:
    offenders = []
    for path in sorted((PACKAGE / "trace").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            offenders += [
                f"{path.name} imports {name}"
                for name in names
                if name.startswith("memhtml.") and name.split(".")[1] not in BELOW
            ]
    assert offenders == []


def test_the_trace_plane_is_not_imported_by_a_cold_start() -> None:
    import subprocess
    import sys

    code = (
        "import sys, io; from memhtml.cli.main import run;"
        " run(['help', 'trace', 'index'], stdout=io.StringIO());"
        " print([m for m in sys.modules if m.startswith('memhtml.trace')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
