"""`sleep plan`: what each phase would do against main now, without running it.

Each phase answers its own `plan(ctx)` over a read-only view of main's index
(caught up first) and HEAD's tree: cheap counts, or `unknown` with the reason
where counting is the work itself. Phases that would not run say why. The
`verdict` is `would-change` when some phase counts a change a person would review
(its `signals` name each: `dedup-merge: near 2`), else `nothing-to-do`, with what was
not counted listed under `unchecked` (and `refused` says when `sleep run` would
refuse to start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from memhtml.sleep import engine, runs
from memhtml.sleep.phase import PHASE_ORDER
from memhtml.sleep.runindex import RunIndex, open_index

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

# The counts that are a change a person would review (the others describe the store: how
# many were scored, active, in grace...). state-export and report follow whatever else
# lands, so they are never a reason to run a night on their own.
ACTIONS: Final = frozenset(
    {
        "exact_copies",
        "exact",
        "near",
        "merged",
        "names_normalized",
        "alias_merges",
        "fuzzy_merges",
        "files_rewritten",
        "created",
        "linked",
        "decayed",
        "evicted",
        "reprieved",
        "expired",
        "rewritten",
        "dropped",
        "regenerated",
        "removed",
        "typed",
        "moved",
        "promoted",
        "archived_now",
        "consolidated",
        "canonicals",
        "findings",
    }
)
FOLLOWERS: Final = frozenset({"preflight", "state-export", "report"})


def verdict(phases: list[dict[str, Any]], refused: str | None) -> dict[str, Any]:
    """`would-change` with the named signals behind it, or `nothing-to-do` (saying what
    was not counted)."""
    signals: list[str] = []
    unchecked: list[str] = []
    for p in phases:
        if p["phase"] in FOLLOWERS or not p.get("would_run"):
            continue
        for key, value in (p.get("counts") or {}).items():
            if key in ACTIONS and isinstance(value, int) and value > 0:
                signals.append(f"{p['phase']}: {key} {value}")
        for key, why in (p.get("unknown") or {}).items():
            unchecked.append(f"{p['phase']}: {key} ({why})")
        if isinstance(p.get("unknown"), str):
            unchecked.append(f"{p['phase']}: {p['unknown']}")
    del refused  # said beside the verdict: a dirty tree changes what `sleep run` does, not
    # what the night would do
    word = "would-change" if signals else "nothing-to-do"
    return {"verdict": word, "signals": signals, "unchecked": unchecked}


def plan(
    corpus: Corpus,
    *,
    deep: bool = False,
    registry: engine.Registry | None = None,
    llm: Any = None,
) -> dict[str, Any]:
    """The `sleep.plan` payload. `llm` binds the model as `sleep run` does (a name, a
    model, or None for $MEMHTML_LLM); planning never calls it, but a model phase with
    one bound counts its candidates instead of saying it would not run."""
    llm = engine.bind_llm(llm, None)
    git = corpus.git
    corpus.catch_up()
    head = git.head()
    dirty = sorted({e.path for e in git.status((), read_only=True)})
    if head is None:
        return {
            "verdict": "nothing-to-do",
            "signals": [],
            "unchecked": [],
            "head_sha": None,
            "dirty": bool(dirty),
            "phases": [],
        }
    run_date = corpus.clock()[:10]
    record = runs.RunRecord(
        run_id=runs.new_run_id(git, corpus.root, run_date, head),
        base=head,
        target=None,
        date=run_date,
        at=runs.instant_of(run_date),
        phases=list(PHASE_ORDER),
        deep=deep,
        status="plan",
        head=head,
    )
    state_dir = corpus.root / ".memhtml"
    conn = open_index(state_dir / "index.db", state_dir / "state.db", read_only=True)
    night = engine.Night(
        corpus,
        record,
        dry_run=True,
        registry=registry,
        llm=llm,
        progress=False,
        loader=engine.load_phase,
    )
    night.index = RunIndex(corpus, state_dir, conn)
    phases: list[dict[str, Any]] = []
    try:
        night.open_tip(head)
        for name in PHASE_ORDER:
            phases.append(_plan_one(night, name, deep, llm, registry))
    finally:
        night.close()
    refused = (
        "the working tree is dirty: sleep run would refuse (ERR_DIRTY_TREE)" if dirty else None
    )
    return {
        **verdict(phases, refused),
        "head_sha": head,
        "run_id": record.run_id,
        "dirty": bool(dirty),
        "refused": refused,
        "deep": deep,
        "phases": phases,
    }


def _plan_one(
    night: engine.Night, name: str, deep: bool, llm: Any, registry: engine.Registry | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"phase": name, "ordinal": PHASE_ORDER.index(name) + 1}
    phase = engine.load_phase(name, registry)
    if phase is None:
        return {**entry, "would_run": False, "reason": "phase not installed"}
    entry["commits"] = phase.commits
    entry["needs_model"] = phase.needs_model
    if phase.deep_only and not deep:
        return {**entry, "would_run": False, "reason": "runs only with --deep"}
    if phase.needs_model and llm is None:
        return {**entry, "would_run": False, "reason": "no model bound (MEMHTML_LLM=off)"}
    try:
        found = phase.plan(night.context(name, []))
    except Exception as exc:  # a phase that cannot plan says so; the others still answer
        return {**entry, "would_run": True, "unknown": f"{type(exc).__name__}: {exc}"}
    return {**entry, "would_run": True, **found}
