"""The bottom layers stay pure, and imports only point downwards, across the whole package.

Every package and top-level module of `memhtml` has a layer (a new one without
a layer fails `test_every_package_and_module_has_a_layer`). An import may point
to a lower layer or within its own unit; units on one layer are siblings and
import none of each other, so two units can never import each other: no cycle
between packages. Imports inside functions count (a lazy import is still a
dependency); imports under `if TYPE_CHECKING:` do not (annotations only).
`from memhtml import __version__` is allowed everywhere: the constant is set
before the package's `__init__` imports anything.

The rule is checked on the real package, and the checker itself on mutated
copies (an upward import injected) and on a synthetic tree where every unit
imports every other: exactly the upward and sideways imports are reported.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
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
    "importlib",
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
# Layer of every package (a folder) and top-level module (`name.py`; the package's own
# `__init__.py` is `__init__`, the facade `memhtml.open` / `memhtml.init`).
LAYERS: dict[str, int] = {
    "contracts": 0,  # pydantic: vocabularies, errors, paths, dates, envelope, ops
    "telemetry": 0,  # the span seam: importable from every layer, imports nothing of ours
    "progress": 0,  # a progress line on a terminal: likewise
    "domain": 1,  # numpy: cosine, rrf, mmr, salience, chunking
    "html": 2,  # lxml: parse, validate, render, hash, head editors
    "seams": 2,  # backends by name: built-ins and entry-point plugins
    "store": 3,  # git
    "embed": 3,  # embedders
    "llm": 3,  # language models
    "index": 4,  # sqlite3
    "trace": 5,  # session transcripts (its own plane, beside the index)
    "analysis": 5,  # polars, duckdb
    "codemode": 5,  # quickjs guests reading a commit
    "ops": 6,  # the composition root
    "eval": 7,  # the discrimination gate, fixtures, benchmarks
    "integrations": 7,  # host wiring and the hook engine
    "sleep": 8,  # the curation run (calls the gate)
    "surface": 9,  # the command table, the manifest and AGENTS.md (data)
    "mcp": 10,  # the MCP server
    "cli": 11,  # the command line (hosts `serve mcp`)
    "__init__": 12,  # the facade
}
VERSION_ONLY = "__version__"


def units(package: Path) -> set[str]:
    """The package's units: each sub-package and each top-level module."""
    found = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    found |= {p.stem for p in package.glob("*.py")}
    return found


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped |= {id(n) for n in ast.walk(child)}
    return skipped


def _module_name(package: Path, path: Path) -> list[str]:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported(package: Path, path: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(module, names) per run-time import, relative imports made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_blocks(tree)
    here = _module_name(package, path)
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_package else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield module, tuple(a.name for a in node.names)


def _imports(path: Path) -> set[str]:
    """Run-time absolute module names `path` imports (for the purity rule)."""
    return {module for module, _ in _imported(PACKAGE, path)}


def unit_of(path: Path, package: Path) -> str:
    rel = path.relative_to(package).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def imported_units(package: Path, path: Path, known: set[str]) -> Iterator[tuple[str, str]]:
    """(unit, what was written) for every import of one of the package's units."""
    top = package.name
    for module, names in _imported(package, path):
        bits = module.split(".")
        if bits[0] != top:
            continue
        if len(bits) > 1:
            yield bits[1], module
            continue
        for name in names:  # `from memhtml import x`: a unit, the version, or the facade
            if name in known:
                yield name, f"{top}.{name}"
            elif name != VERSION_ONLY:
                yield "__init__", f"{top}.{name}"


def offenders(package: Path, layers: Mapping[str, int]) -> list[str]:
    """Every import that points upwards or sideways (to a sibling on the same layer)."""
    known = units(package)
    out = []
    for path in sorted(package.rglob("*.py")):
        here = unit_of(path, package)
        if here not in layers:
            continue  # reported by the coverage test
        for there, written in imported_units(package, path, known):
            if there == here or there not in layers:
                continue
            if layers[there] > layers[here]:
                out.append(f"{path.relative_to(package)} imports {written} (upwards)")
            elif layers[there] == layers[here]:
                out.append(f"{path.relative_to(package)} imports {written} (a sibling)")
    return out


def test_every_package_and_module_has_a_layer() -> None:
    assert sorted(units(PACKAGE) - set(LAYERS)) == []
    assert sorted(set(LAYERS) - units(PACKAGE)) == []  # no stale entry


def test_imports_point_downwards() -> None:
    assert offenders(PACKAGE, LAYERS) == []


@pytest.mark.parametrize("layer", ["contracts", "domain"])
def test_pure_layers_import_no_io(layer: str) -> None:
    offending = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                offending.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offending == []


# -- the checker checked ---------------------------------------------------------------


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real package's sources, copied (each mutation test edits a fresh copy of one file)."""
    dest = tmp_path_factory.mktemp("layering") / "memhtml"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


MUTATIONS = [
    # (file to edit, line appended): each points upwards or sideways
    ("domain/rrf.py", "import memhtml.sleep.engine"),
    ("ops/corpus.py", "from memhtml.sleep.engine import run_sleep"),
    ("index/db.py", "from memhtml.sleep import engine"),
    ("index/indexer.py", "from ..sleep.engine import run_sleep"),
    ("progress.py", "from memhtml.index import db"),
    ("telemetry.py", "from memhtml import ops"),
    ("contracts/errors.py", "from memhtml.progress import Progress"),
    ("mcp/resources.py", "from memhtml.cli.main import main"),
    ("surface/manifest.py", "from memhtml.mcp import catalog"),
    ("store/git.py", "from memhtml.embed import registry"),
    ("embed/local.py", "from memhtml.llm.registry import get_model"),
    ("seams.py", "from memhtml.embed.registry import get_embedder"),
    ("sleep/engine.py", "from memhtml.cli.main import main"),
    ("ops/corpus.py", "from memhtml import open"),
    (
        "domain/rrf.py",
        "def later():\n    from memhtml.index.db import connect\n    return connect",
    ),
]


@pytest.mark.parametrize(("rel", "line"), MUTATIONS)
def test_an_injected_upward_import_is_reported(package_copy: Path, rel: str, line: str) -> None:
    target = package_copy / rel
    original = target.read_text(encoding="utf-8")
    try:
        target.write_text(original + "\n" + line + "\n", encoding="utf-8")
        found = offenders(package_copy, LAYERS)
    finally:
        target.write_text(original, encoding="utf-8")
    assert len(found) == 1 and found[0].startswith(rel), found
    assert offenders(package_copy, LAYERS) == []  # the copy is clean again


def test_a_type_checking_import_and_the_version_are_not_dependencies(package_copy: Path) -> None:
    target = package_copy / "domain" / "rrf.py"
    original = target.read_text(encoding="utf-8")
    try:
        target.write_text(
            original
            + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            + "    from memhtml.ops.corpus import Corpus\nfrom memhtml import __version__\n",
            encoding="utf-8",
        )
        assert offenders(package_copy, LAYERS) == []
    finally:
        target.write_text(original, encoding="utf-8")


def test_a_new_package_without_a_layer_fails_the_coverage(package_copy: Path) -> None:
    fresh = package_copy / "newthing"
    fresh.mkdir()
    (fresh / "__init__.py").write_text("", encoding="utf-8")
    (package_copy / "loose.py").write_text("", encoding="utf-8")
    try:
        assert units(package_copy) - set(LAYERS) == {"newthing", "loose"}
    finally:
        shutil.rmtree(fresh)
        (package_copy / "loose.py").unlink()


def test_every_upward_and_sideways_import_of_a_synthetic_tree_is_reported(
    tmp_path: Path,
) -> None:
    """A tree of the same units where each imports every other, in each import form."""
    root = tmp_path / "memhtml"
    root.mkdir()
    names = sorted(LAYERS)
    forms = (
        "import memhtml.{v}",
        "from memhtml.{v} import thing",
        "from memhtml import {v}",
    )

    def body(u: str) -> str:
        return "\n".join(f.format(v=v) for v in names if v not in (u, "__init__") for f in forms)

    for u in names:
        if u == "__init__":
            continue
        if u in ("telemetry", "progress", "seams"):
            (root / f"{u}.py").write_text(body(u) + "\n", encoding="utf-8")
        else:
            (root / u).mkdir()
            (root / u / "__init__.py").write_text("", encoding="utf-8")
            (root / u / "mod.py").write_text(body(u) + "\n", encoding="utf-8")
    (root / "__init__.py").write_text(body("__init__") + "\n", encoding="utf-8")
    assert units(root) == set(LAYERS)
    expected = sorted(
        (u, v)
        for u in names
        for v in names
        if v not in (u, "__init__") and LAYERS[v] >= LAYERS[u]
        for _ in forms
    )
    reported = sorted(
        (unit_of(root / line.split(" imports ")[0], root), line.split()[2].split(".")[1])
        for line in offenders(root, LAYERS)
    )
    assert reported == expected
    # Every unit below the facade reaching it through `from memhtml import open` is upward too.
    (root / "domain" / "facade.py").write_text("from memhtml import open\n", encoding="utf-8")
    assert "domain/facade.py imports memhtml.open (upwards)" in offenders(root, LAYERS)


# -- cycles inside a package -----------------------------------------------------------


def _module_graph(package: Path) -> dict[str, set[str]]:
    modules = {".".join(_module_name(package, p)): p for p in package.rglob("*.py")}

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for imported, names in _imported(package, path):
            for name in (imported, *(f"{imported}.{n}" for n in names)):
                target = resolve(name)
                if target and target not in (module, package.name):
                    graph[module].add(target)
    return graph


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return sorted(out)


# Pairs of modules of one package that import each other lazily (inside a function),
# each for a reason of its own; the list may only shrink. A new pair fails the test.
KNOWN_MODULE_CYCLES = [
    ["memhtml.contracts.envelope", "memhtml.contracts.schemas"],  # lazy re-export
    ["memhtml.index.arms", "memhtml.index.retrieval"],
    ["memhtml.index.commit", "memhtml.index.indexer"],
    ["memhtml.index.embedding", "memhtml.index.spaces"],
]


def test_no_new_import_cycle_between_modules() -> None:
    assert _cycles(_module_graph(PACKAGE)) == KNOWN_MODULE_CYCLES


def test_the_cycle_check_sees_a_lazy_cycle(package_copy: Path) -> None:
    target = package_copy / "index" / "db.py"
    original = target.read_text(encoding="utf-8")
    try:
        target.write_text(
            original + "\ndef later():\n    from memhtml.index.planes import connect\n",
            encoding="utf-8",
        )
        found = _cycles(_module_graph(package_copy))
    finally:
        target.write_text(original, encoding="utf-8")
    assert ["memhtml.index.db", "memhtml.index.planes"] in found


# -- what importing costs ---------------------------------------------------------------


def test_import_memhtml_is_light() -> None:
    code = (
        "import sys, memhtml, memhtml.embed, memhtml.llm, memhtml.cli.main; "
        "heavy = [m for m in ('numpy','lxml','onnxruntime','polars','duckdb','git','boto3',"
        "'tokenizers','mcp','importlib.metadata') if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_integrations_sit_beside_the_cli_and_below_it() -> None:
    """The CLI calls memhtml.integrations; integrations compose ops and never the adapters."""
    offending = []
    for path in sorted((PACKAGE / "integrations").rglob("*.py")):
        for name in _imports(path):
            if name.startswith(("memhtml.cli", "memhtml.mcp", "typer", "mcp")):
                offending.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offending == []
