"""`sleep plan`: what each phase would do against main now, without running it.

Each phase answers its own `plan(ctx)` over a read-only view of main's index
(caught up first) and HEAD's tree: cheap counts, or `unknown` with the reason
where counting is the work itself. Phases that would not run say why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memhtml.sleep import engine, runs
from memhtml.sleep.phase import PHASE_ORDER
from memhtml.sleep.runindex import RunIndex, open_index

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus


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
        return {"head_sha": None, "dirty": bool(dirty), "phases": []}
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
    return {
        "head_sha": head,
        "run_id": record.run_id,
        "dirty": bool(dirty),
        "refused": "the working tree is dirty: sleep run would refuse (ERR_DIRTY_TREE)"
        if dirty
        else None,
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
