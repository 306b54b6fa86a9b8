"""docs/code-mode.md stays honest: every recipe runs on the fixture corpus and prints what
the document shows, and the search-then-exec example runs as written."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest

from memhtml.cli.main import run as cli
from tests.codemode.conftest import Run

DOC = Path(__file__).resolve().parents[2] / "docs" / "code-mode.md"


def _recipes() -> list[tuple[str, str, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Five recipes", 1)[1].split("\n## ", 1)[0]
    found = []
    for chunk in section.split("\n### ")[1:]:
        title = chunk.splitlines()[0]
        script = re.search(r"```js\n(.*?)```", chunk, re.S)
        output = re.search(r"```text\n(.*?)```", chunk, re.S)
        assert script and output, f"recipe {title!r} needs a js block and a text block"
        found.append((title, script.group(1), output.group(1)))
    return found


RECIPES = _recipes()


def test_the_document_has_the_five_recipes() -> None:
    assert [title.split(". ", 1)[1] for title, _, _ in RECIPES] == [
        "Type census",
        "Live contradiction pairs",
        "Orphan census",
        "Entity co-occurrence",
        "Supersedence chain walk",
    ]


@pytest.mark.parametrize(("title", "script", "output"), RECIPES, ids=[r[0] for r in RECIPES])
def test_every_recipe_prints_what_the_document_shows(
    fixture_root: Path, run: Run, title: str, script: str, output: str
) -> None:
    report = run(fixture_root, script)
    assert report.exit_code == 0, report.stderr
    assert report.stdout == output


def test_search_then_exec_runs_as_written(fixture_root: Path, run: Run, tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Search finds the entry points", 1)[1]
    shell = re.search(r"```sh\n(.*?)```", section, re.S)
    assert shell is not None
    query = re.search(r'memhtml search "([^"]+)" --json --limit (\d+)', shell.group(1))
    body = re.search(r'memhtml exec --script "\n(.*?)"\n', shell.group(1), re.S)
    assert query and body
    root = tmp_path / "store"
    shutil.copytree(fixture_root, root)
    out = io.StringIO()
    assert cli(["index", "rebuild", "--repo", str(root)], stdout=out) == 0
    out = io.StringIO()
    search = ["search", query.group(1), "--repo", str(root), "--json", "--limit", query.group(2)]
    assert cli(search, stdout=out) == 0
    hits_json = out.getvalue()
    script = body.group(1).replace("$(cat hits.json)", hits_json.strip())
    report = run(root, script)
    assert report.exit_code == 0, report.stderr
    hits = json.loads(hits_json)["data"]["hits"]
    lines = [json.loads(line) for line in report.stdout.splitlines()]
    assert [line["path"] for line in lines] == ["/" + hit["path"] for hit in hits]
    assert any(line["history"] for line in lines)  # a superseded memory's history, walked
    for line in lines:
        assert all(path.startswith("/archive/") for path in line["history"])
