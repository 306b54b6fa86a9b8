"""Neutral records shared by every benchmark loader.

A loader turns one benchmark file into a list of `Corpus` (one per
conversation, row or haystack: its *scope*) plus a `LoadReport` that says what
was counted, repaired, excluded or skipped, so nothing is dropped silently.

Invariants (checked on construction):

- timestamps use the stored datetime grammar of `memhtml.contracts.dates`:
  a canonical UTC instant ``YYYY-MM-DDThh:mm:ssZ`` or a calendar date
  ``YYYY-MM-DD`` (or None when unknown);
- doc ids are unique within a corpus;
- every question's gold ids name docs of its own corpus (questions are asked
  only against their own scope). A question with *empty* gold has no
  retrieval gold at all (FactConsolidation multi-hop): metrics that need gold
  refuse it, answer-based scoring can still use it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from memhtml.contracts.dates import is_strict_datetime

__all__ = [
    "Corpus",
    "Doc",
    "LoadReport",
    "MalformedId",
    "Question",
    "SkippedQuestion",
]


def _frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


class _Picklable:
    """Pickles a frozen record whose mapping fields are read-only proxies.

    A ``mappingproxy`` cannot be pickled, and the harnesses ship questions to
    other processes (``--ray``): the proxy travels as a plain dict and is
    frozen again on arrival.
    """

    _frozen_fields: ClassVar[tuple[str, ...]] = ()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._frozen_fields:
            state[name] = dict(state[name])
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in self._frozen_fields:
            object.__setattr__(self, name, _frozen_mapping(state[name]))


@dataclass(frozen=True)
class Doc(_Picklable):
    """One retrievable unit: a dialog turn, a fact, a chat message.

    ``timestamp`` is a canonical instant or a date, None when unknown.
    ``meta`` carries benchmark-specific string fields (raw dates, captions...).
    """

    doc_id: str
    text: str
    timestamp: str | None
    speaker: str | None = None
    session_id: str | None = None
    meta: Mapping[str, str] = field(default_factory=dict)
    _frozen_fields = ("meta",)

    def __post_init__(self) -> None:
        if not self.doc_id:
            raise ValueError("Doc.doc_id must be non-empty")
        if self.timestamp is not None and not is_strict_datetime(self.timestamp):
            raise ValueError(
                f"Doc {self.doc_id!r}: timestamp {self.timestamp!r} is not "
                "YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ"
            )
        for key, value in self.meta.items():
            if not isinstance(value, str):
                raise TypeError(f"Doc {self.doc_id!r}: meta[{key!r}] must be a str")
        object.__setattr__(self, "meta", _frozen_mapping(self.meta))


@dataclass(frozen=True)
class Question(_Picklable):
    """One benchmark question, asked against its own corpus only.

    ``gold_ids`` are doc ids (deduplicated, in the benchmark's order); empty
    means the question has no retrieval gold. ``meta`` keeps the answer and any
    structure that specialised metrics need (e.g. BEAM's ``gold_groups``).
    """

    qid: str
    text: str
    category: str
    gold_ids: tuple[str, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    _frozen_fields = ("meta",)

    def __post_init__(self) -> None:
        if not self.qid:
            raise ValueError("Question.qid must be non-empty")
        gold = tuple(self.gold_ids)
        if len(set(gold)) != len(gold):
            raise ValueError(f"Question {self.qid!r}: duplicate gold ids {gold!r}")
        object.__setattr__(self, "gold_ids", gold)
        object.__setattr__(self, "meta", _frozen_mapping(self.meta))


@dataclass(frozen=True)
class Corpus:
    """The docs of one scope (conversation, row, haystack) and its questions."""

    name: str
    scope_id: str
    docs: tuple[Doc, ...]
    questions: tuple[Question, ...]

    def __post_init__(self) -> None:
        docs = tuple(self.docs)
        questions = tuple(self.questions)
        ids = [d.doc_id for d in docs]
        known = set(ids)
        if len(known) != len(ids):
            dups = sorted(i for i, n in Counter(ids).items() if n > 1)
            raise ValueError(f"Corpus {self.scope_id!r}: duplicate doc ids {dups[:5]!r}")
        qids = [q.qid for q in questions]
        if len(set(qids)) != len(qids):
            raise ValueError(f"Corpus {self.scope_id!r}: duplicate question ids")
        for q in questions:
            missing = [g for g in q.gold_ids if g not in known]
            if missing:
                raise ValueError(
                    f"Corpus {self.scope_id!r}: question {q.qid!r} has gold ids "
                    f"outside the corpus: {missing[:5]!r}"
                )
        object.__setattr__(self, "docs", docs)
        object.__setattr__(self, "questions", questions)

    @property
    def doc_ids(self) -> tuple[str, ...]:
        return tuple(d.doc_id for d in self.docs)

    def doc(self, doc_id: str) -> Doc:
        """The doc with this id (linear scan; build a dict for hot loops)."""
        for d in self.docs:
            if d.doc_id == doc_id:
                return d
        raise KeyError(doc_id)


@dataclass(frozen=True)
class SkippedQuestion:
    """A question the loader did not emit, and why."""

    qid: str
    reason: str


@dataclass(frozen=True)
class MalformedId:
    """A gold/evidence reference that was repaired or could not be used.

    ``reason`` is one of: ``composite`` (several ids in one string, split and
    kept), ``malformed`` (not an id of the benchmark's shape, excluded),
    ``unresolved`` (well-formed but names no doc of the scope, excluded).
    """

    qid: str
    raw: str
    reason: str
    token: str = ""


@dataclass(frozen=True)
class LoadReport(_Picklable):
    """What a loader read, emitted, repaired and skipped.

    ``counts`` holds benchmark-specific totals (sessions, turns, facts...);
    ``notes`` holds free-text observations about data quirks.
    """

    benchmark: str
    n_corpora: int
    n_docs: int
    n_questions_total: int
    n_questions_loaded: int
    skipped: tuple[SkippedQuestion, ...] = ()
    malformed_ids: tuple[MalformedId, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)
    _frozen_fields = ("counts",)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "skipped", tuple(self.skipped))
        object.__setattr__(self, "malformed_ids", tuple(self.malformed_ids))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "counts", _frozen_mapping(self.counts))
        if self.n_questions_loaded + len(self.skipped) != self.n_questions_total:
            raise ValueError(
                f"{self.benchmark}: loaded {self.n_questions_loaded} + skipped "
                f"{len(self.skipped)} != total {self.n_questions_total}"
            )

    def skip_reasons(self) -> dict[str, int]:
        """How many questions were skipped for each reason."""
        out: dict[str, int] = {}
        for s in self.skipped:
            out[s.reason] = out.get(s.reason, 0) + 1
        return out

    def malformed_reasons(self) -> dict[str, int]:
        """How many malformed references there are for each reason."""
        out: dict[str, int] = {}
        for m in self.malformed_ids:
            out[m.reason] = out.get(m.reason, 0) + 1
        return out


def build_report(
    benchmark: str,
    corpora: Iterable[Corpus],
    *,
    skipped: Iterable[SkippedQuestion] = (),
    malformed: Iterable[MalformedId] = (),
    counts: Mapping[str, int] | None = None,
    notes: Iterable[str] = (),
) -> LoadReport:
    """A `LoadReport` whose doc/question totals are computed from the corpora."""
    corpora = list(corpora)
    skipped_t = tuple(skipped)
    n_loaded = sum(len(c.questions) for c in corpora)
    return LoadReport(
        benchmark=benchmark,
        n_corpora=len(corpora),
        n_docs=sum(len(c.docs) for c in corpora),
        n_questions_total=n_loaded + len(skipped_t),
        n_questions_loaded=n_loaded,
        skipped=skipped_t,
        malformed_ids=tuple(malformed),
        counts=dict(counts or {}),
        notes=tuple(notes),
    )
