"""BEAM (mohammadtavakoli78/BEAM), the 100K split -> neutral records.

Layout: ``<root>/<n>/chat.json`` and
``<root>/<n>/probing_questions/probing_questions.json`` for conversations
``n = 1..20``. One `Corpus` per conversation (``scope_id`` = ``n``).

``chat.json`` is a list of batches ``{batch_number, time_anchor, turns}``;
``turns`` is a list of turn groups (a user message and the assistant's reply,
sometimes with follow-ups), each a list of messages ``{role, id, content,
time_anchor?, index?, question_type?}``. One `Doc` per message:

- ``doc_id`` = ``str(id)`` (ids are the ones ``source_chat_ids`` use),
  ``text`` = ``"role: content"``, ``speaker`` = role;
- ``session_id`` = ``"batch-<batch_number>"`` (a batch is one time-anchored
  period of the conversation); ``meta["turn_group"]`` = ``"<batch>.<group>"``;
- ``timestamp``: in the data the batch-level ``time_anchor`` is always null and
  the first message of each batch carries ``time_anchor`` like
  ``"March-15-2024"``. The anchor applies to the messages that follow it (until
  the next anchor): timestamp = anchor date at 00:00:00Z plus the message's
  offset from the anchored message in seconds, so message order is kept.
  Messages before any anchor have no timestamp. The raw anchor is in
  ``meta["time_anchor"]`` of the message that carries it, and every anchored
  message has ``meta["anchor_date"]``.

Questions (``qid`` = ``"<n>:<category>:<index>"``) come from the 10
categories of ``probing_questions.json``. Gold = the ``source_chat_ids``
flattened (shapes seen: a list of ints; a list mixing ints and nested lists in
event_ordering; ``{first_statement, second_statement}`` in
contradiction_resolution, ``{original_info, updated_info}`` in
knowledge_update, ``{first_event, second_event}`` in temporal_reasoning),
deduplicated in order. ``meta["source_chat_ids"]`` keeps the raw structure and,
for the dict shapes, ``meta["gold_groups"]`` maps each key to its flattened id
tuple (for `metrics.both_in_top_k` / `metrics.ranked_before`).
``meta["answer"]`` is whichever of ``answer``, ``ideal_answer``,
``ideal_response``, ``ideal_summary``, ``expected_compliance`` the category
uses. Abstention questions have no ``source_chat_ids`` and a few others have an
empty list: both are skipped with a reason. Ids naming no message are recorded
as unresolved and excluded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
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
    "ANSWER_KEYS",
    "CATEGORIES",
    "flatten_ids",
    "load_beam",
    "load_beam_conversation",
    "parse_beam_conversation",
    "parse_time_anchor",
]

BENCHMARK = "beam-100k"

CATEGORIES: tuple[str, ...] = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)

ANSWER_KEYS: tuple[str, ...] = (
    "answer",
    "ideal_answer",
    "ideal_response",
    "ideal_summary",
    "expected_compliance",
)

_ANCHOR_FORMATS = ("%B-%d-%Y", "%b-%d-%Y", "%B %d, %Y", "%b %d, %Y", "%Y-%m-%d")


def parse_time_anchor(value: str) -> str | None:
    """``"March-15-2024"`` -> ``"2024-03-15"``; None when unparseable."""
    if not isinstance(value, str):
        return None
    text = re.sub(r"\s+", " ", value.strip())
    for fmt in _ANCHOR_FORMATS:
        try:
            return datetime.strptime(text, fmt).strftime("%Y-%m-%d")
        except ValueError:
            continue
    return None


def flatten_ids(value: Any) -> Iterator[str]:
    """Every id in a ``source_chat_ids`` value (ints, lists, dicts, nested), in order."""
    if value is None:
        return
    if isinstance(value, Mapping):
        for v in value.values():
            yield from flatten_ids(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from flatten_ids(v)
    elif isinstance(value, bool):
        raise TypeError(f"unexpected id {value!r}")
    else:
        yield str(value).strip()


def _dedupe(ids: Iterator[str] | list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for i in ids:
        if i and i not in out:
            out.append(i)
    return tuple(out)


def parse_beam_conversation(
    conv_id: str,
    chat: Sequence[Mapping[str, Any]],
    probing: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    counts: dict[str, int] | None = None,
    skipped: list[SkippedQuestion] | None = None,
    malformed: list[MalformedId] | None = None,
    notes: list[str] | None = None,
) -> Corpus:
    """One conversation's parsed ``chat.json`` and ``probing_questions.json`` -> a corpus.

    The optional accumulators collect report data across conversations.
    """
    counts = {} if counts is None else counts
    skipped = [] if skipped is None else skipped
    malformed = [] if malformed is None else malformed
    notes = [] if notes is None else notes

    def bump(key: str, n: int = 1) -> None:
        counts[key] = counts.get(key, 0) + n

    docs: list[Doc] = []
    anchor: str | None = None
    offset = 0
    for batch in chat:
        bno = str(batch.get("batch_number"))
        bump("batches")
        batch_anchor = batch.get("time_anchor")
        if batch_anchor is not None:
            parsed = parse_time_anchor(str(batch_anchor))
            if parsed is None:
                bump("unparsed_time_anchors")
                notes.append(f"{conv_id} batch {bno}: unparseable time_anchor {batch_anchor!r}")
            else:
                anchor, offset = parsed, 0
        for gi, group in enumerate(batch.get("turns") or []):
            bump("turn_groups")
            for msg in group:
                bump("messages")
                meta: dict[str, str] = {"batch": bno, "turn_group": f"{bno}.{gi}"}
                raw_anchor = msg.get("time_anchor")
                if raw_anchor is not None:
                    meta["time_anchor"] = str(raw_anchor)
                    parsed = parse_time_anchor(str(raw_anchor))
                    if parsed is None:
                        bump("unparsed_time_anchors")
                        notes.append(
                            f"{conv_id} message {msg.get('id')}: unparseable time_anchor "
                            f"{raw_anchor!r}"
                        )
                    else:
                        anchor, offset = parsed, 0
                for key in ("index", "question_type"):
                    if msg.get(key) is not None:
                        meta[key] = str(msg[key])
                ts = None
                if anchor is not None:
                    meta["anchor_date"] = anchor
                    day = datetime.strptime(anchor, "%Y-%m-%d").replace(tzinfo=UTC)
                    ts = format_instant(day + timedelta(seconds=offset))
                    offset += 1
                else:
                    bump("messages_without_time")
                role = str(msg.get("role", ""))
                docs.append(
                    Doc(
                        doc_id=str(msg["id"]).strip(),
                        text=f"{role}: {msg.get('content', '')}",
                        timestamp=ts,
                        speaker=role or None,
                        session_id=f"batch-{bno}",
                        meta=meta,
                    )
                )
    known = {d.doc_id for d in docs}
    questions: list[Question] = []
    for category, items in probing.items():
        if category not in CATEGORIES:
            notes.append(f"{conv_id}: unknown question category {category!r}")
        for qi, item in enumerate(items):
            qid = f"{conv_id}:{category}:{qi}"
            bump("questions")
            raw = item.get("source_chat_ids")
            if raw is None:
                skipped.append(SkippedQuestion(qid, f"no source_chat_ids ({category})"))
                continue
            gold_all = _dedupe(flatten_ids(raw))
            gold: list[str] = []
            for g in gold_all:
                if g in known:
                    gold.append(g)
                else:
                    malformed.append(MalformedId(qid, json.dumps(raw), "unresolved", g))
            if not gold:
                reason = "empty source_chat_ids" if not gold_all else "no source id resolves"
                skipped.append(SkippedQuestion(qid, reason))
                continue
            qmeta: dict[str, Any] = {"source_chat_ids": raw}
            if isinstance(raw, Mapping):
                groups = {
                    str(k): tuple(i for i in _dedupe(flatten_ids(v)) if i in known)
                    for k, v in raw.items()
                }
                qmeta["gold_groups"] = groups
                if any(not v for v in groups.values()):
                    bump("questions_with_empty_gold_group")
                    notes.append(f"{qid}: empty gold group in {json.dumps(raw)}")
                shared = set.intersection(*(set(v) for v in groups.values())) if groups else set()
                if shared:
                    bump("questions_with_shared_gold_group_ids")
            for key in ANSWER_KEYS:
                if key in item:
                    qmeta["answer"] = item[key]
                    qmeta["answer_key"] = key
                    break
            for key in ("difficulty", "rubric"):
                if key in item:
                    qmeta[key] = item[key]
            questions.append(
                Question(
                    qid=qid,
                    text=str(item.get("question", "")),
                    category=category,
                    gold_ids=tuple(gold),
                    meta=qmeta,
                )
            )
    return Corpus(name=BENCHMARK, scope_id=conv_id, docs=tuple(docs), questions=tuple(questions))


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def load_beam_conversation(conv_dir: str | Path) -> tuple[Corpus, LoadReport]:
    """Load one conversation directory (``chat.json`` + ``probing_questions/``)."""
    corpora, report = load_beam(Path(conv_dir).parent, conversations=[Path(conv_dir).name])
    return corpora[0], report


def load_beam(
    root: str | Path, *, conversations: list[str] | None = None
) -> tuple[list[Corpus], LoadReport]:
    """Load every numbered conversation under ``root`` (e.g. ``.../beam/100K``).

    ``conversations`` restricts to those directory names; corpora come in
    numeric order.
    """
    root = Path(root)
    names = conversations
    if names is None:
        names = sorted((p.name for p in root.iterdir() if p.is_dir() and p.name.isdigit()), key=int)
    counts: dict[str, int] = {"conversations": 0}
    skipped: list[SkippedQuestion] = []
    malformed: list[MalformedId] = []
    notes: list[str] = []
    corpora: list[Corpus] = []
    for name in names:
        conv_dir = root / name
        chat = _read_json(conv_dir / "chat.json")
        probing = _read_json(conv_dir / "probing_questions" / "probing_questions.json")
        counts["conversations"] += 1
        corpora.append(
            parse_beam_conversation(
                name,
                chat,
                probing,
                counts=counts,
                skipped=skipped,
                malformed=malformed,
                notes=notes,
            )
        )
    return corpora, build_report(
        BENCHMARK, corpora, skipped=skipped, malformed=malformed, counts=counts, notes=notes
    )
