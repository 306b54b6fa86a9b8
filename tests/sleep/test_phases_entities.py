"""entity-resolution and person-links: spellings fold, aliases fold, fuzzy folds wait a night."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from memhtml.sleep.phases.entity_resolution import corroborated
from tests.sleep.phase_harness import commit_files, doc_of, links_of, memory_bytes, run_phase


def entities(corpus: Any, path: str) -> list[tuple[str, str]]:
    return list(doc_of(corpus, path).entities)


def test_spellings_of_one_key_fold_onto_the_most_used(fixed: Any) -> None:
    paths = [
        fixed.write(title=f"m{i}", claim=f"Fact number {w} about checkout.", entity=[e])["path"]
        for i, (w, e) in enumerate(
            [
                ("one", "service:Checkout-API"),
                ("two", "service:Checkout-API"),
                ("three", "service:checkout-api"),
                ("four", "Service:CHECKOUT-API"),
            ]
        )
    ]
    both = fixed.write(
        title="both",
        claim="Fact five about checkout.",
        entity=["service:Checkout-API", "service:checkout-api"],
    )["path"]
    hashes = {p: doc_of(fixed, p).content_hash for p in [*paths, both]}
    ran = run_phase(fixed, "entity-resolution")
    counts = ran.outcome.counts
    assert counts["names_normalized"] == 2 and counts["files_rewritten"] == 3
    for p in [*paths, both]:
        doc = doc_of(fixed, p)
        assert doc.ok and doc.content_hash == hashes[p]
        assert doc.entities == (("service", "Checkout-API"),)
    assert ran.outcome.subject == "normalize 2 entity names, merge 0 aliases"
    assert run_phase(fixed, "entity-resolution").commit_sha is None


def test_declared_aliases_fold_onto_the_person_record(fixed: Any) -> None:
    record = "resources/people/ada-lovelace.html"
    commit_files(
        fixed,
        {
            record: memory_bytes(
                "Ada Lovelace",
                "Ada Lovelace writes the deploy runbooks.",
                entities=(("person", "Ada Lovelace"),),
                aliases=("Ada", "A. Lovelace"),
            )
        },
    )
    a = fixed.write(title="a", claim="Ada approved the rollout.", entity=["person:Ada"])["path"]
    b = fixed.write(title="b", claim="ada paged the on-call.", entity=["person:ada"])["path"]
    c = fixed.write(title="c", claim="Lovelace wrote it.", entity=["person:A. Lovelace"])["path"]
    ran = run_phase(fixed, "entity-resolution")
    assert ran.outcome.counts["alias_merges"] == 2
    for p in (a, b, c):
        assert entities(fixed, p) == [("person", "Ada Lovelace")]
    assert entities(fixed, record) == [("person", "Ada Lovelace")]  # the record is untouched
    assert run_phase(fixed, "entity-resolution").commit_sha is None


def test_a_fuzzy_fold_waits_for_a_second_night(fixed: Any) -> None:
    from memhtml.sleep import ledger

    many = [
        fixed.write(title=f"p{i}", claim=f"Postgres fact {w}.", entity=["service:postgres"])["path"]
        for i, w in enumerate(["one", "two", "three"])
    ]
    odd = fixed.write(title="q", claim="Postgres fact four.", entity=["service:postgresql"])["path"]
    fixed.write(title="r", claim="Service a fact.", entity=["service:service-a"])
    fixed.write(title="s", claim="Service b fact.", entity=["service:service-b"])
    first = run_phase(fixed, "entity-resolution", date="2026-03-02")
    counts = first.outcome.counts
    assert counts["fuzzy_candidates"] == 1 and counts["pending_corroboration"] == 1
    assert counts["fuzzy_merges"] == 0 and first.commit_sha is None
    (mark,) = first.outcome.marks
    assert {k: mark[k] for k in ("kind", "entity_type", "from_name", "to_name", "at")} == {
        "kind": "entity-corroboration",
        "entity_type": "service",
        "from_name": "postgresql",
        "to_name": "postgres",
        "at": "2026-03-02T00:00:00Z",
    }
    # `sleep merge` applies the ledger to the state plane
    ledger.apply_marks(fixed.conn, "sleep/2026-03-02", [mark], mark["at"], mark["at"])
    assert ("service", "postgresql", "postgres") in corroborated(fixed.conn, "2026-03-03T00:00:00Z")
    # the same night again: one night's detection is not corroboration, and is not re-marked
    again = run_phase(fixed, "entity-resolution", date="2026-03-02")
    assert again.outcome.counts["fuzzy_merges"] == 0 and again.commit_sha is None
    assert again.outcome.counts["pending_corroboration"] == 1 and again.outcome.marks == []
    # the next night: corroborated, so it folds
    second = run_phase(fixed, "entity-resolution", date="2026-03-03")
    assert second.outcome.counts["fuzzy_merges"] == 1 and second.commit_sha is not None
    assert entities(fixed, odd) == [("service", "postgres")]
    assert all(entities(fixed, p) == [("service", "postgres")] for p in many)


def test_no_corroboration_table_means_nothing_is_corroborated(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("ATTACH DATABASE ? AS state", (str(tmp_path / "empty.db"),))
    assert corroborated(conn, "2026-03-03T00:00:00Z") == set()
    conn.close()
    bare = sqlite3.connect(":memory:")  # no state plane attached at all
    assert corroborated(bare, "2026-03-03T00:00:00Z") == set()


def test_person_records_are_created_and_linked(fixed: Any) -> None:
    a = fixed.write(title="a", claim="Grace reviewed the schema.", entity=["person:Grace Hopper"])[
        "path"
    ]
    b = fixed.write(title="b", claim="Grace owns the compiler.", entity=["person:Grace Hopper"])[
        "path"
    ]
    hashes = {p: doc_of(fixed, p).content_hash for p in (a, b)}
    ran = run_phase(fixed, "person-links")
    record = "resources/people/grace-hopper.html"
    assert ran.outcome.counts == {
        "people": 1,
        "created": 1,
        "linked": 2,
        "already_linked": 0,
        "failed": 0,
    }
    doc = doc_of(fixed, record)
    assert doc.ok and doc.memory_type == "semantic" and doc.author == "agent:sleep"
    assert doc.entities == (("person", "Grace Hopper"),) and doc.title == "Grace Hopper"
    assert doc.gist == "Grace Hopper appears in this agent's memory."
    for p in (a, b):
        assert links_of(fixed, p) == [("about_person", record)]
        assert doc_of(fixed, p).content_hash == hashes[p]
    kinds = {(t.path, t.kind) for t in ran.outcome.touched}
    assert kinds == {(record, "created"), (a, "rewritten"), (b, "rewritten")}
    again = run_phase(fixed, "person-links")
    assert again.commit_sha is None and again.outcome.counts["already_linked"] == 2


def test_an_existing_record_is_found_by_its_alias(fixed: Any) -> None:
    record = "resources/people/countess.html"
    commit_files(
        fixed,
        {
            record: memory_bytes(
                "Ada",
                "Ada Lovelace writes the runbooks.",
                entities=(("person", "Ada Lovelace"),),
                aliases=("The Countess",),
            )
        },
    )
    m = fixed.write(title="m", claim="The Countess signed off.", entity=["person:The Countess"])[
        "path"
    ]
    ran = run_phase(fixed, "person-links")
    assert ran.outcome.counts["created"] == 0 and links_of(fixed, m) == [("about_person", record)]
    assert (fixed.root / record).read_bytes() == memory_bytes(
        "Ada",
        "Ada Lovelace writes the runbooks.",
        entities=(("person", "Ada Lovelace"),),
        aliases=("The Countess",),
    )  # an existing record is never rewritten


def test_dry_runs_count_what_would_change(fixed: Any) -> None:
    fixed.write(title="a", claim="Fact a.", entity=["service:Checkout-API", "person:Alan Turing"])
    fixed.write(title="b", claim="Fact b.", entity=["service:checkout-api"])
    fixed.write(title="c", claim="Fact c.", entity=["service:Checkout-API"])
    dry = run_phase(fixed, "entity-resolution", dry_run=True)
    assert dry.outcome.counts["files_rewritten"] == 1 and dry.outcome.marks == []
    people = run_phase(fixed, "person-links", dry_run=True)
    assert people.outcome.counts["created"] == 1 and people.outcome.counts["linked"] == 1
    assert not (fixed.root / "resources/people/alan-turing.html").exists()
