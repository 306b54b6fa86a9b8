"""FactConsolidation loader and slot heuristic: sample, plus the real file when present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memhtml.eval.benchmarks import SAMPLES_DIR, default_data_root
from memhtml.eval.benchmarks.factconsolidation import (
    conflicting_serials,
    load_factconsolidation,
    parse_context,
    parse_factconsolidation,
    slot_key,
    split_fact,
)

SAMPLES = SAMPLES_DIR
SAMPLE = SAMPLES / "factconsolidation_sample.json"
HEURISTIC = SAMPLES / "factconsolidation_heuristic_sample.json"


def _real() -> tuple[Path, Path]:
    root = default_data_root()
    base = None if root is None else root / "memoryagentbench"
    if base is None or not (base / "Conflict_Resolution.json").exists():
        pytest.skip("MemoryAgentBench data not present")
    return base / "Conflict_Resolution.json", base / "derived_sh_gold_heuristic.json"


@pytest.mark.parametrize(
    ("fact", "slot", "obj"),
    [
        ("The capital of Germany is Berlin.", "The capital of Germany is", "Berlin"),
        (
            "Hines Ward plays the position of wide receiver.",
            "Hines Ward plays the position of",
            "wide receiver",
        ),
        (
            "The headquarters of University of California, Berkeley is located in the city of "
            "Berkeley.",
            "The headquarters of University of California, Berkeley is located in the city of",
            "Berkeley",
        ),
        (
            "Pedro Pierluisi worked in the city of Washington, D.C..",
            "Pedro Pierluisi worked in the city of",
            "Washington, D.C.",
        ),
        ("Satyajit Ray's child is Sandip Ray.", "Satyajit Ray's child is", "Sandip Ray"),
        (
            "The univeristy where Oscar II of Sweden was educated is Uppsala University.",
            "The univeristy where Oscar II of Sweden was educated is",
            "Uppsala University",
        ),
        (
            "The name of the current head of the Washington, D.C. government is Muriel Bowser.",
            "The name of the current head of the Washington, D.C. government is",
            "Muriel Bowser",
        ),
        (
            "The type of music that Greg Osby plays is jazz.",
            "The type of music that Greg Osby plays is",
            "jazz",
        ),
        # a title with " is " in the subject: the LAST " is " ends the slot
        (
            "The author of Love is a Dog from Hell is Charles Bukowski.",
            "The author of Love is a Dog from Hell is",
            "Charles Bukowski",
        ),
        # the subject starts with "The" but the template is subject-first
        (
            "The Beatles was founded in the city of Liverpool.",
            "The Beatles was founded in the city of",
            "Liverpool",
        ),
        (
            "The Undertaker is a citizen of United States of America.",
            "The Undertaker is a citizen of",
            "United States of America",
        ),
        # an object containing a relation phrase: the EARLIEST phrase ends the slot
        (
            "Rand al'Thor was created by The man who was founded by nobody.",
            "Rand al'Thor was created by",
            "The man who was founded by nobody",
        ),
        (
            "goaltender is associated with the sport of ice hockey.",
            "goaltender is associated with the sport of",
            "ice hockey",
        ),
        ("  Chanel   was founded by Coco Chanel  ", "Chanel was founded by", "Coco Chanel"),
    ],
)
def test_split_fact(fact: str, slot: str, obj: str) -> None:
    assert split_fact(fact) == (slot, obj)


@pytest.mark.parametrize("fact", ["", "Nothing to see here.", "is Berlin.", "The capital is ."])
def test_split_fact_none(fact: str) -> None:
    assert split_fact(fact) is None


def test_slot_key_normalizes() -> None:
    assert slot_key("The Capital of  Germany is Berlin.") == slot_key(
        "the capital of germany is Bonn"
    )
    assert slot_key("The capital of Germany is Berlin.") != slot_key(
        "The capital of France is Paris."
    )
    assert slot_key("no template here") is None


def test_parse_context() -> None:
    ctx = "Here is a list of facts:\n0. A is B.\n\n1. C is D.\ncontinued.\n2. E is F.\n"
    assert parse_context(ctx) == [(0, "A is B."), (1, "C is D. continued."), (2, "E is F.")]
    with pytest.raises(ValueError):
        parse_context("stray line\n0. A is B.")


def test_conflicting_serials() -> None:
    facts = parse_context(json.loads(SAMPLE.read_text())[0]["context"])
    # Freedonia: 0 Fredville, 4 Port Ellis, 12 Fredville. Gold 12: 4 is stale,
    # 0 is a restatement of the gold's object (not stale).
    assert conflicting_serials(facts, 12) == ((4,), ())
    # gold 0: 4 is a newer conflict; 12 restates the gold
    assert conflicting_serials(dict(facts), 0) == ((), (4,))
    # Ana Silva citizen: 3 Portugal, 7 Brazil, 8 Portugal
    assert conflicting_serials(facts, 8) == ((7,), ())
    assert conflicting_serials(facts, 7) == ((3,), (8,))
    # another relation of the same subject is another slot
    assert conflicting_serials(facts, 10) == ((), ())
    with pytest.raises(KeyError):
        conflicting_serials(facts, 99)


def test_sample_rows() -> None:
    corpora, report = load_factconsolidation(SAMPLE, HEURISTIC)
    by = {c.scope_id: c for c in corpora}
    assert set(by) == {"factconsolidation_sh_6k", "factconsolidation_mh_6k"}
    sh = by["factconsolidation_sh_6k"]
    assert sh.name == "factconsolidation"
    assert len(sh.docs) == 15
    d0, d12 = sh.doc("0"), sh.doc("12")
    assert d0.text == "The capital of Freedonia is Fredville."
    assert d0.timestamp == "2020-01-01T00:00:00Z"
    assert d12.timestamp == "2020-01-01T12:00:00Z"  # one hour per serial
    assert d0.meta == {"serial": "0", "slot": "The capital of Freedonia is", "object": "Fredville"}
    assert d0.speaker is None and d0.session_id is None
    stamps = [str(d.timestamp) for d in sh.docs]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)

    qs = {q.qid: q for q in sh.questions}
    q0 = qs["factconsolidation_sh_6k_no0"]
    assert q0.gold_ids == ("12",) and q0.category == "single-hop"
    assert q0.meta["stale_ids"] == ("4",)
    assert q0.meta["newer_conflict_ids"] == ()
    assert q0.meta["answers"] == ("Fredville",)
    assert q0.meta["gold_object"] == "Fredville"
    assert qs["factconsolidation_sh_6k_no1"].meta["stale_ids"] == ("1",)
    q3 = qs["factconsolidation_sh_6k_no3"]
    assert q3.meta["stale_ids"] == () and q3.meta["newer_conflict_ids"] == ("11",)
    assert report.skip_reasons() == {
        "no unique heuristic gold (2 tied candidates)": 1,
        "heuristic gold does not match the context": 1,
        "no heuristic gold entry": 1,
    }
    assert report.counts["questions_with_stale_factconsolidation_sh_6k"] == 2
    assert report.counts["questions_gold_not_newest_factconsolidation_sh_6k"] == 1
    assert report.counts["facts_unparsed"] == 0

    mh = by["factconsolidation_mh_6k"]
    assert [q.gold_ids for q in mh.questions] == [(), ()]
    assert [q.category for q in mh.questions] == ["multi-hop", "multi-hop"]
    assert mh.questions[0].meta["answers"] == ("Lisbon",)
    assert report.n_questions_total == 8 and report.n_questions_loaded == 5
    assert any("share the same context" in n for n in report.notes)


def test_sample_options() -> None:
    rows = json.loads(SAMPLE.read_text())
    corpora, report = parse_factconsolidation(
        rows, None, sources=["factconsolidation_sh_6k"], step_seconds=86400
    )
    assert [c.scope_id for c in corpora] == ["factconsolidation_sh_6k"]
    assert corpora[0].doc("3").timestamp == "2020-01-04T00:00:00Z"
    # without a heuristic file no single-hop question has gold
    assert report.skip_reasons() == {"no heuristic gold entry": 6}
    with pytest.raises(ValueError):
        parse_factconsolidation(rows, None, step_seconds=0)
    # the heuristic file is found next to the data file by default
    corpora, report = load_factconsolidation(SAMPLE)
    assert report.skip_reasons() == {"no heuristic gold entry": 6}


def test_real_file() -> None:
    data, heuristic = _real()
    corpora, report = load_factconsolidation(data, heuristic)
    by = {c.scope_id: c for c in corpora}
    sizes = {"6k": 455, "32k": 2310, "64k": 4580, "262k": 18332}
    for size, n in sizes.items():
        for hop in ("sh", "mh"):
            c = by[f"factconsolidation_{hop}_{size}"]
            assert len(c.docs) == n
            assert c.doc_ids == tuple(str(i) for i in range(n))
        assert len(by[f"factconsolidation_mh_{size}"].questions) == 100
    assert report.counts["facts_unparsed"] == 0
    assert report.n_questions_total == 800
    # heuristic gold unique for 100/99/99/98
    assert [len(by[f"factconsolidation_sh_{s}"].questions) for s in sizes] == [100, 99, 99, 98]
    assert report.n_questions_loaded == 796
    # the slot rule recovers the answer as the object of every gold fact
    for size in sizes:
        for q in by[f"factconsolidation_sh_{size}"].questions:
            assert q.meta["gold_object"] == q.meta["answers"][0], q.qid
    stale = {s: report.counts[f"questions_with_stale_factconsolidation_sh_{s}"] for s in sizes}
    assert stale == {"6k": 74, "32k": 62, "64k": 64, "262k": 74}
    newer = {s: report.counts[f"questions_gold_not_newest_factconsolidation_sh_{s}"] for s in sizes}
    assert newer == {"6k": 0, "32k": 2, "64k": 2, "262k": 2}
    for size in sizes:
        for q in by[f"factconsolidation_sh_{size}"].questions:
            gold = int(q.gold_ids[0])
            assert all(int(s) < gold for s in q.meta["stale_ids"])
            assert all(int(s) > gold for s in q.meta["newer_conflict_ids"])
