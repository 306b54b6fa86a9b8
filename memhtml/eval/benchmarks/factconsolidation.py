"""MemoryAgentBench FactConsolidation (Conflict_Resolution split) -> neutral records.

The split has 8 rows ``factconsolidation_{sh,mh}_{6k,32k,64k,262k}``; a row's
``context`` is ``"Here is a list of facts:\\n0. ...\\nN. ..."`` and a larger
serial is a NEWER fact. One `Corpus` per row (``scope_id`` = the row's
``metadata.source``), one `Doc` per fact:

- ``doc_id`` = the serial as a string; ``text`` = the fact without its serial;
- ``timestamp`` = a synthetic canonical instant, ``2020-01-01T00:00:00Z`` plus
  ``serial * step_seconds`` (default one hour: 455 facts span 19 days, 18,332
  span about 2.1 years, a plausible time scale for a memory's recency signals;
  only the order is meaningful, and it is the serial order);
- ``meta``: ``serial``, and the fact's ``slot`` and ``object`` (see below) when
  the slot rule parses it.

Questions (``qid`` = the row's ``qa_pair_ids`` entry, category ``single-hop``
or ``multi-hop``, ``meta["answers"]`` = the answer list):

- single-hop: gold = the serial from ``derived_sh_gold_heuristic.json`` (a
  HEURISTIC, not official: the answer-bearing fact with the largest
  content-word overlap with the question). Questions whose heuristic gold is
  not unique (or missing, or not the fact at that serial) are skipped with a
  reason. ``meta["stale_ids"]`` lists the OLDER facts of the gold's slot with
  another object (the input of `metrics.stale_above_current`);
  ``meta["newer_conflict_ids"]`` the NEWER ones (the dataset's gold is then not
  the newest fact of its slot: recency counts against it).
- multi-hop: the chain's facts are not annotated, so questions are loaded with
  EMPTY gold; they are scored on answers only.

The slot rule (`split_fact`): a fact is ``<slot> <object>.``, the slot being
the fact with its object removed. The facts follow a closed set of relation
templates. Subject-first templates (``"S is a citizen of O."``, ``"S was
founded by O."``, ``"The headquarters of S is located in the city of O."``)
end the slot at the EARLIEST occurrence of a known relation phrase (so an
object may contain a phrase, a subject may not). Every other fact is
``"<frame> is O."`` (``"The capital of S is O."``, ``"The univeristy where S
was educated is O."``, ``"S's child is O."``): the slot ends at the LAST
``" is "`` (titles in subjects contain " is " more often than objects do).
Slot keys are case-folded with whitespace collapsed; objects compare
case-folded. On the real file the rule parses every fact, and the object of
each of the 396 heuristic gold facts equals the question's answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memhtml.contracts.dates import format_instant
from memhtml.eval.benchmarks.records import (
    Corpus,
    Doc,
    LoadReport,
    Question,
    SkippedQuestion,
    build_report,
)

__all__ = [
    "EPOCH",
    "RELATION_PHRASES",
    "conflicting_serials",
    "load_factconsolidation",
    "parse_context",
    "parse_factconsolidation",
    "slot_key",
    "split_fact",
]

BENCHMARK = "factconsolidation"
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
DEFAULT_STEP_SECONDS = 3600
HEURISTIC_FILENAME = "derived_sh_gold_heuristic.json"

# Relation phrases of the subject-first templates (MQuAKE-style), as they
# appear between subject and object. Matched case-sensitively.
RELATION_PHRASES: tuple[str, ...] = (
    " is a citizen of ",
    " is affiliated with the religion of ",
    " is associated with the sport of ",
    " is employed by ",
    " is famous for ",
    " is located in the city of ",
    " is located in the continent of ",
    " is married to ",
    " plays the position of ",
    " speaks the language of ",
    " was born in the city of ",
    " died in the city of ",
    " worked in the city of ",
    " works in the field of ",
    " was created by ",
    " was created in the country of ",
    " was developed by ",
    " was founded by ",
    " was founded in the city of ",
    " was performed by ",
    " was written in the language of ",
)

_HEADER = re.compile(r"^\s*here is a list of facts:?\s*$", re.IGNORECASE)
_FACT_LINE = re.compile(r"^\s*(\d+)\.\s+(.*\S)\s*$")
_ROW = re.compile(r"^factconsolidation_(sh|mh)_(\w+)$")


def parse_context(context: str) -> list[tuple[int, str]]:
    """``"Here is a list of facts:\\n0. A.\\n1. B."`` -> ``[(0, "A."), (1, "B.")]``.

    Blank lines and the header are ignored; a non-empty line that is not
    ``"<serial>. <fact>"`` continues the previous fact (joined by a space).
    """
    facts: list[tuple[int, str]] = []
    for line in context.splitlines():
        if not line.strip() or (not facts and _HEADER.match(line)):
            continue
        m = _FACT_LINE.match(line)
        if m:
            facts.append((int(m[1]), m[2]))
        elif facts:
            serial, text = facts[-1]
            facts[-1] = (serial, f"{text} {line.strip()}")
        else:
            raise ValueError(f"context line before any fact: {line[:80]!r}")
    return facts


def split_fact(fact: str) -> tuple[str, str] | None:
    """A fact -> (slot, object), the slot being the fact with its object removed.

    ``"The capital of Germany is Berlin."`` -> ``("The capital of Germany is",
    "Berlin")``; ``"Hines Ward plays the position of cornerback."`` ->
    ``("Hines Ward plays the position of", "cornerback")``. None when no
    template matches or the object would be empty. See the module docstring.
    """
    body = " ".join(fact.split())
    if body.endswith("."):
        body = body[:-1].rstrip()
    best: tuple[int, str] | None = None
    for phrase in RELATION_PHRASES:
        i = body.find(phrase)
        if i > 0 and (best is None or i < best[0] or (i == best[0] and len(phrase) > len(best[1]))):
            best = (i, phrase)
    if best is not None:
        cut = best[0] + len(best[1])
    else:
        i = body.rfind(" is ")
        if i <= 0:
            return None
        cut = i + len(" is ")
    slot, obj = body[:cut].strip(), body[cut:].strip()
    if not slot or not obj:
        return None
    return slot, obj


def slot_key(fact: str) -> str | None:
    """The comparable slot of a fact (case-folded, whitespace collapsed)."""
    parts = split_fact(fact)
    return None if parts is None else _key(parts[0])


def _key(slot: str) -> str:
    return " ".join(slot.casefold().split())


def _index(
    facts: Iterable[tuple[int, str]],
) -> tuple[dict[int, tuple[str, str]], dict[str, list[int]]]:
    parsed: dict[int, tuple[str, str]] = {}
    slots: dict[str, list[int]] = {}
    for serial, text in facts:
        parts = split_fact(text)
        if parts is not None:
            parsed[serial] = parts
            slots.setdefault(_key(parts[0]), []).append(serial)
    return parsed, slots


def _conflicts(
    parsed: Mapping[int, tuple[str, str]], slots: Mapping[str, list[int]], gold_serial: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    gold = parsed.get(gold_serial)
    if gold is None:
        return (), ()
    obj = gold[1].casefold()
    older: list[int] = []
    newer: list[int] = []
    for serial in sorted(slots[_key(gold[0])]):
        if serial != gold_serial and parsed[serial][1].casefold() != obj:
            (older if serial < gold_serial else newer).append(serial)
    return tuple(older), tuple(newer)


def conflicting_serials(
    facts: Mapping[int, str] | Sequence[tuple[int, str]], gold_serial: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(older, newer) serials of the gold's slot whose object differs from the gold's.

    Same-slot facts with the SAME object (restatements) are neither. Both
    tuples are sorted by serial; both are empty when the gold does not parse.
    """
    items = list(facts.items()) if isinstance(facts, Mapping) else list(facts)
    if gold_serial not in dict(items):
        raise KeyError(gold_serial)
    parsed, slots = _index(items)
    return _conflicts(parsed, slots, gold_serial)


def _heuristic_index(heuristic: Any) -> dict[str, Mapping[str, Any]]:
    items = heuristic.get("items", []) if isinstance(heuristic, Mapping) else heuristic
    return {str(it["qa_pair_id"]): it for it in items}


def _row(
    row: Mapping[str, Any],
    heur: Mapping[str, Mapping[str, Any]] | None,
    step: timedelta,
    *,
    counts: dict[str, int],
    skipped: list[SkippedQuestion],
    notes: list[str],
) -> Corpus:
    meta = row.get("metadata") or {}
    source = str(meta.get("source") or "")
    m = _ROW.match(source)
    if not m:
        raise ValueError(f"unexpected FactConsolidation row source {source!r}")
    hop, size = m[1], m[2]
    facts = parse_context(str(row["context"]))
    serials = [s for s, _ in facts]
    if serials != list(range(len(serials))):
        notes.append(f"{source}: serials are not 0..N-1 in order")
    by_serial = dict(facts)
    parsed, slots = _index(facts)
    docs: list[Doc] = []
    for serial, text in facts:
        counts["facts"] += 1
        dmeta = {"serial": str(serial)}
        parts = parsed.get(serial)
        if parts is None:
            counts["facts_unparsed"] += 1
        else:
            dmeta["slot"] = parts[0]
            dmeta["object"] = parts[1]
        docs.append(
            Doc(
                doc_id=str(serial),
                text=text,
                timestamp=format_instant(EPOCH + serial * step),
                meta=dmeta,
            )
        )
    if hop == "sh":
        counts[f"questions_with_stale_{source}"] = 0
        counts[f"questions_gold_not_newest_{source}"] = 0
    counts[f"slots_with_conflict_{source}"] = sum(
        1 for members in slots.values() if len({parsed[s][1].casefold() for s in members}) > 1
    )
    qids = list(meta.get("qa_pair_ids") or [])
    questions: list[Question] = []
    for i, (qtext, answers) in enumerate(zip(row["questions"], row["answers"], strict=True)):
        qid = str(qids[i]) if i < len(qids) else f"{source}_no{i}"
        answer_list = (
            tuple(str(a) for a in answers) if isinstance(answers, list) else (str(answers),)
        )
        qmeta: dict[str, Any] = {"answers": answer_list, "hop": hop, "size": size}
        if hop == "mh":
            questions.append(Question(qid, str(qtext), "multi-hop", (), qmeta))
            continue
        item = None if heur is None else heur.get(qid)
        if item is None:
            skipped.append(SkippedQuestion(qid, "no heuristic gold entry"))
            continue
        gold_serial = item.get("gold_serial_heuristic")
        if gold_serial is None:
            skipped.append(
                SkippedQuestion(
                    qid,
                    f"no unique heuristic gold ({item.get('n_tied_candidates')} tied candidates)",
                )
            )
            continue
        gold_serial = int(gold_serial)
        if gold_serial not in by_serial or (
            item.get("gold_fact") is not None and item["gold_fact"] != by_serial[gold_serial]
        ):
            skipped.append(SkippedQuestion(qid, "heuristic gold does not match the context"))
            continue
        older, newer = _conflicts(parsed, slots, gold_serial)
        if older:
            counts[f"questions_with_stale_{source}"] += 1
        if newer:
            counts[f"questions_gold_not_newest_{source}"] += 1
        gold_parts = parsed.get(gold_serial)
        qmeta.update(
            gold_fact=by_serial[gold_serial],
            gold_slot=None if gold_parts is None else gold_parts[0],
            gold_object=None if gold_parts is None else gold_parts[1],
            stale_ids=tuple(str(s) for s in older),
            newer_conflict_ids=tuple(str(s) for s in newer),
            gold_is_heuristic=True,
        )
        questions.append(Question(qid, str(qtext), "single-hop", (str(gold_serial),), qmeta))
    return Corpus(name=BENCHMARK, scope_id=source, docs=tuple(docs), questions=tuple(questions))


def parse_factconsolidation(
    rows: Iterable[Mapping[str, Any]],
    heuristic: Any | None,
    *,
    sources: Iterable[str] | None = None,
    step_seconds: int = DEFAULT_STEP_SECONDS,
) -> tuple[list[Corpus], LoadReport]:
    """Parsed rows (+ parsed heuristic-gold file, or None) -> corpora + report.

    ``sources`` restricts the rows (e.g. ``["factconsolidation_sh_6k"]``).
    Without a heuristic file every single-hop question is skipped with a reason.
    """
    if step_seconds < 1:
        raise ValueError("step_seconds must be >= 1 so that serial order is time order")
    wanted = None if sources is None else set(sources)
    heur = None if heuristic is None else _heuristic_index(heuristic)
    counts: dict[str, int] = {"rows": 0, "facts": 0, "facts_unparsed": 0}
    skipped: list[SkippedQuestion] = []
    notes: list[str] = []
    corpora: list[Corpus] = []
    step = timedelta(seconds=step_seconds)
    contexts: dict[str, dict[str, int]] = {}
    for row in rows:
        source = str((row.get("metadata") or {}).get("source"))
        if wanted is not None and source not in wanted:
            continue
        counts["rows"] += 1
        corpora.append(_row(row, heur, step, counts=counts, skipped=skipped, notes=notes))
        m = _ROW.match(source)
        if m:
            contexts.setdefault(m[2], {})[m[1]] = hash(row["context"])
    for size, by_hop in contexts.items():
        if len(by_hop) == 2 and by_hop["sh"] == by_hop["mh"]:
            notes.append(f"{size}: the single-hop and multi-hop rows share the same context")
    return corpora, build_report(BENCHMARK, corpora, skipped=skipped, counts=counts, notes=notes)


def load_factconsolidation(
    path: str | Path,
    heuristic_path: str | Path | None = None,
    *,
    sources: Iterable[str] | None = None,
    step_seconds: int = DEFAULT_STEP_SECONDS,
) -> tuple[list[Corpus], LoadReport]:
    """Load ``Conflict_Resolution.json``; the heuristic gold defaults to the sibling file.

    ``heuristic_path`` defaults to ``derived_sh_gold_heuristic.json`` next to
    ``path`` when it exists.
    """
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        rows = json.load(fh)
    if heuristic_path is None and (path.parent / HEURISTIC_FILENAME).exists():
        heuristic_path = path.parent / HEURISTIC_FILENAME
    heuristic = None
    if heuristic_path is not None:
        with Path(heuristic_path).open(encoding="utf-8") as fh:
            heuristic = json.load(fh)
    return parse_factconsolidation(rows, heuristic, sources=sources, step_seconds=step_seconds)
