"""The merge gate over the branch: does the curated corpus still tell twins apart?

The fixture gate (`memhtml.eval.gate.run_gate`, fake mode) catches a code
regression; it never sees the branch. This gate does: it takes main's active
memories that have a *twin* (the same claim with one fact-bearing token
changed: a negation, a number or identifier, an opposed qualifier, or two
words swapped, i.e. a role flip; memhtml.eval.flips makes such pairs) and
requires on the branch that

1. neither twin was merged into the other: following archive moves and
   supersedence from each (memhtml.index.identity.follow) must not lead both to
   the same memory, and neither may vanish (a twin archived by something else,
   retention say, is fine);
2. searching a twin's claim on the branch index ranks it (or what it resolves
   to) above its twin, wherever the branch touched one of the two. A pair that
   already fails on main is reported (`preexisting`) but is not a regression.

Twins are found without comparing every pair: a claim's *frame* is its words
without the fact-bearing ones, and only claims with the same frame (as a
multiset) are compared.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from memhtml.eval.flips import QUALIFIER_PAIRS

if TYPE_CHECKING:
    import sqlite3

    from memhtml.ops.corpus import Corpus

NEGATIONS: Final = frozenset(
    {"not", "no", "never", "none", "nor", "without", "cannot", "neither", "always"}
)
QUALIFIERS: Final = frozenset(w for pair in QUALIFIER_PAIRS for w in pair)
# Auxiliaries a prohibition adds ("Do not drain"): not facts, and not part of the frame.
AUXILIARIES: Final = frozenset({"do", "does", "did"})
MIN_FRAME: Final = 2
MAX_GROUP: Final = 200  # claims compared pairwise in one bucket (same frame and facts)
RANK_LIMIT: Final = 20  # search depth for the ranking check
MAX_RANKED: Final = 400  # twin claims searched per merge (the touched ones first)
_WORD: Final = re.compile(r"\w+", re.UNICODE)
_CONTRACTIONS: Final = (
    (re.compile(r"\bcan't\b|\bcannot\b", re.I), "can not"),
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"n't\b", re.I), " not"),
)


def tokens(text: str) -> list[str]:
    """Lowercased words, contractions spelled out ("isn't" -> "is not")."""
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return [w.lower() for w in _WORD.findall(text)]


def is_fact_token(token: str) -> bool:
    """A token whose change changes the fact: a digit-bearing one, a negation, a qualifier."""
    return any(c.isdigit() for c in token) or token in NEGATIONS or token in QUALIFIERS


def frame(toks: Sequence[str]) -> tuple[str, ...]:
    """The claim without its fact-bearing tokens (and auxiliaries), in order."""
    return tuple(t for t in toks if not is_fact_token(t) and t not in AUXILIARIES)


def _facts(toks: Sequence[str]) -> list[str]:
    return sorted(t for t in toks if is_fact_token(t))


def twin_kind(a: Sequence[str], b: Sequence[str]) -> str | None:
    """How two claims are twins (negation, number, qualifier, role), or None when they are not.

    Same frame and one fact-bearing token changed, added or dropped: the fact
    differs. Same words with exactly two swapped: a role flip ("A reports to B"
    / "B reports to A"). Two claims that differ in more than one fact-bearing
    token are about different things, not twins.
    """
    if list(a) == list(b):
        return None
    if frame(a) == frame(b):
        fa, fb = Counter(_facts(a)), Counter(_facts(b))
        gone, new = fa - fb, fb - fa
        if (gone or new) and sum(gone.values()) <= 1 and sum(new.values()) <= 1:
            diff = set(gone) | set(new)
            if diff & NEGATIONS:
                return "negation"
            if any(any(c.isdigit() for c in t) for t in diff):
                return "number"
            return "qualifier"
    if len(a) == len(b):
        apart = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(apart) == 2 and a[apart[0]] == b[apart[1]] and a[apart[1]] == b[apart[0]]:
            return "role"
    return None


@dataclass(frozen=True)
class Twin:
    """Two memories whose claims differ in one fact."""

    a: str
    b: str
    kind: str
    claim_a: str
    claim_b: str


def find_twins(members: Iterable[tuple[str, str]]) -> list[Twin]:
    """Twin pairs among (path, claim), compared only where they can be twins.

    Claims are grouped by frame (as a multiset); within a group, by their
    fact-bearing tokens with at most one left out, so two claims meet only
    when one token change (or none: a role flip) can turn one into the other.
    """
    groups: dict[tuple[str, ...], list[tuple[str, str, list[str]]]] = {}
    for path, claim in members:
        toks = tokens(claim)
        key = tuple(sorted(frame(toks)))
        if len(key) >= MIN_FRAME:
            groups.setdefault(key, []).append((path, claim, toks))
    twins: list[Twin] = []
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort()
        buckets: dict[tuple[str, ...], list[int]] = {}
        for i, (_, _, toks) in enumerate(group):
            facts = _facts(toks)
            keys = {tuple(facts)} | {tuple(facts[:j] + facts[j + 1 :]) for j in range(len(facts))}
            for k in keys:
                buckets.setdefault(k, []).append(i)
        pairs = sorted(
            {
                (x, y)
                for ids in buckets.values()
                for n, x in enumerate(ids[:MAX_GROUP])
                for y in ids[n + 1 : MAX_GROUP]
            }
        )
        for x, y in pairs:
            (pa, ca, ta), (pb, cb, tb) = group[x], group[y]
            kind = twin_kind(ta, tb)
            if kind is not None:
                twins.append(Twin(pa, pb, kind, ca, cb))
    return twins


@dataclass
class CorpusGateReport:
    """The verdict over the branch, with the evidence."""

    twins: int = 0
    members: int = 0
    checked_merges: int = 0
    ranked: int = 0
    rank_skipped: int = 0
    regressions: list[dict[str, Any]] = field(default_factory=list)
    preexisting: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No twin was merged, lost, or out-ranked by its twin where main ranked it first."""
        return not self.regressions

    def to_data(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "passed": self.passed,
            "twins": self.twins,
            "members": self.members,
            "checked_merges": self.checked_merges,
            "ranked": self.ranked,
            "rank_skipped": self.rank_skipped,
            "regressions": self.regressions[:50],
            "regression_count": len(self.regressions),
            "preexisting": self.preexisting[:20],
            "preexisting_count": len(self.preexisting),
        }


def _resolve(
    conn: sqlite3.Connection, path: str, moved: Mapping[str, str]
) -> tuple[str | None, bool, bool]:
    """(where the path leads, live there, known at all) on an index; `moved` maps the
    branch's plain moves (a re-filed memory keeps its identity under a new path)."""
    from memhtml.index.identity import follow

    chain = follow(conn, path)
    if not chain.known and path in moved:
        chain = follow(conn, moved[path])
    return chain.resolved, chain.live, chain.known


def _ranks(corpus: Corpus, query: str, wanted: Sequence[str]) -> list[int | None]:
    """The 1-based ranks of `wanted` paths in the search for `query`."""
    from memhtml.ops.query import search

    hits = search(corpus, query, limit=RANK_LIMIT).hits
    order = {h.path: i for i, h in enumerate(hits, start=1)}
    return [order.get(p) for p in wanted]


def _outranks(corpus: Corpus, query: str, own: str, other: str) -> bool:
    mine, theirs = _ranks(corpus, query, [own, other])
    return mine is not None and (theirs is None or mine < theirs)


def corpus_gate(
    main: Corpus,
    branch: Corpus,
    base_paths: set[str],
    touched: set[str],
    moved: Mapping[str, str] | None = None,
) -> CorpusGateReport:
    """Check the branch's index (`branch`) against main's twins (those present at the base)."""
    report = CorpusGateReport()
    rows = main.conn.execute(
        "SELECT path, gist FROM files WHERE archived = 0 AND memory_type <> 'task' AND gist <> ''"
        " ORDER BY path"
    ).fetchall()
    members = [(str(p), str(g)) for p, g in rows if p in base_paths]
    twins = find_twins(members)
    report.twins = len(twins)
    involved = sorted({p for t in twins for p in (t.a, t.b)})
    report.members = len(involved)
    where = {p: _resolve(branch.conn, p, moved or {}) for p in involved}
    ranked_pairs: list[Twin] = []
    for twin in twins:
        report.checked_merges += 1
        (ra, live_a, known_a), (rb, live_b, known_b) = where[twin.a], where[twin.b]
        entry = {"a": twin.a, "b": twin.b, "kind": twin.kind}
        if not known_a or not known_b:
            gone = twin.a if not known_a else twin.b
            report.regressions.append({**entry, "why": f"{gone} vanished from the branch"})
            continue
        if ra is not None and ra == rb:
            report.regressions.append({**entry, "why": f"both twins now lead to {ra} (merged)"})
            continue
        changed = twin.a in touched or twin.b in touched or ra != twin.a or rb != twin.b
        if live_a and live_b and changed:
            ranked_pairs.append(twin)
    for twin in ranked_pairs:
        ra, rb = where[twin.a][0], where[twin.b][0]
        assert ra is not None and rb is not None
        for own, other, claim, own_main, other_main in (
            (ra, rb, twin.claim_a, twin.a, twin.b),
            (rb, ra, twin.claim_b, twin.b, twin.a),
        ):
            if report.ranked >= MAX_RANKED:
                report.rank_skipped += 1
                continue
            report.ranked += 1
            if _outranks(branch, claim, own, other):
                continue
            entry = {"a": own_main, "b": other_main, "kind": twin.kind, "query": claim}
            if _outranks(main, claim, own_main, other_main):
                report.regressions.append(
                    {**entry, "why": f"on the branch {own} no longer ranks above {other}"}
                )
            else:
                report.preexisting.append(entry)
    return report
