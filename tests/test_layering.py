"""The bottom layers stay pure, and imports only point downwards."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memhtml"
FORBIDDEN = {
    "sqlite3",
    "git",
    "subprocess",
    "os",
    "pathlib",
    "shutil",
    "tempfile",
    "io",
    "boto3",
    "botocore",
    "onnxruntime",
    "tokenizers",
    "lxml",
    "mcp",
    "typer",
    "polars",
    "duckdb",
    "fcntl",
    "socket",
    "urllib",
    "http",
    "requests",
    "memhtml.store",
    "memhtml.index",
    "memhtml.html",
    "memhtml.embed",
    "memhtml.llm",
    "memhtml.ops",
    "memhtml.cli",
    "memhtml.mcp",
}
# Layer order: an import may only point downwards.
LAYERS = {
    "contracts": 0,
    "domain": 1,
    "html": 2,
    "store": 3,
    "embed": 3,
    "llm": 3,
    "index": 4,
    "analysis": 5,
    "codemode": 5,
    "ops": 6,
    "eval": 7,
    "cli": 7,
    "mcp": 7,
    "integrations": 7,
}


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped |= {id(n) for n in ast.walk(child)}
    return skipped


def _imports(path: Path) -> set[str]:
    """Run-time imports (annotations-only imports under TYPE_CHECKING do not count)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_blocks(tree)
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", ["contracts", "domain"])
def test_pure_layers_import_no_io(layer: str) -> None:
    offenders = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_imports_point_downwards() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) < 2 or parts[0] not in LAYERS:
            continue
        here = LAYERS[parts[0]]
        for name in _imports(path):
            bits = name.split(".")
            if bits[0] != "memhtml" or len(bits) < 2 or bits[1] not in LAYERS:
                continue
            if LAYERS[bits[1]] > here:
                offenders.append(f"{'/'.join(parts)} imports {name}")
    assert offenders == []


def test_import_memhtml_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, memhtml, memhtml.embed, memhtml.llm, memhtml.cli.main; "
        "heavy = [m for m in ('numpy','lxml','onnxruntime','polars','duckdb','git','boto3',"
        "'tokenizers','mcp') if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_integrations_sit_beside_the_cli_and_below_it() -> None:
    """The CLI calls memhtml.integrations; integrations compose ops and never the adapters."""
    offenders = []
    for path in sorted((PACKAGE / "integrations").rglob("*.py")):
        for name in _imports(path):
            if name.startswith(("memhtml.cli", "memhtml.mcp", "typer", "mcp")):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []
