"""entity-resolution: fold the spellings of one subject's `memhtml-entity` onto one.

Reads the `memhtml-entity` values of active non-task memories (head metas
only: a `<dfn>` or `<code data-lang>` entity is body text, which sleep never
rewrites) and folds, per entity type:

1. **normalization** (certain): spellings with one key -- NFKC, case-folded,
   whitespace collapsed -- become the most used spelling, cleaned;
2. **declared aliases** (certain): names a `resources/people/` record lists
   as `memhtml-alias` become the record's own `person:` name;
3. **fuzzy** (tentative): names at character similarity >= 0.85 that the
   guards allow (`memhtml.domain.entities.fuzzy_mergeable`). A fuzzy fold
   needs corroboration across two runs: this run emits a ledger mark
   ``{"kind": "entity-corroboration", "entity_type", "from_name", "to_name",
   "at"}`` (normalized keys; from = the less used name; the same pair also
   as ``alias``/``canonical``, the names the engine's ledger applies), which
   `sleep merge` applies to the state plane; the fold is written only when
   the state plane already holds that pair (either way round) first seen on
   a night before this one.

Each rewrite swaps one head line for another (`remove_meta` + `add_meta`;
the content hash never moves), and a file already carrying the canonical
spelling just loses the variant.

Where we differ from the original (SLEEP-FACTS 2.3): its canonical was the
normalized (lower-cased) form; here the most used spelling, so ``Ada
Lovelace`` keeps its capitals. Its character pass folded a 0.85-similar pair
at once; here that needs two nights. A declared alias folds onto the person
record's name rather than onto whichever spelling more files use, so
person-links keeps one record per person. Review tasks for the 0.75-0.85
band come with the model/tasks issue; the band is not counted here.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final

from memhtml.contracts.errors import MemhtmlError
from memhtml.contracts.vocab import PEOPLE_DIR
from memhtml.domain.entities import canonical_spelling, clean_name, fuzzy_pairs, name_key
from memhtml.html import add_meta, remove_meta
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase, listed, stamp

MARK_KIND: Final = "entity-corroboration"
_PAIR_COLUMNS: Final = (("alias", "canonical"), ("from_name", "to_name"))
# The night a pair was first seen: a row first seen before tonight is a previous run's.
_TIME_COLUMNS: Final = ("first_seen", "at", "created_at", "detected_at", "updated_at", "last_seen")

Key = tuple[str, str]  # (type key, name key)


@dataclass
class _Group:
    """Every spelling of one (type, name) key, and the files claiming each."""

    key: Key
    spellings: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @property
    def files(self) -> int:
        return len({p for paths in self.spellings.values() for p in paths})

    def canonical(self) -> tuple[str, str]:
        counts = {f"{t}:{n}": len(set(paths)) for (t, n), paths in self.spellings.items()}
        kind, _, name = canonical_spelling(counts).partition(":")
        return clean_name(kind), clean_name(name)


def _groups(conn: sqlite3.Connection) -> dict[Key, _Group]:
    groups: dict[Key, _Group] = {}
    for kind, name, path in conn.execute(
        "SELECT fe.entity_type, fe.entity_name, fe.path FROM file_entities fe"
        " JOIN files f ON f.path = fe.path"
        " WHERE fe.source = 'meta' AND f.archived = 0 AND f.memory_type <> 'task'"
        " ORDER BY fe.path"
    ):
        key = (name_key(kind), name_key(name))
        group = groups.setdefault(key, _Group(key))
        group.spellings.setdefault((str(kind), str(name)), []).append(str(path))
    return groups


def _alias_groups(conn: sqlite3.Connection) -> list[tuple[Key, set[str]]]:
    """Per active person record: its `person:` key and every name key it answers to."""
    names: dict[str, set[str]] = defaultdict(set)
    aliases: dict[str, set[str]] = defaultdict(set)
    for path, kind, name in conn.execute(
        "SELECT fe.path, fe.entity_type, fe.entity_name FROM file_entities fe"
        " JOIN files f ON f.path = fe.path"
        " WHERE fe.source = 'meta' AND f.archived = 0 AND f.path LIKE ? ORDER BY fe.path",
        (PEOPLE_DIR + "/%",),
    ):
        if name_key(kind) == "person":
            names[str(path)].add(name_key(name))
    for path, alias in conn.execute(
        "SELECT a.path, a.alias FROM file_aliases a JOIN files f ON f.path = a.path"
        " WHERE f.archived = 0 AND f.path LIKE ? ORDER BY a.path",
        (PEOPLE_DIR + "/%",),
    ):
        aliases[str(path)].add(name_key(alias))
    out: list[tuple[Key, set[str]]] = []
    for path in sorted(names):
        if len(names[path]) != 1:
            continue  # a record naming several people declares no one identity
        (own,) = names[path]
        answers = (aliases[path] | names[path]) - {""}
        if len(answers) > 1:
            out.append((("person", own), answers))
    return out


def _state_pairs(
    conn: sqlite3.Connection, at: str
) -> tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]]:
    """(pairs first seen before the night of `at`, pairs already recorded that night), as
    (type, from, to) keys both ways round, from the state plane.

    The table is the engine's `state.entity_corroboration` (applied from this
    phase's marks by `sleep merge`), found by name and columns (entity_type and
    alias/canonical, or from_name/to_name) so the phase does not depend on its
    migration; a missing table means nothing is corroborated yet.
    """
    earlier: set[tuple[str, str, str]] = set()
    tonight: set[tuple[str, str, str]] = set()
    try:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM state.sqlite_master WHERE type = 'table'"
                " AND name LIKE '%entit%' AND name LIKE '%corrobor%'"
            )
        ]
        for table in tables:
            columns = {str(r[1]) for r in conn.execute(f'PRAGMA state.table_info("{table}")')}
            pair = next((p for p in _PAIR_COLUMNS if set(p) <= columns), None)
            if "entity_type" not in columns or pair is None:
                continue
            first = next((c for c in _TIME_COLUMNS if c in columns), None)
            last = "last_seen" if "last_seen" in columns else first
            rows = conn.execute(
                f"SELECT entity_type, {pair[0]}, {pair[1]},"
                f' {first or "NULL"}, {last or "NULL"} FROM state."{table}"'
            )
            for kind, a, b, seen_first, seen_last in rows:
                keys = {
                    (name_key(str(kind)), name_key(str(a)), name_key(str(b))),
                    (name_key(str(kind)), name_key(str(b)), name_key(str(a))),
                }
                if seen_first is None or str(seen_first) < at:
                    earlier |= keys
                if seen_last is not None and str(seen_last) >= at:
                    tonight |= keys
    except sqlite3.OperationalError:
        return set(), set()
    return earlier, tonight


def corroborated(conn: sqlite3.Connection, at: str) -> set[tuple[str, str, str]]:
    """(type, from, to) keys the state plane holds from a night before `at`, either way round."""
    return _state_pairs(conn, at)[0]


class _Union:
    """Union-find over keys; the root is the group more files claim (then the smaller key),
    unless a side is pinned (a person record's own name always wins)."""

    def __init__(self, weight: dict[Key, int], pinned: set[Key]) -> None:
        self.parent: dict[Key, Key] = {}
        self.weight = weight
        self.pinned = pinned

    def find(self, key: Key) -> Key:
        while key in self.parent:
            key = self.parent[key]
        return key

    def union(self, a: Key, b: Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        rank = {k: (k not in self.pinned, -self.weight.get(k, 0), k) for k in (ra, rb)}
        winner, loser = sorted((ra, rb), key=lambda k: rank[k])
        self.parent[loser] = winner


Swap = tuple[tuple[str, str], tuple[str, str]]  # (spelling as written, spelling to write)


class EntityResolution(BasePhase):
    """Normalization, declared aliases, corroborated fuzzy folds."""

    name = "entity-resolution"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Decide every fold from the run index, then rewrite the entity metas in the view."""
        groups = _groups(ctx.conn)
        counts = dict.fromkeys(COUNTS, 0)
        counts["entities"] = len(groups)
        out = PhaseOutcome(counts=counts)
        weight = {k: g.files for k, g in groups.items()}
        union = _Union(weight, set())
        lines = _fold_aliases(ctx, groups, union, counts)
        lines += _fold_fuzzy(ctx, groups, union, counts, out)
        rewrites = _rewrites(groups, union, counts)
        for path in sorted(rewrites):
            if ctx.dry_run:
                counts["files_rewritten"] += 1
                continue

            def edit(text: str, swaps: list[Swap] = rewrites[path]) -> str:
                for (rt, rn), (ft, fn) in swaps:
                    text = remove_meta(text, "memhtml-entity", f"{rt}:{rn}")
                    text = add_meta(text, "memhtml-entity", f"{ft}:{fn}")
                return text

            try:
                changed = ctx.view.exists(path) and stamp(ctx, path, edit)
            except MemhtmlError:
                counts["failed"] += 1
                continue
            if changed:
                counts["files_rewritten"] += 1
                out.touched.append(Touched(path, "rewritten"))
        merged = counts["alias_merges"] + counts["fuzzy_merges"]
        out.subject = f"normalize {counts['names_normalized']} entity names, merge {merged} aliases"
        out.body = listed(lines)
        if counts["pending_corroboration"]:
            out.detail = (
                f"{counts['pending_corroboration']} fuzzy folds wait for a second night's"
                " corroboration"
            )
        return out


COUNTS: Final = (
    "entities",
    "names_normalized",
    "alias_merges",
    "alias_conflicts",
    "fuzzy_candidates",
    "pending_corroboration",
    "fuzzy_merges",
    "files_rewritten",
    "failed",
)


def _fold_aliases(
    ctx: SleepContext, groups: dict[Key, _Group], union: _Union, counts: dict[str, int]
) -> list[str]:
    """Fold each name a person record answers to onto the record's own name."""
    lines: list[str] = []
    owners: dict[str, set[Key]] = defaultdict(set)
    alias_groups = _alias_groups(ctx.conn)
    for own, answers in alias_groups:
        for answer in answers:
            owners[answer].add(own)
    union.pinned = {own for own, _ in alias_groups}
    for own, answers in alias_groups:
        for answer in sorted(answers):
            key = ("person", answer)
            if key == own or key not in groups:
                continue
            if len(owners[answer]) > 1:  # a name two records claim is nobody's alias
                counts["alias_conflicts"] += 1
                continue
            if union.find(key) != union.find(own):
                union.union(key, own)
                counts["alias_merges"] += 1
                lines.append(f"alias person:{answer} -> person:{own[1]}")
    return lines


def _fold_fuzzy(
    ctx: SleepContext,
    groups: dict[Key, _Group],
    union: _Union,
    counts: dict[str, int],
    out: PhaseOutcome,
) -> list[str]:
    """Fold the corroborated fuzzy pairs; mark the others for the next night."""
    lines: list[str] = []
    seen, recorded = _state_pairs(ctx.conn, ctx.at)
    by_type: dict[str, dict[str, Key]] = defaultdict(dict)
    for key in groups:
        root = union.find(key)
        by_type[key[0]][root[1]] = root
    for kind in sorted(by_type):
        for a, b, sim in fuzzy_pairs(by_type[kind]):
            ka, kb = by_type[kind][a], by_type[kind][b]
            if union.find(ka) == union.find(kb):
                continue
            counts["fuzzy_candidates"] += 1
            winner = min((ka, kb), key=lambda k: (-union.weight.get(k, 0), k))
            loser = kb if winner == ka else ka
            if (kind, loser[1], winner[1]) in seen:
                union.union(loser, winner)
                counts["fuzzy_merges"] += 1
                lines.append(f"fuzzy {kind}:{loser[1]} -> {kind}:{winner[1]} ({sim:.2f})")
                continue
            counts["pending_corroboration"] += 1
            # a merged run of this same night recorded it already: a mark adds nothing
            if not ctx.dry_run and (kind, loser[1], winner[1]) not in recorded:
                out.marks.append(
                    {
                        "kind": MARK_KIND,
                        "entity_type": kind,
                        "from_name": loser[1],
                        "to_name": winner[1],
                        # the same pair under the names the engine's ledger applies
                        "alias": loser[1],
                        "canonical": winner[1],
                        "at": ctx.at,
                    }
                )
    return lines


def _rewrites(
    groups: dict[Key, _Group], union: _Union, counts: dict[str, int]
) -> dict[str, list[Swap]]:
    """Per file: every spelling it carries that is not its final group's canonical one."""
    rewrites: dict[str, list[Swap]] = defaultdict(list)
    canonical = {k: g.canonical() for k, g in groups.items()}
    for key, group in sorted(groups.items()):
        final = canonical[union.find(key)]
        for spelling, paths in sorted(group.spellings.items()):
            if spelling == final:
                continue
            if union.find(key) == key:
                counts["names_normalized"] += 1
            for path in paths:
                rewrites[path].append((spelling, final))
    return rewrites


PHASE = EntityResolution()
