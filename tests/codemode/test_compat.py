"""Guest compatibility: every helper of /workspace/lib/corpus.mjs answers as the original's.

`compat/probe.mjs` calls each export (`ROOT`, `walk`, `memoryAt`, `corpus`,
`backlinks`, `chain`, `edges`, and the parsed `document`) over `compat/tree/`, a
small corpus of the format's edge cases: an `article mark` among other marks, one
before the article and one in a script, facets with a missing, empty or
repeated term, metas with blank or repeated values, links with a raw rel list,
an encoded or empty href, a cycle, a generated `index.html`, a `.HTML` file, an
empty file, a malformed one, and the scaffold's README.html. `compat/original.json`
is what the original memhtml 0.15.1 printed over a commit of that tree
(`python -m tests.codemode.compat.record` re-records it); ours must print the
same over a commit of the same tree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memhtml.store.layout import README_HTML, init_repo
from tests.codemode.compat.record import PROBE, RECORDED, TREE, build
from tests.codemode.conftest import Run, answer


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return json.loads(RECORDED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory, recorded: dict[str, Any]) -> dict[str, Any]:
    from memhtml.codemode import ExecLimits, run_exec
    from memhtml.store.git import Git

    root = tmp_path_factory.mktemp("compat") / "memory"
    assert build(root) == recorded["tree"]  # the very tree the original read
    report = run_exec(Git(root), PROBE.read_text(encoding="utf-8"), limits=ExecLimits())
    out: dict[str, Any] = answer(report)
    return out


KEYS = [
    "ROOT",
    "walk",
    "walkAreas",
    "corpus",
    "corpusAreas",
    "memoryAtOtherRoot",
    "memoryAtNoRoot",
    "memoryAtMissing",
    "backlinks",
    "chains",
    "edges",
]


def test_the_probe_covers_every_key(recorded: dict[str, Any]) -> None:
    assert sorted(recorded["answer"]) == sorted(KEYS)
    assert recorded["original"] == "memhtml 0.15.1"


# The one deliberate difference: a file that is not well-formed HTML (a hand edit; memhtml
# never writes one). The original's parser, node-html-parser, gives up on the structure of
# `resources/malformed.html` (unclosed head, p, b, cite; no body or html end tags) and its
# helper reads nothing from it; ours reads what a browser shows (libxml2's recovery), so a
# census counts the claim a reader of the page sees.
MALFORMED = "/resources/malformed.html"


def _without(answer: dict[str, Any], key: str) -> Any:
    value = answer[key]
    return [e for e in value if e[0] != MALFORMED] if key == "corpus" else value


@pytest.mark.parametrize("key", KEYS)
def test_each_helper_answers_as_the_original(
    key: str, recorded: dict[str, Any], ours: dict[str, Any]
) -> None:
    assert _without(ours, key) == _without(recorded["answer"], key)


def test_a_malformed_file_reads_as_a_browser_shows_it(
    recorded: dict[str, Any], ours: dict[str, Any]
) -> None:
    theirs = dict(recorded["answer"]["corpus"])[MALFORMED]
    mine = dict(ours["corpus"])[MALFORMED]
    assert (theirs["title"], theirs["claim"], theirs["facets"]) == ("", "", {})
    assert mine["title"] == "Malformed <b>title"  # <title> is raw text: the tag is text
    assert mine["claim"] == "Unclosed bold claim"
    assert mine["facets"] == {"k": "v", "k2": "v2"}
    assert mine["citations"] == ["unclosed cite"]
    same = ("path", "file", "memoryType", "status", "tags", "entities", "links", "eventAt")
    assert {k: mine[k] for k in same} == {k: theirs[k] for k in same}


def test_each_memory_field_answers_as_the_original(
    recorded: dict[str, Any], ours: dict[str, Any]
) -> None:
    """The same comparison, one field of one memory at a time: a failure names both."""
    theirs = dict(recorded["answer"]["corpus"])
    mine = dict(ours["corpus"])
    assert list(mine) == list(theirs)
    diffs = [
        (path, field, mine[path].get(field), value)
        for path, memory in theirs.items()
        if path != MALFORMED
        for field, value in memory.items()
        if mine[path].get(field) != value
    ]
    assert diffs == []


def test_the_scaffolds_readme_has_the_claim_a_census_counts(recorded: dict[str, Any]) -> None:
    """README.html is no memory (no type) but, as the original's, its first sentence is a claim."""
    assert (TREE / "README.html").read_text(encoding="utf-8") == README_HTML
    readme = dict(recorded["answer"]["corpus"])["/README.html"]
    assert readme["memoryType"] == "" and readme["claim"].startswith("This repository is")
    assert re.fullmatch(r"[^.]+\.", readme["claim"])  # one sentence


def test_a_census_over_a_fresh_init_counts_the_readme_claim(tmp_path: Path, run: Run) -> None:
    init_repo(tmp_path / "memory")
    seen = answer(
        run(
            tmp_path / "memory",
            'import { corpus } from "/workspace/lib/corpus.mjs"\n'
            "console.log(JSON.stringify([...corpus().values()].map((m) => [m.path, m.claim])))",
        )
    )
    assert seen == [
        [
            "/README.html",
            "This repository is an agent's memory, kept by memhtml: one fact per HTML file.",
        ]
    ]
