"""LoCoMo (snap-research/LoCoMo, ``data/locomo10.json``) -> neutral records.

One `Corpus` per conversation (``scope_id`` = ``sample_id``), one `Doc` per
dialog turn:

- ``doc_id`` is the turn's ``dia_id`` (``"D3:5"``: session 3, turn 5), the id
  the evidence lists use;
- ``text`` is ``"speaker: text"``. When the turn shares an image, the BLIP
  caption is appended as ``" [shares an image: <blip_caption>]"``. The images
  themselves are not released, and 37.9% of evidence ids point to image turns
  whose content is mostly in the caption (e.g. "Here's my new mansion" + "a
  photo of a building..."), so dropping it would make those turns unfindable.
  A turn counts as image-sharing when it has a non-empty ``blip_caption``
  (316 captioned turns have no ``img_url``: the caption is still the content).
  The raw caption, image url and search query are kept in ``meta``;
- ``timestamp``: the session's ``session_N_date_time`` ("1:56 pm on 8 May,
  2023", local wall-clock time with no zone, taken as UTC) plus the turn's
  0-based position in the session in seconds. Sessions are days apart and have
  at most a few dozen turns, so this keeps turns in order within a session
  without crossing into the next one; the raw string and the plain session
  date are kept in ``meta`` (``session_date_time``, ``session_date``);
- ``session_id`` is ``"session_N"``.

Questions (``qid`` = ``f"{sample_id}:q{index}"``, index in the ``qa`` list):
category per the official evaluation code, 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial (kept: harnesses usually report
1-4). Evidence strings are split on ';' and whitespace (``"D8:6; D9:17"``);
each piece that is not of the ``D<n>:<m>`` shape (``"D"``, ``"D:11:26"``) or
names no turn of the conversation (``"D30:05"``, ``"D10:19"``) is recorded
in the report and excluded from gold. ``"D30:05"`` is NOT rewritten to
``"D30:5"``: the published baselines count it as unresolved. A question left
with no gold is skipped with a reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memhtml.contracts.dates import format_instant
from memhtml.domain.temporal import MONTHS
from memhtml.eval.benchmarks.records import (
    Corpus,
    Doc,
    LoadReport,
    MalformedId,
    Question,
    SkippedQuestion,
    build_report,
)

__all__ = [
    "CATEGORY_NAMES",
    "load_locomo",
    "parse_locomo",
    "parse_session_datetime",
    "split_evidence",
]

BENCHMARK = "locomo"

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

# "1:56 pm on 8 May, 2023"; tolerant of case, dots in "p.m.", extra spaces,
# a missing comma and "May 8, 2023" order.
_TIME = r"(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?\s*(?P<ap>[ap])\.?\s*m\.?"
_DMY = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?P<mon>[A-Za-z]+)\.?,?\s+(?P<y>\d{4})"
_MDY = r"(?P<mon2>[A-Za-z]+)\.?\s+(?P<d2>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{4})"
_SESSION_DT = re.compile(rf"^\s*{_TIME}\s*(?:on\s+|,\s*)?(?:{_DMY}|{_MDY})\s*$", re.IGNORECASE)
_DIA_ID = re.compile(r"^D\d+:\d+$")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def parse_session_datetime(value: str) -> datetime | None:
    """LoCoMo's ``session_N_date_time`` as a naive datetime; None if unparseable."""
    if not isinstance(value, str):
        return None
    m = _SESSION_DT.match(value)
    if not m:
        return None
    hour, minute = int(m["h"]), int(m["mi"] or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return None
    hour = hour % 12 + (12 if m["ap"].lower() == "p" else 0)
    mon_name = (m["mon"] or m["mon2"]).lower()
    month = MONTHS.get(mon_name)
    if month is None:
        return None
    day, year = int(m["d"] or m["d2"]), int(m["y"] or m["y2"])
    try:
        return datetime(year, month, day, hour, minute)
    except ValueError:
        return None


def split_evidence(raw: str) -> list[str]:
    """One evidence string -> its ids, split on ';' and whitespace."""
    return [t for t in re.split(r"[;\s]+", raw) if t]


def _turn_text(turn: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    speaker = str(turn.get("speaker", ""))
    text = f"{speaker}: {turn.get('text', '')}"
    meta: dict[str, str] = {}
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text += f" [shares an image: {caption.strip()}]"
        meta["blip_caption"] = caption
    urls = turn.get("img_url")
    if isinstance(urls, list) and urls:
        meta["img_url"] = str(urls[0])
    elif isinstance(urls, str) and urls:
        meta["img_url"] = urls
    if isinstance(turn.get("query"), str):
        meta["img_query"] = turn["query"]
    return text, meta


def _conversation(
    sample: Mapping[str, Any],
    counts: dict[str, int],
    skipped: list[SkippedQuestion],
    malformed: list[MalformedId],
    notes: list[str],
) -> Corpus:
    sample_id = str(sample["sample_id"])
    conv = sample["conversation"]
    session_nums = sorted(
        int(m[1])
        for key, val in conv.items()
        if (m := _SESSION_KEY.match(key)) and isinstance(val, list)
    )
    docs: list[Doc] = []
    last_start: datetime | None = None
    for n in session_nums:
        turns = conv[f"session_{n}"]
        counts["sessions"] += 1
        raw_dt = conv.get(f"session_{n}_date_time")
        start = parse_session_datetime(raw_dt) if isinstance(raw_dt, str) else None
        if start is None:
            counts["sessions_without_time"] += 1
            notes.append(f"{sample_id} session_{n}: unparseable date_time {raw_dt!r}")
        elif last_start is not None and start <= last_start:
            notes.append(f"{sample_id} session_{n}: not after the previous session ({raw_dt!r})")
        if start is not None:
            last_start = start
        for i, turn in enumerate(turns):
            counts["turns"] += 1
            text, meta = _turn_text(turn)
            if "blip_caption" in meta:
                counts["image_turns"] += 1
            meta["session"] = str(n)
            if isinstance(raw_dt, str):
                meta["session_date_time"] = raw_dt
            ts = None
            if start is not None:
                meta["session_date"] = start.strftime("%Y-%m-%d")
                ts = format_instant((start + timedelta(seconds=i)).replace(tzinfo=UTC))
            docs.append(
                Doc(
                    doc_id=str(turn["dia_id"]),
                    text=text,
                    timestamp=ts,
                    speaker=str(turn.get("speaker")) if turn.get("speaker") is not None else None,
                    session_id=f"session_{n}",
                    meta=meta,
                )
            )
    known = {d.doc_id for d in docs}
    questions: list[Question] = []
    for qi, qa in enumerate(sample.get("qa", [])):
        qid = f"{sample_id}:q{qi}"
        counts["qa"] += 1
        evidence = qa.get("evidence") or []
        if not evidence:
            counts["qa_empty_evidence"] += 1
            skipped.append(SkippedQuestion(qid, "empty evidence"))
            continue
        gold: list[str] = []
        unresolved: list[str] = []
        for raw_item in evidence:
            raw = str(raw_item)
            tokens = split_evidence(raw)
            if len(tokens) > 1:
                malformed.append(MalformedId(qid, raw, "composite", ";".join(tokens)))
            for tok in tokens:
                if not _DIA_ID.match(tok):
                    malformed.append(MalformedId(qid, raw, "malformed", tok))
                    unresolved.append(tok)
                elif tok not in known:
                    malformed.append(MalformedId(qid, raw, "unresolved", tok))
                    unresolved.append(tok)
                elif tok not in gold:
                    gold.append(tok)
        if not gold:
            skipped.append(SkippedQuestion(qid, "no evidence id resolves to a turn"))
            continue
        cat_num = int(qa["category"])
        answer = qa.get("answer", qa.get("adversarial_answer"))
        qmeta: dict[str, Any] = {
            "category_num": cat_num,
            "answer": None if answer is None else str(answer),
            "evidence_raw": tuple(str(e) for e in evidence),
            "unresolved_evidence": tuple(unresolved),
        }
        if "adversarial_answer" in qa:
            qmeta["adversarial_answer"] = str(qa["adversarial_answer"])
        questions.append(
            Question(
                qid=qid,
                text=str(qa["question"]),
                category=CATEGORY_NAMES.get(cat_num, f"category-{cat_num}"),
                gold_ids=tuple(gold),
                meta=qmeta,
            )
        )
    return Corpus(name=BENCHMARK, scope_id=sample_id, docs=tuple(docs), questions=tuple(questions))


def parse_locomo(data: Sequence[Mapping[str, Any]]) -> tuple[list[Corpus], LoadReport]:
    """Parsed ``locomo10.json`` content -> one corpus per conversation + report."""
    counts = {
        "conversations": 0,
        "sessions": 0,
        "sessions_without_time": 0,
        "turns": 0,
        "image_turns": 0,
        "qa": 0,
        "qa_empty_evidence": 0,
    }
    skipped: list[SkippedQuestion] = []
    malformed: list[MalformedId] = []
    notes: list[str] = []
    corpora: list[Corpus] = []
    for sample in data:
        counts["conversations"] += 1
        corpora.append(_conversation(sample, counts, skipped, malformed, notes))
    return corpora, build_report(
        BENCHMARK, corpora, skipped=skipped, malformed=malformed, counts=counts, notes=notes
    )


def load_locomo(path: str | Path) -> tuple[list[Corpus], LoadReport]:
    """Load ``locomo10.json`` (or a file of the same format)."""
    with Path(path).open(encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of conversations")
    return parse_locomo(data)
