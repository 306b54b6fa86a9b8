"""Through the CLI: `correct` keeps the head and a true title, a claim must say something,
and the docs show no placeholder that would run (issue 32, items 2 and 3)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.ops import says_something
from memhtml.html import parse_memory

ROOT = Path(__file__).resolve().parents[2]
Cli = Callable[..., tuple[int, dict[str, Any]]]


def _commits(repo: Path) -> int:
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--count", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


@pytest.fixture
def pool(store: Path, cli: Cli) -> str:
    code, env = cli(
        "write",
        "--title",
        "Postgres pool size is 64",
        "--type",
        "semantic",
        "--claim",
        "The Postgres pool size is 64.",
        "--importance",
        "8",
        "--confidence",
        "0.9",
        "--tag",
        "db",
        "--entity",
        "service:postgres",
    )
    assert code == 0, env
    return str(env["data"]["path"])


def test_correct_with_a_new_claim_leaves_no_stale_title(store: Path, cli: Cli, pool: str) -> None:
    code, env = cli("correct", pool, "--claim", "The Postgres pool size is 96.")
    assert code == 0, env
    data = env["data"]
    assert data["title"] == "The Postgres pool size is 96" and data["title_from"] == "claim"
    assert data["path"].endswith("/the-postgres-pool-size-is-96.html")
    doc = parse_memory((store / data["path"]).read_bytes())
    assert doc.title == "The Postgres pool size is 96" and doc.gist.endswith("96.")
    assert (doc.importance, doc.confidence, doc.tags) == (8, 0.9, ("db",))
    assert doc.entities == (("service", "postgres"),)


def test_correct_through_apply_keeps_the_head_too(store: Path, cli: Cli, pool: str) -> None:
    ops = store.parent / "ops.jsonl"
    op = {"op": "correct", "target_path": pool, "claim": "The Postgres pool size is 96."}
    ops.write_text(json.dumps(op) + "\n", encoding="utf-8")
    code, env = cli("apply", str(ops))
    assert code == 0, env
    result = env["data"]["results"][0]
    assert result["title_from"] == "claim"
    doc = parse_memory((store / result["path"]).read_bytes())
    assert doc.title == "The Postgres pool size is 96" and doc.importance == 8


def test_correct_to_an_archived_path_is_a_typed_refusal(store: Path, cli: Cli, pool: str) -> None:
    _, first = cli("correct", pool, "--claim", "The Postgres pool size is 96.")
    archived, live = first["data"]["archive_path"], first["data"]["path"]
    before = _commits(store)
    code, env = cli("correct", archived, "--claim", "The Postgres pool size is 128.")
    assert code == 1 and env["code"] == "ERR_ARCHIVED"
    assert env["details"] == {"path": archived, "live_path": live}
    assert f"memhtml correct {live}" in env["suggestions"]
    assert _commits(store) == before


@pytest.mark.parametrize("claim", ["...", ".", "—", "…", " ?! ", "🔥🔥"])
def test_a_claim_that_says_nothing_is_refused_by_every_cli_door(
    store: Path, cli: Cli, pool: str, claim: str
) -> None:
    before = _commits(store)
    code, env = cli("write", "--title", "Nothing", "--type", "semantic", "--claim", claim)
    assert code == 1 and env["code"] == "ERR_INVALID_MEMORY"
    assert env["details"]["field"] == "claim" and "letter or digit" in env["error"]
    code, env = cli("correct", pool, "--claim", claim)
    assert code == 1 and env["code"] == "ERR_INVALID_MEMORY"
    assert env["details"]["field"] == "claim"
    assert (store / pool).exists()  # the README's placeholder once archived a real memory
    ops = store.parent / "ops.jsonl"
    ops.write_text(
        json.dumps({"op": "write", "title": "Fine", "type": "semantic", "claim": "Fine."})
        + "\n"
        + json.dumps({"op": "correct", "target_path": pool, "claim": claim})
        + "\n",
        encoding="utf-8",
    )
    code, env = cli("apply", str(ops))
    assert code == 2 and env["code"] == "ERR_INVALID_OP"
    assert env["details"]["field"] == "claim" and env["details"]["line"] == 2
    code, env = cli("write", "--title", "Nothing", "--type", "semantic", "--body", claim)
    assert code == 1 and env["details"]["field"] == "body"
    markup = f"<p><mark>{claim}</mark></p>"
    code, env = cli("write", "--title", "Nothing", "--type", "semantic", "--article-html", markup)
    assert code == 1 and env["details"]["field"] == "article_html"
    assert _commits(store) == before


@pytest.mark.parametrize("claim", ["Ja.", "Ωμέγα.", "東京は大きい。", "42", "x", "٣"])
def test_a_claim_in_any_script_or_a_number_is_accepted(store: Path, cli: Cli, claim: str) -> None:
    code, env = cli("write", "--title", f"Claim {claim}", "--type", "semantic", "--claim", claim)
    assert code == 0, env


def test_the_python_api_refuses_an_empty_claim(store: Path) -> None:
    import memhtml
    from memhtml.contracts.errors import InvalidMemoryError

    with memhtml.open(store, embedder="fake") as c, pytest.raises(InvalidMemoryError) as caught:
        c.write(title="T", type="semantic", claim="...")
    assert caught.value.details["field"] == "claim"


_CLAIM_FLAG = re.compile(r"""--claim\s+(["'])(.*?)\1""")
_CLAIM_KW = re.compile(r"""\bclaim=(["'])(.*?)\1""")


@pytest.mark.parametrize(
    "doc", ["README.md", "AGENTS.md", *sorted(p.name for p in (ROOT / "docs").glob("*.md"))]
)
def test_the_docs_show_no_claim_placeholder(doc: str) -> None:
    path = ROOT / doc if (ROOT / doc).exists() else ROOT / "docs" / doc
    text = path.read_text(encoding="utf-8")
    claims = [m.group(2) for m in _CLAIM_FLAG.finditer(text)]
    claims += [m.group(2) for m in _CLAIM_KW.finditer(text)]
    empty = [c for c in claims if not says_something(c)]
    assert not empty, f"{doc} shows a claim that would be refused: {empty}"
