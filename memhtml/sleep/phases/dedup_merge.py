"""dedup-merge: fold duplicate memories into their older copy, unless a guard says they differ.

Two kinds of duplicate among active memories (tasks, arcs and the
`resources/people/` records left out):

* **exact** -- two files with one content hash. The index projects only the
  smallest path and records each other copy as a skipped duplicate; those
  records are the groups.
* **near** -- first-chunk vectors at cosine >= 0.92 (the original's
  NEAR_DUPLICATE_THRESHOLD), each memory keeping its 5 closest partners, at
  most 100 near merges a night (SLEEP-FACTS 2.2). With `--deep` the band
  goes down to 0.86 (the original's recall floor), and a pair below 0.92
  must also share an entity ("grouping by shared entity").

Every near pair passes the anti-merge guards first (`memhtml.domain.guards`):
a negation, number, qualifier or role difference vetoes it. The survivor is
the older file (created, then path), as in the original. The other copy is
archived (`git mv` into `archive/<YYYY>/`) with `memhtml-superseded-by`
naming the survivor; the survivor gains `supersedes` to the archived copy and
the copy's own authored links; links from elsewhere to the copy now name the
survivor (`Planner` relinking, as `correct` does). A survivor may absorb
several copies in one night, and a copy that already absorbed one may itself
fold into an older file: the superseded-by chain then leads through it.

A memory with a near twin the guards told apart (a *contested* memory: "must
verify" beside "must not verify") is neither folded nor folded into. Folding
"must verify" into its older paraphrase "must check" would leave the
negation the best lexical match for the words "must verify": a query in the
folded copy's own words would find the opposite fact first, which is the
regression the discrimination gate at `sleep merge` refuses. Two paraphrases
side by side cost a little space; a lost discrimination costs a wrong
answer.

Where we differ: the original mines near pairs at 0.92 strictly above, cuts
the mined list at 400 pairs before its veto (so twins the guards refuse
every night, which sit at the top of the list, could crowd every true
duplicate out for good; here every mined pair is judged and only merges are
capped), never lets a file take part in two merges a night (so a group of
three needs two nights), and merges exact duplicates no differently. Its vetoed pairs
become review tasks; review tasks come with the model/tasks issue, so here a
vetoed pair is counted (per guard) and listed in the commit body, and emits no
ledger mark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from memhtml.contracts.vocab import PEOPLE_DIR
from memhtml.domain.guards import GUARDS, divergence, normalize_name
from memhtml.ops.fold import merge_into
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import (
    DUPLICATE_REASON,
    BasePhase,
    first_chunk_vectors,
    listed,
    read_doc,
    relink_touches,
    unique_touches,
    unparseable,
)

NEAR_DUPLICATE_THRESHOLD: Final = 0.92
DEEP_THRESHOLD: Final = 0.86
PER_SOURCE_K: Final = 5
MAX_MERGES: Final = 100  # near merges a night (exact duplicates are not capped)
EXCLUDED_TYPES: Final = ("task", "arc")
_CORPUS_WHERE: Final = (
    "f.archived = 0 AND f.memory_type NOT IN ('task', 'arc') AND f.path NOT LIKE ?"
)


@dataclass
class _Memory:
    path: str
    created: str
    text: str
    entities: set[tuple[str, str]] = field(default_factory=set)

    @property
    def age_key(self) -> tuple[str, str]:
        return (self.created, self.path)


@dataclass
class _Fold:
    """One planned fold: the newer copy into the older, and the numbers behind it."""

    loser: str
    survivor: str
    inputs: dict[str, Any]
    reason: dict[str, Any]

    @property
    def why(self) -> str:
        """The commit body's words for it."""
        if self.reason["match"] == "exact":
            return "exact"
        return f"cosine {self.reason['cosine']}"


@dataclass
class _Plan:
    merges: list[_Fold] = field(default_factory=list)
    vetoes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _corpus(ctx: SleepContext) -> dict[str, _Memory]:
    rows = ctx.conn.execute(
        f"SELECT f.path, f.created_at, f.body_text FROM files f WHERE {_CORPUS_WHERE}",
        (PEOPLE_DIR + "/%",),
    ).fetchall()
    out = {str(p): _Memory(str(p), str(c), str(t)) for p, c, t in rows}
    for path, kind, name in ctx.conn.execute(
        "SELECT path, entity_type, entity_name FROM file_entities"
    ):
        if path in out:
            out[path].entities.add((str(kind), str(name)))
    return out


def _exact_groups(
    ctx: SleepContext, corpus: dict[str, _Memory], counts: dict[str, int]
) -> dict[str, list[_Memory]]:
    """holder -> every copy (the holder included) of its content, from the index's skips."""
    groups: dict[str, list[_Memory]] = {}
    for path, reason in ctx.conn.execute(
        "SELECT path, reason FROM skipped_files WHERE reason LIKE ? ORDER BY path",
        (DUPLICATE_REASON + "%",),
    ):
        holder = str(reason)[len(DUPLICATE_REASON) :]
        if holder not in corpus or str(path).startswith(PEOPLE_DIR + "/"):
            continue
        doc = read_doc(ctx, str(path))
        if doc is None:
            counts["unparseable_copies"] += 1
            continue
        if doc.memory_type in EXCLUDED_TYPES:
            continue
        copy = _Memory(str(path), doc.created or "", doc.body_text, set(doc.entities))
        groups.setdefault(holder, [corpus[holder]]).append(copy)
    return groups


def _fold(ctx: SleepContext, loser: _Memory, survivor: _Memory, reason: dict[str, Any]) -> _Fold:
    """A fold with the inputs that name it (both paths and content hashes) and its reason:
    the match, the guards that passed, which copy survives and why, and each side's usage."""
    from memhtml.sleep.changes import content_hash
    from memhtml.sleep.phases._shared import access_rows

    usage = access_rows(ctx.conn)

    def used(path: str) -> dict[str, int]:
        count, reinforced, _, _ = usage.get(path, (0, 0, 0.0, None))
        return {"reads": count, "reinforcements": reinforced}

    inputs = {
        "loser": loser.path,
        "loser_hash": content_hash(ctx.conn, ctx.view, loser.path),
        "survivor": survivor.path,
        "survivor_hash": content_hash(ctx.conn, ctx.view, survivor.path),
    }
    return _Fold(
        loser.path,
        survivor.path,
        inputs,
        {
            **reason,
            "guards": {g: "passed" for g in GUARDS},
            "survivor_rule": "the older copy survives",
            "created": {loser.path: loser.created, survivor.path: survivor.created},
            "usage": {loser.path: used(loser.path), survivor.path: used(survivor.path)},
        },
    )


def _shares_entity(a: _Memory, b: _Memory) -> bool:
    def keys(m: _Memory) -> set[tuple[str, str]]:
        return {(normalize_name(t), normalize_name(n)) for t, n in m.entities}

    return bool(keys(a) & keys(b))


def _plan(ctx: SleepContext) -> _Plan:
    import numpy as np

    from memhtml.domain.neighbors import neighbor_pairs

    plan = _Plan()
    counts = plan.counts
    for key in ("exact", "near", "merged", "candidates", "vetoed", "vanished", "capped"):
        counts[key] = 0
    for guard in GUARDS:
        counts[f"vetoed_{guard}"] = 0
    counts["unparseable_copies"] = 0
    if ctx.deep:
        counts["outside_entity_groups"] = 0
    corpus = _corpus(ctx)
    counts["memories"] = len(corpus)
    counts["unparseable"] = len(unparseable(ctx.conn))
    survivor_of: dict[str, str] = {}  # merged-away path -> the path it folded into

    def root(path: str) -> str:
        while path in survivor_of:
            path = survivor_of[path]
        return path

    known = dict(corpus)  # plus the unindexed copies, which share their holder's vector
    vector_of: dict[str, str] = {}
    for holder, copies in sorted(_exact_groups(ctx, corpus, counts).items()):
        copies.sort(key=lambda m: m.age_key)
        keep = copies[0]
        for copy in copies:
            known[copy.path] = copy
            vector_of[copy.path] = holder
        for copy in copies[1:]:
            fold = _fold(ctx, copy, keep, {"match": "exact"})
            if _refused(ctx, plan, fold):
                continue
            survivor_of[copy.path] = keep.path
            plan.merges.append(fold)
            counts["exact"] += 1
        counts["exact_groups"] = counts.get("exact_groups", 0) + 1

    floor = DEEP_THRESHOLD if ctx.deep else NEAR_DUPLICATE_THRESHOLD
    keys, matrix = first_chunk_vectors(ctx.conn, _CORPUS_WHERE, (PEOPLE_DIR + "/%",))
    counts["without_vector"] = len(corpus) - len(keys)
    if matrix is None:
        counts["merged"] = counts["exact"]
        return plan
    unit = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    at = {p: i for i, p in enumerate(keys)}

    def row(path: str) -> int:
        return at[vector_of.get(path, path)]

    pairs = neighbor_pairs(matrix, floor, PER_SOURCE_K)
    counts["candidates"] = len(pairs)
    counts["contested"] = 0
    contested: dict[str, tuple[str, tuple[str, ...]]] = {}  # path -> a twin and the guards
    for i, j, _mined in pairs:
        a, b = corpus[keys[i]], corpus[keys[j]]
        fired = divergence(a.text, b.text, a.entities, b.entities)
        if fired:
            contested.setdefault(a.path, (b.path, fired))
            contested.setdefault(b.path, (a.path, fired))
    for done, (i, j, mined) in enumerate(pairs, start=1):
        ctx.progress(done, len(pairs))
        a, b = sorted((corpus[keys[i]], corpus[keys[j]]), key=lambda m: m.age_key)
        if b.path in survivor_of:
            counts["vanished"] += 1  # the newer copy already folded into another
            continue
        keep, sim = known[root(a.path)], mined
        if keep.path != a.path:
            # the older one folded tonight: the pair stands only if its survivor is as close
            sim = float(np.clip(unit[row(keep.path)] @ unit[row(b.path)], -1.0, 1.0))
            if sim < floor or keep.path == b.path:
                counts["vanished"] += 1
                continue
        if ctx.deep and sim < NEAR_DUPLICATE_THRESHOLD and not _shares_entity(keep, b):
            counts["outside_entity_groups"] += 1
            continue
        pair = [keep.path, b.path]
        numbers = {"cosine": round(sim, 3), "threshold": floor}
        fired = divergence(keep.text, b.text, keep.entities, b.entities)
        if fired:
            counts["vetoed"] += 1
            for guard in fired:
                counts[f"vetoed_{guard}"] += 1
            plan.vetoes.append(f"veto {keep.path} {b.path} at cosine {sim:.3f}: {', '.join(fired)}")
            ctx.changes.veto(
                "fold",
                f"keep {keep.path} and {b.path} apart",
                {"pair": pair, "guards": list(fired), **numbers},
            )
            continue
        twin = contested.get(keep.path) or contested.get(b.path)
        if twin is not None:
            counts["contested"] += 1
            ctx.changes.veto(
                "fold",
                f"keep {keep.path} and {b.path} apart (contested)",
                {
                    "pair": pair,
                    "guards": ["contested"],
                    "twin": twin[0],
                    "twin_guards": list(twin[1]),
                    "why": "one of them has a near twin the guards tell apart; folding would"
                    " let a query in its words find the opposite fact first",
                    **numbers,
                },
            )
            continue
        if counts["near"] >= MAX_MERGES:
            counts["capped"] += 1
            ctx.changes.veto(
                "fold",
                f"fold {b.path} into {keep.path} next night",
                {"pair": pair, "guards": ["capped"], "cap": MAX_MERGES, **numbers},
            )
            continue
        fold = _fold(ctx, b, keep, {"match": "near", **numbers})
        if _refused(ctx, plan, fold):
            continue
        survivor_of[b.path] = keep.path
        plan.merges.append(fold)
        counts["near"] += 1
    counts["merged"] = counts["exact"] + counts["near"]
    return plan


def _refused(ctx: SleepContext, plan: _Plan, fold: _Fold) -> bool:
    """True (and vetoed, counted) when a person refused this fold: a standing dismissal, or
    a merge that rebuilds the night without it."""
    why = ctx.changes.withheld("fold", fold.inputs)
    if why is None:
        return False
    plan.counts["refused"] = plan.counts.get("refused", 0) + 1
    ctx.changes.veto(
        "fold",
        f"fold {fold.loser} into {fold.survivor}",
        {"pair": [fold.survivor, fold.loser], "guards": ["refused"], "why": why},
        fold.inputs,
    )
    return True


PLAN_SCAN_LIMIT: Final = 2000  # active memories `sleep plan` scans for near pairs itself


class DedupMerge(BasePhase):
    """Exact and near-duplicate merges behind the anti-merge guards."""

    name = "dedup-merge"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Plan every merge against the run index, then stage them through the Planner."""
        plan = _plan(ctx)
        counts = plan.counts
        out = PhaseOutcome(counts=counts)
        lines: list[str] = []
        if not ctx.dry_run:
            moves = []
            counts["failed"] = 0
            for fold in plan.merges:
                loser, survivor = fold.loser, fold.survivor
                change = ctx.changes.propose(
                    "fold",
                    fold.inputs,
                    summary=f"fold {loser} into {survivor}",
                    reason=fold.reason,
                    reads=(loser, survivor),
                )
                if change is None:  # (planned around already; kept for safety)
                    continue
                moved = merge_into(ctx, loser, survivor)
                ctx.changes.done(change, ok=moved is not None)
                if moved is None:
                    counts["failed"] += 1
                    continue
                moves.append(moved)
                out.touched.append(Touched(moved.to, "merged", from_path=loser))
                out.touched.append(Touched(survivor, "rewritten"))
                lines.append(f"merge {loser} -> {survivor} ({fold.why})")
            counts["relinked"] = sum(len(m.relinked) for m in moves)
            counts["merged"] = len(moves)
            out.touched += relink_touches(ctx, moves)
            out.touched = unique_touches(out.touched)
        out.subject = (
            f"fold {counts['merged']} duplicates into older copies"
            f" ({counts['exact']} exact, {counts['near']} near)"
        )
        out.body = listed(lines + plan.vetoes)
        if counts["vetoed"]:
            out.detail = f"{counts['vetoed']} near-duplicate pairs vetoed by the guards"
        return out

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """Exact groups are cheap to count; near pairs are the vector scan itself, run here
        only on a store small enough for it to be quick (PLAN_SCAN_LIMIT active memories)."""
        exact = ctx.conn.execute(
            "SELECT count(*) FROM skipped_files WHERE reason LIKE ?", (DUPLICATE_REASON + "%",)
        ).fetchone()[0]
        active = ctx.conn.execute("SELECT count(*) FROM files WHERE archived = 0").fetchone()[0]
        if int(active) <= PLAN_SCAN_LIMIT:
            counted = super().plan(ctx)
            counted["counts"]["exact_copies"] = int(exact)
            return counted
        return {
            "counts": {"exact_copies": int(exact)},
            "unknown": {
                "near": "counting near-duplicates is the pairwise vector scan the phase runs"
            },
        }


PHASE = DedupMerge()
