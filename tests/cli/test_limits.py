"""Documented flag ranges are enforced by the table, and the docs print the same ranges."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhtml.surface.manifest import agents_markdown, manifest
from memhtml.surface.table import COMMANDS

Cli = Callable[..., tuple[int, dict[str, Any]]]


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "alpha", "--limit", "0"],
        ["search", "alpha", "--limit", "9999"],
        ["search", "alpha", "--limit", "-1"],
        ["search", "alpha", "--mmr-lambda", "1.5"],
        ["search", "alpha", "--mmr-lambda", "nan"],
        ["search", "alpha", "--k", "0"],
        ["list", "--limit", "0"],
        ["list", "--limit", "501"],
        ["recall", "alpha", "--budget", "-1"],
        ["neighbors", "areas/a.html", "--depth", "3"],
        ["neighbors", "areas/a.html", "--limit", "0"],
        ["entity", "activity", "--limit", "0"],
        ["write", "--title", "T", "--type", "semantic", "--claim", "C.", "--importance", "11"],
        ["write", "--title", "T", "--type", "semantic", "--claim", "C.", "--confidence", "2"],
    ],
)
def test_out_of_range_values_are_usage_errors(argv: list[str], cli: Cli, store: Path) -> None:
    head = (store / ".git" / "HEAD").read_text()
    code, payload = cli(*argv)
    assert (code, payload["code"]) == (2, "ERR_INVALID_FLAG"), payload
    assert "out of range" in payload["error"]
    assert (store / ".git" / "HEAD").read_text() == head


def test_range_edges_are_accepted(cli: Cli, store: Path) -> None:
    code, payload = cli("search", "alpha", "--limit", "500")
    assert code == 0 and payload["data"]["hits"]
    code, payload = cli("list", "--limit", "1")
    assert code == 0 and payload["data"]["count"] == 1
    code, payload = cli("recall", "alpha", "--budget", "0")
    assert code == 0
    code, payload = cli("neighbors", "areas/a.html", "--depth", "2")
    assert code == 0


def test_every_range_is_in_the_manifest_and_agents_md() -> None:
    doc = agents_markdown()
    entries = {c["name"]: c for c in manifest()["commands"]}
    bounded = [(c, p) for c in COMMANDS for p in c.params if p.range_text]
    assert len(bounded) >= 10
    for cmd, param in bounded:
        described = next(
            d for d in entries[cmd.name]["params"] if d["name"] in (param.cli_flag, param.name)
        )
        assert described.get("minimum") == param.minimum
        assert described.get("maximum") == param.maximum
        assert param.range_text in doc
    search = {d["name"]: d for d in entries["search"]["params"]}
    assert (search["--limit"]["minimum"], search["--limit"]["maximum"]) == (1, 500)
    assert "- `--limit` (int; default 10; range 1..500): how many hits" in doc
