"""Measured times live in docs/benchmarks.md, not in the code's comments and docstrings.

A figure in a comment goes stale the day the code around it changes (one commit
existed only to update one). The code says why; the figure, its unit and its
setup go to docs/benchmarks.md ("Costs behind the code"). Limits and budgets
are values, not measurements: they live in named constants, and the comments
name the constant instead of restating its value.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memhtml"
# A number with a sub-second unit, or an approximate number of seconds ("~0.3 s").
TIMING = re.compile(r"\d(?:[\d.,]*\d)?\s?(?:ms|us|µs|ns)\b|~\s?\d[\d.]*\s?s\b")


def _docstrings(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append((node.body[0].lineno, doc))
    return found


def _comments(source: str) -> list[tuple[int, str]]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]


def timings(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    texts = _docstrings(ast.parse(source)) + _comments(source)
    return [f"{path.name}:{line}: {m.group(0)}" for line, t in texts for m in TIMING.finditer(t)]


def test_no_measured_time_in_the_packages_comments_or_docstrings() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in timings(path)]
    assert found == []


@pytest.mark.parametrize(
    "text",
    [
        '"""Cheap: ~45 ms of a cold write."""\n',
        "x = 1  # costs ~1.5 ms each\n",
        "def f():\n    '''The session starts in ~0.3 s.'''\n",
        "class C:\n    '''~2 us a row.'''\n",
    ],
)
def test_the_check_sees_a_figure(tmp_path: Path, text: str) -> None:
    path = tmp_path / "mod.py"
    path.write_text(text, encoding="utf-8")
    assert len(timings(path)) == 1


def test_the_check_ignores_code_and_plain_words(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text(
        '"""Waits for `MODEL_WAIT`, then answers by keywords (docs/benchmarks.md)."""\n'
        "TIMEOUT_MS = 400  # the model's budget: see MODEL_WAIT\n"
        "label = 'took 5 ms'\n",
        encoding="utf-8",
    )
    assert timings(path) == []
