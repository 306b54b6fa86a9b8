"""`correct` keeps the replaced version's head and never leaves a title the correction
took back (issue 32, item 2), and refuses an archived target with the live path."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import memhtml
from memhtml.contracts.errors import ArchivedMemoryError
from memhtml.contracts.vocab import META_ORDER
from memhtml.html import add_link, add_meta, parse_memory, set_meta
from memhtml.ops.correction import HEAD_FIELDS, stale_title, title_from_claim

NOW = "2026-06-01T12:00:00Z"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def _commits(repo: Path) -> int:
    return int(_git(repo, "rev-list", "--count", "HEAD"))


def _hand_edit(repo: Path, path: str, edit: Any) -> None:
    """Edit a memory's head by hand and commit it, as a person with git would."""
    file = repo / path
    file.write_text(edit(file.read_text(encoding="utf-8")), encoding="utf-8")
    _git(repo, "commit", "-qam", f"hand edit {path}")


@pytest.fixture
def clocked(repo: Path) -> Any:
    c = memhtml.open(repo, embedder="fake", now=NOW)
    yield c
    c.close()


def test_every_head_meta_has_a_correction_rule() -> None:
    assert set(HEAD_FIELDS) == set(META_ORDER)


def test_correct_carries_every_head_field(clocked: Any, repo: Path) -> None:
    other = clocked.write(title="Pgbouncer", type="semantic", claim="Pgbouncer fronts it.")
    cause = clocked.write(title="Incident", type="episodic", claim="The pool ran dry in May.")
    orig = clocked.write(
        title="Postgres pool size is 64",
        type="procedural",
        claim="The Postgres pool size is 64.",
        importance=8,
        confidence=0.9,
        author="ops-team",
        tag=["db", "postgres"],
        entity=["service:postgres", "person:ana"],
        due="2027-01-01",
        session_id="sess-old",
        prompt_id="prompt-old",
        turn_uuid="turn-old",
    )["path"]

    def edit(text: str) -> str:
        text = add_meta(text, "memhtml-alias", "pg pool")
        text = add_meta(text, "memhtml-alias", "connection pool")
        text = set_meta(text, "memhtml-valid-until", "2030-01-01")
        text = set_meta(text, "memhtml-reprieves", "2")
        text = set_meta(text, "memhtml-needs-revision", "true")
        text = add_link(text, "relates_to", other["path"])
        text = add_link(text, "caused_by", cause["path"])
        return add_link(text, "from_session", "areas/sessions/old.html")

    _hand_edit(repo, orig, edit)
    before = parse_memory((repo / orig).read_bytes())
    assert before.aliases == ("pg pool", "connection pool") and before.needs_revision

    out = clocked.correct(orig, claim="The Postgres pool size is 96.", session_id="sess-new")
    new = parse_memory((repo / out["path"]).read_bytes())
    old = parse_memory((repo / out["archive_path"]).read_bytes())
    # One expectation per head meta of the vocabulary; None = absent from the replacement.
    expected: dict[str, str | None] = {
        "memhtml-type": "procedural",
        "memhtml-status": "active",
        "memhtml-created": NOW,
        "memhtml-updated": NOW,
        "memhtml-confidence": "0.9",
        "memhtml-importance": "8",
        "memhtml-content-hash": new.content_hash,
        "memhtml-author": "ops-team",
        "memhtml-session": "sess-new",
        "memhtml-prompt": None,  # provenance of the old version, not carried
        "memhtml-turn": None,
        "memhtml-valid-from": NOW,
        "memhtml-valid-until": "2030-01-01",
        "memhtml-reprieves": "2",
        "memhtml-archived": None,
        "memhtml-superseded-by": None,
        "memhtml-needs-revision": None,
        "memhtml-task-status": None,  # not a task
        "memhtml-due": "2027-01-01",
    }
    repeatable = {
        "memhtml-entity": (("service", "postgres"), ("person", "ana")),
        "memhtml-tag": ("db", "postgres"),
        "memhtml-alias": ("pg pool", "connection pool"),
    }
    assert set(expected) | set(repeatable) == set(META_ORDER)
    for name, value in expected.items():
        assert new.metas.get(name) == value, name
    assert (new.entities, new.tags, new.aliases) == tuple(repeatable.values())
    links = {(link.rel, link.path) for link in new.links}
    assert links == {
        ("supersedes", out["archive_path"]),
        ("relates_to", other["path"]),
        ("caused_by", cause["path"]),
    }  # from_session was about the old version
    assert old.metas["memhtml-prompt"] == "prompt-old" and old.valid_until == NOW
    assert old.superseded_by == out["path"] and old.aliases == before.aliases


def test_given_importance_and_confidence_replace_the_carried_ones(clocked: Any) -> None:
    orig = clocked.write(
        title="Retry budget", type="semantic", claim="Retries stop after 3.", importance=9
    )["path"]
    out = clocked.correct(orig, claim="Retries stop after 5.", importance=4, confidence=0.5)
    doc = parse_memory((clocked.root / out["path"]).read_bytes())
    assert (doc.importance, doc.confidence) == (4, 0.5)


def test_an_ended_validity_stays_with_the_old_version_and_a_future_start_carries(
    clocked: Any, repo: Path
) -> None:
    ended = clocked.write(title="Freeze", type="semantic", claim="Deploys freeze in May.")["path"]
    _hand_edit(repo, ended, lambda t: set_meta(t, "memhtml-valid-until", "2026-05-31"))
    out = clocked.correct(ended, claim="Deploys freeze in June.")
    doc = parse_memory((repo / out["path"]).read_bytes())
    assert doc.valid_until is None and doc.valid_from == NOW
    later = clocked.write(
        title="Quota", type="semantic", claim="The quota is 10 GB.", valid_from="2026-09-01"
    )["path"]
    out = clocked.correct(later, claim="The quota is 20 GB.")
    assert parse_memory((repo / out["path"]).read_bytes()).valid_from == "2026-09-01"


def test_a_corrected_task_keeps_its_status(clocked: Any) -> None:
    task = clocked.task_add("Rotate the keys", status="doing", due="2026-07-01")["path"]
    out = clocked.correct(task, claim="Rotate the signing keys.")
    doc = parse_memory((clocked.root / out["path"]).read_bytes())
    assert (doc.memory_type, doc.task_status, doc.due) == ("task", "doing", "2026-07-01")


@pytest.mark.parametrize(
    ("title", "old", "new", "given", "want", "source"),
    [
        # the title restates the value the correction took back: it follows the claim
        (
            "Postgres pool size is 64",
            "The Postgres pool size is 64.",
            "The Postgres pool size is 96.",
            None,
            "The Postgres pool size is 96",
            "claim",
        ),
        # a negation taken back
        (
            "Do not drain the VIP",
            "Do not drain the VIP before a deploy.",
            "Drain the VIP before a deploy.",
            None,
            "Drain the VIP before a deploy",
            "claim",
        ),
        # a topic the correction did not touch stays
        ("Port", "The API listens on 8080.", "The API listens on 9090.", None, "Port", "original"),
        # a given title wins
        (
            "Postgres pool size is 64",
            "The Postgres pool size is 64.",
            "The Postgres pool size is 96.",
            "Pool size",
            "Pool size",
            "given",
        ),
    ],
)
def test_the_title_follows_what_the_correction_took_back(
    clocked: Any, title: str, old: str, new: str, given: str | None, want: str, source: str
) -> None:
    orig = clocked.write(title=title, type="semantic", claim=old)["path"]
    fields = {"title": given} if given else {}
    out = clocked.correct(orig, claim=new, **fields)
    assert (out["title"], out["title_from"]) == (want, source)
    assert parse_memory((clocked.root / out["path"]).read_bytes()).title == want


def test_a_body_only_correction_keeps_the_title(clocked: Any) -> None:
    orig = clocked.write(title="Pool is 64", type="semantic", claim="The pool is 64.")["path"]
    out = clocked.correct(orig, claim="The pool is 64.", body=["Set in pgbouncer.ini."])
    assert (out["title"], out["title_from"]) == ("Pool is 64", "original")


def test_a_long_claim_makes_a_bounded_title(clocked: Any) -> None:
    orig = clocked.write(title="Limit is 1", type="semantic", claim="The limit is 1.")["path"]
    claim = "The limit is 2 " + "and then some more words " * 30 + "in the end."
    out = clocked.correct(orig, claim=claim)
    assert out["title_from"] == "claim"
    assert len(out["title"]) <= 300 and out["title"].endswith("…")


@given(st.text(min_size=1, max_size=600))
def test_title_from_claim_is_one_bounded_line(claim: str) -> None:
    title = title_from_claim(claim)
    assert len(title) <= 300 and "\n" not in title and title == title.strip()


@given(st.text(max_size=40), st.text(max_size=40))
def test_an_unchanged_claim_never_makes_a_title_stale(title: str, claim: str) -> None:
    assert not stale_title(title, claim, claim)


# -- archived targets ---------------------------------------------------------------------
def test_correcting_an_archived_path_names_the_live_memory(clocked: Any, repo: Path) -> None:
    orig = clocked.write(title="Pool is 64", type="semantic", claim="The pool is 64.")["path"]
    first = clocked.correct(orig, claim="The pool is 96.")
    before = _commits(repo)
    with pytest.raises(ArchivedMemoryError) as caught:
        clocked.correct(first["archive_path"], claim="The pool is 128.")
    err = caught.value
    assert err.code == "ERR_ARCHIVED" and err.details["live_path"] == first["path"]
    assert first["path"] in err.message and f"memhtml correct {first['path']}" in err.suggestions
    with pytest.raises(ArchivedMemoryError):
        clocked.archive(first["archive_path"])
    assert _commits(repo) == before


def test_an_archived_memory_with_no_successor_says_so(clocked: Any) -> None:
    gone = clocked.write(title="Old", type="semantic", claim="Old news.")["path"]
    moved = clocked.archive(gone)["archive_path"]
    with pytest.raises(ArchivedMemoryError) as caught:
        clocked.correct(moved, claim="New news.")
    assert caught.value.details["live_path"] is None
    assert "memhtml resolve" in caught.value.suggestions[0]
