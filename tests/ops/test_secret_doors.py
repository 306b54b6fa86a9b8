"""A memory holding a credential is refused at every door unless the caller allows it, and no
title is ever slugged to a name publish generates (issue 29, items 6 and 3)."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memhtml.cli.main import run
from memhtml.contracts.errors import InvalidPathError, SecretFoundError
from memhtml.eval.secret_samples import positives, tokens

KINDS = sorted(positives())


def cli(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run(list(argv), stdout=out)
    return code, json.loads(out.getvalue())


def head_files(root: Path) -> str:
    """Every committed byte of every memory, as text."""
    return subprocess.run(
        ["git", "-C", str(root), "grep", "-h", "-I", "", "HEAD", "--", "*.html"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def commits(root: Path) -> int:
    return int(
        subprocess.run(
            ["git", "-C", str(root), "rev-list", "--count", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


@pytest.mark.parametrize("kind", KINDS)
def test_python_api_refuses_each_kind_and_names_field_and_kind(corpus: Any, kind: str) -> None:
    text = positives()[kind][0]
    before = commits(corpus.root)
    with pytest.raises(SecretFoundError) as info:
        corpus.write(title="Deploy notes", claim="The deploy works this way.", body=text)
    assert info.value.code == "ERR_SECRET_DETECTED"
    assert info.value.details == {"field": "body", "kind": kind}
    shown = info.value.message + json.dumps(info.value.details) + " ".join(info.value.suggestions)
    assert tokens()[kind].splitlines()[0] not in shown  # the secret is never echoed
    assert commits(corpus.root) == before


@pytest.mark.parametrize(
    ("field", "fields"),
    [
        ("title", {"title": "Key {tok}", "claim": "A fact."}),
        ("claim", {"title": "Key", "claim": "The key is {tok} today."}),
        ("body", {"title": "Key", "claim": "A fact.", "body": "Use {tok} here."}),
        ("tag", {"title": "Key", "claim": "A fact.", "tag": ["{tok}"]}),
        ("entity", {"title": "Key", "claim": "A fact.", "entity": ["service:{tok}"]}),
        (
            "facet",
            {
                "title": "Key",
                "article_html": "<p><mark>A fact.</mark></p><dl><dt>token</dt><dd>{tok}</dd></dl>",
            },
        ),
        ("author", {"title": "Key", "claim": "A fact.", "author": "{tok}"}),
    ],
)
def test_every_field_is_checked(corpus: Any, field: str, fields: dict[str, Any]) -> None:
    tok = tokens()["github-pat"]
    given = {
        k: ([x.format(tok=tok) for x in v] if isinstance(v, list) else v.format(tok=tok))
        for k, v in fields.items()
    }
    title = given.pop("title")
    with pytest.raises(SecretFoundError) as info:
        corpus.write(title=title, **given)
    assert info.value.details["kind"] == "github-pat"
    assert info.value.details["field"] == field
    assert tok not in head_files(corpus.root)


def test_a_hand_path_holding_a_secret_is_refused(corpus: Any) -> None:
    tok = tokens()["github-pat"]
    with pytest.raises(SecretFoundError) as info:
        corpus.write(title="Notes", claim="A fact.", path=f"areas/inbox/{tok}.html")
    assert info.value.details == {"field": "path", "kind": "github-pat"}


def test_allow_secret_writes_it_and_correct_checks_too(corpus: Any) -> None:
    tok = tokens()["aws-access-token"]
    written = corpus.write(title="Key", claim=f"The id is {tok}.", allow_secret=True)
    assert tok in (corpus.root / written["path"]).read_text()
    with pytest.raises(SecretFoundError):
        corpus.correct(written["path"], claim=f"The id is still {tok} now.")
    corrected = corpus.correct(
        written["path"], claim="The id lives in the vault under deploy/aws.", allow_secret=False
    )
    assert corrected["path"]


def test_task_add_refuses_a_secret_in_its_title(corpus: Any) -> None:
    tok = tokens()["aws-access-token"]
    with pytest.raises(SecretFoundError) as info:
        corpus.task_add(f"Rotate {tok}")
    assert info.value.details["field"] == "title"
    assert corpus.task_add(f"Rotate {tok}", allow_secret=True)["path"]


@pytest.mark.parametrize("kind", KINDS)
def test_cli_write_refuses_each_kind(corpus: Any, kind: str) -> None:
    text = positives()[kind][0]
    code, env = cli(
        "write",
        "--repo",
        str(corpus.root),
        "--title",
        "Notes",
        "--type",
        "semantic",
        "--claim",
        "A fact.",
        "--body",
        text,
    )
    assert (code, env["code"], env["details"]["kind"]) == (1, "ERR_SECRET_DETECTED", kind)
    assert tokens()[kind].splitlines()[0] not in json.dumps(env)
    code, env = cli(
        "write",
        "--repo",
        str(corpus.root),
        "--title",
        "Notes",
        "--type",
        "semantic",
        "--claim",
        "A fact.",
        "--body",
        text,
        "--allow-secret",
    )
    assert code == 0 and env["data"]["created"], env


def test_cli_apply_refuses_atomically_and_allows_per_op_or_per_batch(
    corpus: Any, tmp_path: Path
) -> None:
    tok = tokens()["anthropic-api-key"]
    ops = tmp_path / "ops.jsonl"
    lines = [
        {"op": "write", "title": "Plain", "type": "semantic", "claim": "A plain fact."},
        {"op": "write", "title": "Keyed", "type": "semantic", "claim": f"Use {tok} there."},
    ]
    ops.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    before = commits(corpus.root)
    code, env = cli("apply", str(ops), "--repo", str(corpus.root))
    assert (code, env["code"]) == (1, "ERR_SECRET_DETECTED")
    assert env["details"]["results"][1]["details"] == {
        "field": "claim",
        "kind": "anthropic-api-key",
    }
    assert commits(corpus.root) == before and tok not in json.dumps(env)
    code, env = cli("apply", str(ops), "--repo", str(corpus.root), "--allow-secret")
    assert code == 0, env
    lines[1] = {**lines[1], "title": "Keyed again", "allow_secret": True}
    lines[0] = {**lines[0], "title": "Plain again", "claim": "Another plain fact."}
    ops.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    code, env = cli("apply", str(ops), "--repo", str(corpus.root))
    assert code == 0, env


# -- item 3: no reserved name from a title --------------------------------------------------
@pytest.mark.parametrize("title", ["Index", "INDEX", "index", " Index! "])
def test_a_title_never_becomes_a_generated_name(corpus: Any, title: str) -> None:
    written = corpus.write(title=title, claim=f"The index page of {title.strip()} lists services.")
    assert written["path"].rsplit("/", 1)[-1] != "index.html"
    listed = {f["path"] for f in corpus.list()["files"]}
    assert written["path"] in listed
    assert corpus.read(written["path"])["path"] == written["path"]


@pytest.mark.parametrize("name", ["index.html", "Index.html", "INDEX.html"])
def test_a_hand_path_naming_a_generated_file_is_refused(corpus: Any, name: str) -> None:
    with pytest.raises(InvalidPathError) as info:
        corpus.write(title="x", claim="A fact.", path=f"areas/inbox/{name}")
    assert info.value.code == "ERR_INVALID_PATH"
    assert not (corpus.root / "areas/inbox" / name).exists()


def test_apply_refuses_a_generated_name_before_anything_runs(corpus: Any, tmp_path: Path) -> None:
    ops = tmp_path / "ops.jsonl"
    ops.write_text(
        json.dumps(
            {"title": "x", "type": "semantic", "claim": "A fact.", "path": "areas/inbox/Index.html"}
        )
        + "\n"
    )
    code, env = cli("apply", str(ops), "--repo", str(corpus.root))
    assert code != 0 and env["code"] in ("ERR_INVALID_PATH", "ERR_INVALID_OP")


def test_doctor_reports_memory_looking_files_it_cannot_see(corpus: Any) -> None:
    corpus.write(title="Visible", claim="A visible fact.")
    (corpus.root / "areas/inbox/index.html").write_text(
        "<!doctype html><html><head><title>x</title></head><body><article><p><mark>Hidden."
        "</mark></p></article></body></html>"
    )
    (corpus.root / "areas/inbox/Shout.HTML").write_text("<p>x</p>")
    corpus.publish(out=str(corpus.root.parent / "site"))  # publish's listings are not reported
    report = corpus.health()
    unseen = {u["path"]: u["reason"] for u in report["unseen"]}
    assert set(unseen) == {"areas/inbox/index.html", "areas/inbox/Shout.HTML"}
    assert "publish generates" in unseen["areas/inbox/index.html"]
    assert report["healthy"] is False
