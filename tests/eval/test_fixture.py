"""The fixture corpus: a pure function of the seed, covering the whole format."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memhtml.contracts.errors import InvalidFlagError
from memhtml.contracts.vocab import EDGE_CLASSES, EDGE_RELS, MEMORY_TYPES, TASK_STATUSES
from memhtml.eval.fixture import (
    ELEMENT_CHECKS,
    FixturePlan,
    fixture_coverage,
    generate_fixture,
    scaffold_files,
    write_fixture,
)
from memhtml.eval.flips import change_number, flip, flip_like, is_negated
from memhtml.html import parse_memory

COMMITTED = Path(__file__).resolve().parents[2] / "eval_corpora" / "fixture-seed-7"
BUCKETS = {
    "projects",
    "areas",
    "areas/inbox",
    "areas/arcs",
    "resources",
    "resources/people",
    "archive",
}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


# --- determinism --------------------------------------------------------------------------


def test_same_seed_same_bytes(seed7_plan: FixturePlan) -> None:
    again = generate_fixture(7, 300)
    assert list(again.files) == list(seed7_plan.files)
    assert again.files == seed7_plan.files
    assert [p.to_data() for p in again.probes] == [p.to_data() for p in seed7_plan.probes]


def test_other_seed_other_corpus(seed7_plan: FixturePlan) -> None:
    other = generate_fixture(8, 300)
    assert other.files != seed7_plan.files
    assert [p.query for p in other.probes] != [p.query for p in seed7_plan.probes]


def test_now_moves_every_date() -> None:
    a = generate_fixture(3, 60, "2026-01-01T00:00:00Z")
    b = generate_fixture(3, 60, "2027-06-01T00:00:00Z")
    assert list(a.files) != list(b.files) or a.files != b.files
    assert b"2027-0" in b"".join(b.files.values())


def test_write_is_deterministic(small_plan: FixturePlan, tmp_path: Path) -> None:
    one = write_fixture(small_plan, tmp_path / "one")
    two = write_fixture(generate_fixture(11, 90), tmp_path / "two")
    assert one.tree_sha == two.tree_sha
    assert one.commit_sha == two.commit_sha
    root = Path(one.root)
    assert _git(root, "status", "--porcelain") == ""
    assert _git(root, "log", "--format=%an <%ae> %ad", "--date=iso-strict") == (
        "memhtml fixture <fixture@memhtml.invalid> 2026-01-01T00:00:00+00:00"
    )
    on_disk = {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }
    assert on_disk == small_plan.tree()
    other = write_fixture(generate_fixture(12, 90), tmp_path / "three")
    assert other.tree_sha != one.tree_sha


def test_committed_corpus_equals_a_regeneration(seed7_plan: FixturePlan) -> None:
    """eval_corpora/fixture-seed-7 is `memhtml eval fixture --seed 7` without its .git."""
    assert COMMITTED.is_dir(), "regenerate with: memhtml eval fixture --seed 7 --out ..."
    committed = {
        p.relative_to(COMMITTED).as_posix(): p.read_bytes()
        for p in sorted(COMMITTED.rglob("*"))
        if p.is_file()
    }
    expected = seed7_plan.tree()
    assert sorted(committed) == sorted(expected)
    for path, data in expected.items():
        assert committed[path] == data, path


def test_write_refuses_a_non_empty_directory(small_plan: FixturePlan, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x.txt").write_text("x")
    with pytest.raises(InvalidFlagError, match="new or empty"):
        write_fixture(small_plan, tmp_path / "taken")


@pytest.mark.parametrize(
    ("size", "now", "message"),
    [(59, "2026-01-01T00:00:00Z", "too small"), (100, "yesterday", "not a date")],
)
def test_bad_arguments(size: int, now: str, message: str) -> None:
    with pytest.raises(InvalidFlagError, match=message):
        generate_fixture(1, size, now)


@pytest.mark.parametrize("size", [60, 61, 97, 150, 300, 420])
def test_size_is_exact(size: int) -> None:
    plan = generate_fixture(5, size)
    assert len(plan.files) == size
    assert plan.probes


# --- coverage -------------------------------------------------------------------------------


def test_every_file_parses_clean(seed7_plan: FixturePlan) -> None:
    for path, data in seed7_plan.files.items():
        doc = parse_memory(data)
        assert doc.violations == (), (path, doc.violations)
        assert doc.warnings == (), (path, doc.warnings)


@pytest.mark.parametrize("size", [60, 300])
def test_coverage(size: int, seed7_plan: FixturePlan) -> None:
    plan = seed7_plan if size == 300 else generate_fixture(7, size)
    cov = fixture_coverage(plan.files)
    assert cov["invalid"] == []
    assert set(cov["types"]) == set(MEMORY_TYPES)
    assert set(cov["buckets"]) == BUCKETS
    assert all(cov["elements"][name] > 0 for name in ELEMENT_CHECKS), cov["elements"]
    assert set(cov["edge_classes"]) == set(EDGE_CLASSES)
    assert set(cov["rels"]) == set(EDGE_RELS)
    assert set(cov["task_statuses"]) == set(TASK_STATUSES)
    counts = cov["counts"]
    for key in (
        "entities",
        "tags",
        "aliases",
        "numeric_facets",
        "citations",
        "superseded",
        "archived",
        "due",
    ):
        assert counts[key] > 0, key


def test_supersession_is_linked_both_ways(seed7_plan: FixturePlan) -> None:
    docs = {p: parse_memory(d) for p, d in seed7_plan.files.items()}
    superseded = [p for p, d in docs.items() if d.superseded_by]
    assert superseded
    for old in superseded:
        assert old.startswith("archive/") and docs[old].status == "archived"
        new = docs[old].superseded_by
        assert new in docs
        assert any(link.rel == "supersedes" and link.path == old for link in docs[new].links)


def test_links_resolve_and_respect_their_class(seed7_plan: FixturePlan) -> None:
    docs = {p: parse_memory(d) for p, d in seed7_plan.files.items()}
    for path, doc in docs.items():
        for link in doc.links:
            assert link.path in docs, (path, link)
            dst = docs[link.path]
            if link.rel in ("blocks", "subtask_of"):
                assert doc.memory_type == dst.memory_type == "task"
            elif link.rel in ("about_person", "authored_by"):
                assert link.path.startswith("resources/people/")
            elif link.rel != "from_session":
                assert "task" not in (doc.memory_type, dst.memory_type)


def test_arcs_and_tasks_are_where_they_belong(seed7_plan: FixturePlan) -> None:
    docs = {p: parse_memory(d) for p, d in seed7_plan.files.items()}
    for path, doc in docs.items():
        if doc.memory_type == "arc":
            assert path.startswith("areas/arcs/")
        if doc.memory_type == "task":
            assert "/tasks/" in path and doc.task_status in TASK_STATUSES and doc.due


def test_content_is_unique_among_active_memories(seed7_plan: FixturePlan) -> None:
    seen: dict[str, str] = {}
    for path, data in seed7_plan.files.items():
        doc = parse_memory(data)
        if path.startswith("archive/") or doc.memory_type == "task":
            continue
        assert doc.content_hash not in seen, (path, seen.get(doc.content_hash))
        seen[doc.content_hash] = path


def test_scaffold_matches_init() -> None:
    files = scaffold_files()
    assert "areas/inbox/.gitkeep" in files and "resources/people/.gitkeep" in files
    assert b".memhtml/index.db" in files[".gitignore"]


# --- probes ---------------------------------------------------------------------------------


def test_probe_set_shape(seed7_plan: FixturePlan) -> None:
    kinds = [p.kind for p in seed7_plan.probes]
    assert len(kinds) == 60
    assert {k: kinds.count(k) for k in set(kinds)} == {
        "negation": 20,
        "number": 20,
        "qualifier": 20,
    }
    negated = [p for p in seed7_plan.probes if p.kind == "negation" and is_negated(p.target_claim)]
    assert 0 < len(negated) < 20  # both polarities are targets


def test_controls_sit_beside_their_targets(seed7_plan: FixturePlan) -> None:
    for probe in seed7_plan.probes:
        target = parse_memory(seed7_plan.files[probe.target])
        assert target.gist == probe.target_claim
        assert seed7_plan.roles[probe.target] == "target"
        folder = probe.target.rsplit("/", 1)[0]
        for path, claim in zip(probe.controls, probe.control_claims, strict=True):
            control = parse_memory(seed7_plan.files[path])
            assert seed7_plan.roles[path] == "control"
            assert path.rsplit("/", 1)[0] == folder
            assert path < probe.target  # ties broken by path go against the target
            assert control.gist == claim != probe.target_claim
            assert control.memory_type == target.memory_type
            assert control.entities == target.entities and control.tags == target.tags
            assert (control.created, control.updated) == (target.created, target.updated)
            assert control.body_text.replace(claim, "") == target.body_text.replace(
                probe.target_claim, ""
            )


def test_every_query_carries_the_targets_token(seed7_plan: FixturePlan) -> None:
    """Well-posed: for every control, the flip that made it from the target applies to the
    query in the same direction, so the target is the one right answer."""
    for probe in seed7_plan.probes:
        for kind, claim in zip(probe.control_kinds, probe.control_claims, strict=True):
            derived = [flip(probe.target_claim, kind)]
            if kind == "number":
                derived = [change_number(probe.target_claim, v) for v in (1, 2)]
            made = next(f for f in derived if f is not None and f.flipped == claim)
            assert flip_like(made, probe.query) is not None, (probe.probe_id, claim)
        if probe.kind == "negation":
            assert is_negated(probe.query) == is_negated(probe.target_claim), probe.probe_id
        if probe.kind == "number":
            assert probe.target_token in probe.query
            assert not any(t in probe.query for t in probe.control_tokens)
        if probe.kind == "qualifier":
            assert probe.target_token.lower() in probe.query.lower()
            assert probe.control_tokens[0].lower() not in probe.query.lower()
