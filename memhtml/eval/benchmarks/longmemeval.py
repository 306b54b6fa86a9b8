"""LongMemEval (S / M / oracle) -> neutral records.

The file is a list of ``{question_id, question_type, question, answer,
question_date, haystack_session_ids, haystack_dates, haystack_sessions:
[[{role, content, has_answer?}]], answer_session_ids}``. One `Corpus` per
question (``scope_id`` = ``question_id``): its haystack, nothing else.

Docs are turns:

- ``doc_id`` = ``f"{session_id}#{turn_index}"`` with ``turn_index`` 1-based,
  the numbering of LongMemEval's own turn ids (``f"{sess_id}_{i_turn+1}"`` in
  ``run_retrieval.py``; ``#`` instead of ``_`` because session ids contain
  ``_``); `metrics.session_of_turn_id` recovers the session;
- ``text`` = ``"role: content"``, ``speaker`` = role, ``session_id`` set;
- ``timestamp`` = the session's ``haystack_dates`` entry (``"2023/05/20 (Sat)
  02:21"``, taken as UTC) plus the turn's 0-based position in seconds;
- ``meta``: ``role``, ``has_answer`` (``"true"``/``"false"`` when present),
  ``session_date`` (raw).

By default both roles are loaded (memhtml ingests whole conversations);
``roles=("user",)`` reproduces LongMemEval's retrieval corpus, which indexes
user turns only. Gold: ``gold_ids`` = the loaded turns with ``has_answer``
true; ``meta["gold_session_ids"]`` = ``answer_session_ids`` found in the
haystack (for session-level metrics over `metrics.sessions_from_turns`).
Skipped with a reason: abstention questions (``question_id`` ending in
``_abs``; LongMemEval's retrieval evaluation leaves them out) and questions
with no ``has_answer`` turn among the loaded roles.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memhtml.contracts.dates import format_instant
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
    "is_abstention",
    "load_longmemeval",
    "parse_lme_date",
    "parse_longmemeval",
    "turn_id",
]

BENCHMARK = "longmemeval"

_LME_DATE = re.compile(
    r"^\s*(\d{4})[/-](\d{1,2})[/-](\d{1,2})"
    r"(?:\s*\([A-Za-z]{3,9}\))?"
    r"(?:\s*,?\s*(\d{1,2}):(\d{2})(?::(\d{2}))?)?\s*$"
)


def parse_lme_date(value: str) -> datetime | None:
    """``"2023/05/20 (Sat) 02:21"`` -> an aware UTC datetime; None if unparseable.

    A date without a time is its midnight.
    """
    if not isinstance(value, str):
        return None
    m = _LME_DATE.match(value)
    if not m:
        return None
    try:
        return datetime(
            int(m[1]),
            int(m[2]),
            int(m[3]),
            int(m[4] or 0),
            int(m[5] or 0),
            int(m[6] or 0),
            tzinfo=UTC,
        )
    except ValueError:
        return None


def turn_id(session_id: str, turn_index: int) -> str:
    """The doc id of a turn (``turn_index`` 1-based)."""
    return f"{session_id}#{turn_index}"


def is_abstention(question_id: str) -> bool:
    """LongMemEval marks abstention questions with an ``_abs`` id suffix."""
    return str(question_id).endswith("_abs")


def _entry(
    entry: Mapping[str, Any],
    roles: frozenset[str],
    *,
    counts: dict[str, int],
    skipped: list[SkippedQuestion],
    malformed: list[MalformedId],
    notes: list[str],
) -> Corpus:
    qid = str(entry["question_id"])
    session_ids = [str(s) for s in entry.get("haystack_session_ids") or []]
    dates = list(entry.get("haystack_dates") or [])
    sessions = list(entry.get("haystack_sessions") or [])
    if len(session_ids) != len(sessions):
        raise ValueError(
            f"{qid}: {len(session_ids)} haystack_session_ids for {len(sessions)} sessions"
        )
    if dates and len(dates) != len(sessions):
        notes.append(f"{qid}: {len(dates)} haystack_dates for {len(sessions)} sessions")
    docs: list[Doc] = []
    used: dict[str, int] = {}
    gold_turns: list[str] = []
    gold_turn_sessions: set[str] = set()
    for si, (raw_sid, turns) in enumerate(zip(session_ids, sessions, strict=True)):
        counts["sessions"] += 1
        sid = raw_sid
        if sid in used:
            used[sid] += 1
            sid = f"{raw_sid}~{used[raw_sid]}"
            notes.append(f"{qid}: repeated session id {raw_sid!r} loaded as {sid!r}")
        else:
            used[sid] = 1
        raw_date = dates[si] if si < len(dates) else None
        start = parse_lme_date(raw_date) if isinstance(raw_date, str) else None
        if start is None:
            counts["sessions_without_time"] += 1
        for ti, turn in enumerate(turns, start=1):
            counts["turns"] += 1
            role = str(turn.get("role", ""))
            if role not in roles:
                continue
            meta: dict[str, str] = {"role": role}
            if isinstance(raw_date, str):
                meta["session_date"] = raw_date
            has_answer = turn.get("has_answer")
            if has_answer is not None:
                meta["has_answer"] = "true" if has_answer else "false"
            doc_id = turn_id(sid, ti)
            if has_answer:
                gold_turns.append(doc_id)
                gold_turn_sessions.add(sid)
            docs.append(
                Doc(
                    doc_id=doc_id,
                    text=f"{role}: {turn.get('content', '')}",
                    timestamp=None
                    if start is None
                    else format_instant(start + timedelta(seconds=ti - 1)),
                    speaker=role or None,
                    session_id=sid,
                    meta=meta,
                )
            )
    if is_abstention(qid):
        skipped.append(SkippedQuestion(qid, "abstention question (_abs)"))
        return Corpus(name=BENCHMARK, scope_id=qid, docs=tuple(docs), questions=())
    loaded_sessions = {d.session_id for d in docs} | set(used)
    gold_sessions: list[str] = []
    for raw_s in entry.get("answer_session_ids") or []:
        s = str(raw_s)
        if s not in loaded_sessions:
            malformed.append(MalformedId(qid, s, "unresolved", s))
        elif s not in gold_sessions:
            gold_sessions.append(s)
    if not gold_turns:
        skipped.append(SkippedQuestion(qid, "no has_answer turn among the loaded roles"))
        return Corpus(name=BENCHMARK, scope_id=qid, docs=tuple(docs), questions=())
    if not gold_turn_sessions <= set(gold_sessions):
        counts["questions_gold_turn_outside_answer_sessions"] += 1
    raw_qdate = entry.get("question_date")
    qdate = parse_lme_date(raw_qdate) if isinstance(raw_qdate, str) else None
    answer = entry.get("answer")
    question = Question(
        qid=qid,
        text=str(entry.get("question", "")),
        category=str(entry.get("question_type", "")),
        gold_ids=tuple(gold_turns),
        meta={
            "answer": None if answer is None else str(answer),
            "question_date": None if qdate is None else format_instant(qdate),
            "question_date_raw": raw_qdate,
            "gold_session_ids": tuple(gold_sessions),
        },
    )
    return Corpus(name=BENCHMARK, scope_id=qid, docs=tuple(docs), questions=(question,))


def parse_longmemeval(
    data: Sequence[Mapping[str, Any]],
    *,
    roles: Collection[str] = ("user", "assistant"),
    keep_skipped_corpora: bool = False,
) -> tuple[list[Corpus], LoadReport]:
    """Parsed LongMemEval JSON -> one corpus per question + report.

    Corpora of skipped questions are dropped unless ``keep_skipped_corpora``.
    """
    role_set = frozenset(roles)
    if not role_set:
        raise ValueError("roles must name at least one role")
    counts = {
        "entries": 0,
        "sessions": 0,
        "sessions_without_time": 0,
        "turns": 0,
        "questions_gold_turn_outside_answer_sessions": 0,
    }
    skipped: list[SkippedQuestion] = []
    malformed: list[MalformedId] = []
    notes: list[str] = []
    corpora: list[Corpus] = []
    for entry in data:
        counts["entries"] += 1
        corpus = _entry(
            entry, role_set, counts=counts, skipped=skipped, malformed=malformed, notes=notes
        )
        if corpus.questions or keep_skipped_corpora:
            corpora.append(corpus)
    return corpora, build_report(
        BENCHMARK, corpora, skipped=skipped, malformed=malformed, counts=counts, notes=notes
    )


def load_longmemeval(
    path: str | Path,
    *,
    roles: Collection[str] = ("user", "assistant"),
    keep_skipped_corpora: bool = False,
) -> tuple[list[Corpus], LoadReport]:
    """Load ``longmemeval_{s,m,oracle}.json`` (or a file of the same format)."""
    with Path(path).open(encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of questions")
    return parse_longmemeval(data, roles=roles, keep_skipped_corpora=keep_skipped_corpora)
