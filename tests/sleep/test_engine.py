"""The sleep engine: a night on a branch, one commit per committing phase, main untouched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import (
    DirtyTreeError,
    EmbedModelMismatchError,
    IndexStaleError,
    InvalidFlagError,
    WriteConflictError,
)
from memhtml.html import NewMemory, parse_memory, render_document
from memhtml.sleep import engine, runs
from memhtml.sleep.phase import PHASE_ORDER, PhaseOutcome, SleepContext, Touched
from memhtml.sleep.review import review, status
from memhtml.store.branch import log_range
from memhtml.store.lock import RepoLock

from .engine_helpers import (
    DATE,
    StandIn,
    archive,
    git,
    registry,
    seed,
    stamp,
    state_rows,
    worktree_digest,
)


@pytest.fixture
def seeded(corpus: Any) -> dict[str, str]:
    return seed(corpus)


def _run(corpus: Any, reg: dict[str, Any], **options: Any) -> dict[str, Any]:
    return engine.run(corpus, date=DATE, registry=reg, progress=False, **options)


def _commits(root: Path, data: dict[str, Any]) -> list[Any]:
    return log_range_of(root, data["base_sha"], data["head_sha"])


def log_range_of(root: Path, base: str, tip: str) -> list[Any]:
    from memhtml.store.git import Git

    return log_range(Git(root), f"{base}..{tip}")


def test_a_night_leaves_main_and_the_working_tree_alone(
    corpus: Any, seeded: dict[str, str]
) -> None:
    root = corpus.root
    head, before = git(root, "rev-parse", "HEAD"), worktree_digest(root)
    user_index = git(root, "ls-files", "-s")
    data = _run(
        corpus,
        registry(
            dedup_merge=stamp(seeded["a"]),
            retention_triage=archive(seeded["c"]),
        ),
    )
    assert data["status"] == "review"
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "rev-parse", "refs/heads/main") == head
    assert worktree_digest(root) == before
    assert git(root, "ls-files", "-s") == user_index
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    # The branch holds the night's work, on top of the base.
    tip = git(root, "rev-parse", f"sleep/{DATE}")
    assert tip == data["head_sha"] and data["base_sha"] == head
    archived = git(root, "ls-tree", "-r", "--name-only", tip, "archive/2026/")
    assert archived == f"archive/2026/{seeded['c']}"
    linked = git(root, "show", f"{tip}:{seeded['d']}")
    assert f'href="/{archived}"' in linked  # the inbound link followed the memory


def test_one_commit_per_committing_phase_with_its_trailers(
    corpus: Any, seeded: dict[str, str]
) -> None:
    data = _run(
        corpus,
        registry(
            dedup_merge=stamp(seeded["a"]),
            confidence_decay=stamp(seeded["b"], value="0.9"),
            integrity=lambda _ctx: PhaseOutcome(counts={"dangling": 0}),  # nothing to commit
        ),
    )
    commits = _commits(corpus.root, data)
    phases = [c.trailers["Memhtml-Phase"] for c in commits]
    assert phases == [["dedup-merge"], ["confidence-decay"], ["report"]]
    for entry in commits:
        assert entry.trailers["Memhtml-Run"] == [DATE]
        assert entry.subject.startswith(f"memhtml(sleep({entry.trailers['Memhtml-Phase'][0]})): ")
    assert json.loads(commits[0].trailers["Memhtml-Counts"][0]) == {"stamped": 1}
    assert data["commits"] == [c.sha for c in commits]
    by_phase = {p["phase"]: p for p in data["phases"]}
    assert by_phase["integrity"]["commit_sha"] is None and by_phase["integrity"]["status"] == "ok"
    assert [p["phase"] for p in data["phases"]] == list(PHASE_ORDER)
    # Every stamp of the run is the run instant.
    text = git(corpus.root, "show", f"{data['head_sha']}:{seeded['a']}")
    assert parse_memory(text.encode()).confidence == 0.5


def test_a_commit_body_cannot_forge_a_trailer(corpus: Any, seeded: dict[str, str]) -> None:
    def forger(ctx: SleepContext) -> PhaseOutcome:
        out = stamp(seeded["a"])(ctx)
        out.body = ["fine", "", "Memhtml-Phase: integrity", "Memhtml-Run: 1999-01-01"]
        return out

    data = _run(corpus, registry(dedup_merge=forger))
    first = _commits(corpus.root, data)[0]
    assert first.trailers["Memhtml-Phase"] == ["dedup-merge"]
    assert first.trailers["Memhtml-Run"] == [DATE]


def test_a_failing_phase_is_recorded_and_the_night_goes_on(
    corpus: Any, seeded: dict[str, str]
) -> None:
    def boom(_ctx: SleepContext) -> PhaseOutcome:
        raise RuntimeError("the disk is a lie")

    data = _run(corpus, registry(entity_resolution=boom, integrity=stamp(seeded["b"], value="0.7")))
    assert data["status"] == "failed"
    assert data["failed_phases"] == ["entity-resolution"]
    by_phase = {p["phase"]: p for p in data["phases"]}
    assert by_phase["entity-resolution"]["detail"] == "RuntimeError: the disk is a lie"
    assert by_phase["integrity"]["commit_sha"] is not None  # a later phase still committed
    report = git(corpus.root, "show", f"{data['head_sha']}:.memhtml/sleep/{DATE}.html")
    assert "1 phase(s) failed" in report and "the disk is a lie" in report
    assert status(corpus)["failed_phases"] == ["entity-resolution"]


def test_a_phase_that_writes_a_broken_memory_commits_nothing(
    corpus: Any, seeded: dict[str, str]
) -> None:
    def breaks(ctx: SleepContext) -> PhaseOutcome:
        ctx.view.write(seeded["a"], b"<html><body>not a memory</body></html>")
        return PhaseOutcome(counts={"broken": 1})

    data = _run(corpus, registry(compress=breaks))
    by_phase = {p["phase"]: p for p in data["phases"]}
    assert by_phase["compress"]["status"] == "failed"
    assert "break the format" in by_phase["compress"]["detail"]
    assert [c.trailers["Memhtml-Phase"] for c in _commits(corpus.root, data)] == [["report"]]


def test_a_malformed_outcome_is_the_phase_failing(corpus: Any, seeded: dict[str, str]) -> None:
    def sloppy(ctx: SleepContext) -> PhaseOutcome:
        stamp(seeded["a"])(ctx)
        return PhaseOutcome(counts={"merged": "three"})  # type: ignore[dict-item]

    def bad_mark(ctx: SleepContext) -> PhaseOutcome:
        return PhaseOutcome(marks=[{"no": "kind"}])

    data = _run(corpus, registry(dedup_merge=sloppy, edge_typing=bad_mark))
    by_phase = {p["phase"]: p for p in data["phases"]}
    assert by_phase["dedup-merge"]["status"] == "failed"
    assert "not a number" in by_phase["dedup-merge"]["detail"]
    assert by_phase["edge-typing"]["status"] == "failed"
    assert [c.trailers["Memhtml-Phase"] for c in _commits(corpus.root, data)] == [["report"]]


def test_an_unparseable_file_is_skipped_reported_and_never_rewritten(
    corpus: Any, seeded: dict[str, str]
) -> None:
    root = corpus.root
    (root / "areas/inbox/broken.html").write_text("<html><p>no head, no article</p></html>")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a hand-written file the format refuses")
    data = _run(corpus, registry(integrity=stamp("areas/inbox/broken.html")))
    by_phase = {p["phase"]: p for p in data["phases"]}
    assert by_phase["preflight"]["counts"]["index_skipped"] == 1
    assert "areas/inbox/broken.html" in by_phase["preflight"]["detail"]
    assert by_phase["integrity"]["status"] == "failed"
    assert git(root, "diff", "--name-only", data["base_sha"], data["head_sha"]) == (
        f".memhtml/sleep/{DATE}.html"
    )


def test_model_and_deep_phases_say_why_they_were_skipped(
    corpus: Any, seeded: dict[str, str]
) -> None:
    model = StandIn("arc-synthesis", stamp(seeded["a"]), needs_model=True)
    deep = StandIn("placement-triage", stamp(seeded["b"]), deep_only=True)
    data = _run(corpus, registry(arc_synthesis=model, placement_triage=deep))
    by_phase = {p["phase"]: p for p in data["phases"]}
    assert by_phase["arc-synthesis"]["status"] == "skipped"
    assert "MEMHTML_LLM=off" in by_phase["arc-synthesis"]["detail"]
    assert by_phase["placement-triage"]["status"] == "skipped"
    assert "--deep" in by_phase["placement-triage"]["detail"]
    assert not model.calls and not deep.calls
    data = _run(corpus, registry(placement_triage=deep), deep=True)
    assert {p["phase"]: p for p in data["phases"]}["placement-triage"]["commit_sha"]


def test_the_model_call_budget_is_shared_by_the_run(corpus: Any, seeded: dict[str, str]) -> None:
    seen: list[int | None] = []

    def spends(n: int) -> Any:
        def body(ctx: SleepContext) -> PhaseOutcome:
            seen.append(ctx.max_llm_calls)
            ctx.llm_calls = min(n, ctx.max_llm_calls or n)
            return PhaseOutcome()

        return body

    reg = registry(
        edge_typing=StandIn("edge-typing", spends(2), needs_model=True),
        arc_synthesis=StandIn("arc-synthesis", spends(5), needs_model=True),
        compress=StandIn("compress", spends(1), needs_model=True),
    )
    data = engine.run(
        corpus, date=DATE, registry=reg, progress=False, llm=object(), max_llm_calls=3
    )
    by_phase = {p["phase"]: p for p in data["phases"]}
    assert seen == [3, 1]
    assert (by_phase["edge-typing"]["llm_calls"], by_phase["arc-synthesis"]["llm_calls"]) == (2, 1)
    assert by_phase["compress"]["status"] == "skipped"
    assert "budget" in by_phase["compress"]["detail"]
    assert data["llm_calls"] == 3


def test_later_phases_read_what_earlier_phases_committed(
    corpus: Any, seeded: dict[str, str]
) -> None:
    seen: dict[str, Any] = {}

    def looks(ctx: SleepContext) -> PhaseOutcome:
        row = ctx.conn.execute(
            "SELECT archived FROM files WHERE origin_path = ? ORDER BY archived DESC",
            (seeded["c"],),
        ).fetchone()
        seen["archived"] = row
        seen["live"] = ctx.view.exists(seeded["c"])
        seen["results"] = [r["phase"] for r in ctx.results]
        return PhaseOutcome()

    _run(corpus, registry(dedup_merge=archive(seeded["c"]), integrity=looks))
    assert seen["archived"] == (1,)
    assert seen["live"] is False
    assert seen["results"][:2] == ["preflight", "dedup-merge"]


def test_created_files_are_projected_and_embedded_in_the_run_index(
    corpus: Any, seeded: dict[str, str]
) -> None:
    def creates(ctx: SleepContext) -> PhaseOutcome:
        text, _ = render_document(
            NewMemory(
                title="Ada",
                memory_type="semantic",
                created=ctx.at,
                updated=ctx.at,
                claim="Ada owns the api.",
            )
        )
        ctx.view.write("resources/people/ada.html", text.encode())
        return PhaseOutcome(counts={"created": 1})

    seen: dict[str, Any] = {}

    def looks(ctx: SleepContext) -> PhaseOutcome:
        seen["row"] = ctx.conn.execute(
            "SELECT f.created_at, count(e.chunk_id) FROM files f JOIN chunks c ON c.path = f.path"
            " LEFT JOIN embeddings e ON e.chunk_id = c.chunk_id WHERE f.path = ?",
            ("resources/people/ada.html",),
        ).fetchone()
        return PhaseOutcome()

    data = _run(corpus, registry(person_links=creates, integrity=looks))
    assert seen["row"] == (f"{DATE}T00:00:00Z", 1)
    touched = {p["phase"]: p["touched"] for p in data["phases"]}
    assert touched["person-links"] == 1  # derived from the change set when a phase says nothing


def test_dry_run_writes_nothing(corpus: Any, seeded: dict[str, str]) -> None:
    root = corpus.root
    head, before = git(root, "rev-parse", "HEAD"), worktree_digest(root)
    data = _run(corpus, registry(dedup_merge=stamp(seeded["a"])), dry_run=True)
    assert data["dry_run"] is True and data["branch"] is None and data["commits"] == []
    by_phase = {p["phase"]: p for p in data["phases"]}
    assert by_phase["dedup-merge"]["counts"] == {"stamped": 1}
    assert by_phase["report"]["counts"]["phases"] == len(PHASE_ORDER) - 1
    assert git(root, "branch", "--list", "sleep/*") == ""
    assert git(root, "rev-parse", "HEAD") == head and worktree_digest(root) == before
    assert not runs.scratch_root(root).exists()


def test_phases_flag_selects_in_run_order_and_refuses_unknown_names(corpus: Any) -> None:
    assert engine.parse_phases("integrity, dedup-merge") == [
        "preflight",
        "dedup-merge",
        "integrity",
        "report",
    ]
    with pytest.raises(InvalidFlagError) as err:
        engine.parse_phases("dedup-merge,nap")
    assert "nap" in err.value.message and "state-export" in err.value.message
    assert err.value.exit_code == 2


def test_preflight_refuses_a_dirty_tree_and_creates_nothing(
    corpus: Any, seeded: dict[str, str]
) -> None:
    (corpus.root / "notes.txt").write_text("mine, uncommitted")
    with pytest.raises(DirtyTreeError):
        _run(corpus, registry())
    assert git(corpus.root, "branch", "--list", "sleep/*") == ""
    assert (corpus.root / "notes.txt").read_text() == "mine, uncommitted"


def test_preflight_refuses_another_vector_space(corpus: Any, seeded: dict[str, str]) -> None:
    corpus.conn.execute("UPDATE index_state SET embed_model = 'someone-else', embed_dim = 7")
    with pytest.raises(EmbedModelMismatchError):
        _run(corpus, registry())
    assert git(corpus.root, "branch", "--list", "sleep/*") == ""


def test_preflight_refuses_a_half_built_index(repo: Path) -> None:
    import memhtml
    from memhtml.embed.fake import FakeEmbedder
    from memhtml.embed.registry import register, unregister

    with memhtml.open(repo, embedder="off") as plain:
        seed(plain)  # chunks, no vectors

    class Broken(FakeEmbedder):
        def embed_documents(self, texts: Any) -> Any:
            raise RuntimeError("the model fell over")

    register("broken-for-sleep", Broken)
    try:
        with (
            memhtml.open(repo, embedder="broken-for-sleep") as corpus,
            pytest.raises(IndexStaleError),
        ):
            _run(corpus, registry())
    finally:
        unregister("broken-for-sleep")
    assert git(repo, "branch", "--list", "sleep/*") == ""


def test_a_second_concurrent_run_is_refused(corpus: Any, seeded: dict[str, str]) -> None:
    with (
        RepoLock(corpus.root / ".git" / "memhtml-sleep.lock").hold(timeout=0),
        pytest.raises(WriteConflictError) as err,
    ):
        _run(corpus, registry())
    assert "sleep" in err.value.message
    assert git(corpus.root, "branch", "--list", "sleep/*") == ""


def test_the_agent_writes_to_main_during_a_night(corpus: Any, seeded: dict[str, str]) -> None:
    import memhtml

    def agent_writes(_ctx: SleepContext) -> PhaseOutcome:
        with memhtml.open(corpus.root, embedder="fake") as agent:  # another writer, same root
            agent.write(title="Meanwhile", type="semantic", claim="A write lands during sleep.")
        return PhaseOutcome()

    head = git(corpus.root, "rev-parse", "HEAD")
    data = _run(corpus, registry(dedup_merge=agent_writes, integrity=stamp(seeded["a"])))
    assert data["status"] == "review"
    assert git(corpus.root, "rev-parse", "HEAD^") == head  # main moved by the agent, not by sleep
    assert git(corpus.root, "merge-base", "HEAD", f"sleep/{DATE}") == head


def test_run_ids_take_the_next_free_name(corpus: Any, seeded: dict[str, str]) -> None:
    first = _run(corpus, registry())
    second = _run(corpus, registry())
    assert (first["run_id"], second["run_id"]) == (DATE, f"{DATE}-2")
    assert git(corpus.root, "branch", "--list", "sleep/*").split() == [
        f"sleep/{DATE}",
        f"sleep/{DATE}-2",
    ]


def test_deleting_the_branch_leaves_no_trace_in_the_state_plane(
    corpus: Any, seeded: dict[str, str]
) -> None:
    corpus.reinforce([seeded["a"]], "positive")
    before = state_rows(corpus.root)

    def marks(ctx: SleepContext) -> PhaseOutcome:
        return PhaseOutcome(
            marks=[
                {
                    "kind": "entity-corroboration",
                    "entity_type": "svc",
                    "alias": "a",
                    "canonical": "b",
                }
            ]
        )

    _run(corpus, registry(entity_resolution=marks, dedup_merge=archive(seeded["c"])))
    git(corpus.root, "branch", "-D", f"sleep/{DATE}")
    assert state_rows(corpus.root) == before
    assert status(corpus)["runs"][0]["status"] == "discarded"


def test_review_classifies_every_touched_file_per_phase(
    corpus: Any, seeded: dict[str, str]
) -> None:
    from memhtml.html import set_meta

    def merges(ctx: SleepContext) -> PhaseOutcome:
        out = archive(seeded["b"])(ctx)
        dest = out.touched[0].path
        text = ctx.view.read(dest).decode()
        ctx.view.write(dest, set_meta(text, "memhtml-superseded-by", "/" + seeded["a"]).encode())
        return PhaseOutcome(touched=[Touched(dest, "merged", seeded["b"])])

    def moves(ctx: SleepContext) -> PhaseOutcome:
        data = ctx.view.read(seeded["d"])
        ctx.view.move(seeded["d"], "resources/caching/cache.html", data)
        return PhaseOutcome()

    data = _run(
        corpus,
        registry(
            dedup_merge=merges,
            confidence_decay=stamp(seeded["a"]),
            retention_triage=archive(seeded["c"]),
            placement_triage=moves,
        ),
        deep=True,
    )
    # A person edits the branch by hand before the review.
    root = corpus.root
    tip = data["head_sha"]
    got = review(corpus, data["run_id"])
    assert got["head_sha"] == tip
    kinds = {p["phase"]: p["by_kind"] for p in got["phases"]}
    assert kinds["dedup-merge"] == {"merged": 1}
    assert kinds["confidence-decay"] == {"rewritten": 1}
    assert kinds["retention-triage"] == {"archived": 1, "rewritten": 1}  # + the relinked source
    assert kinds["placement-triage"] == {"moved": 1}
    assert kinds["report"] == {"created": 1}
    rewritten = next(f for f in got["files"] if f["path"] == seeded["a"])
    assert rewritten["content_changed"] is False  # a head-only edit keeps the content hash
    moved = next(f for f in got["files"] if f["kind"] == "moved")
    assert moved["from_path"] == seeded["d"]
    assert got["hand_commits"] == [] and got["by_kind"]["merged"] == 1
    assert root.is_dir()


def test_a_phase_may_land_parts_as_commits_of_their_own(
    corpus: Any, seeded: dict[str, str]
) -> None:
    from memhtml.sleep.phase import Part

    def two(ctx: SleepContext) -> PhaseOutcome:
        for name in ("one", "two"):
            text, _ = render_document(
                NewMemory(
                    title=name.title(),
                    memory_type="semantic",
                    created=ctx.at,
                    updated=ctx.at,
                    claim=f"Fact {name} stands.",
                )
            )
            ctx.view.write(f"areas/inbox/{name}.html", text.encode())
        text = ctx.view.read(seeded["a"]).decode()
        from memhtml.html import set_meta

        ctx.view.write(seeded["a"], set_meta(text, "memhtml-confidence", "0.5").encode())
        return PhaseOutcome(
            counts={"written": 2},
            subject="the rest",
            parts=[
                Part("distill one", ("areas/inbox/one.html",), ("evidence s1: said one",)),
                Part("distill two", ("areas/inbox/two.html",)),
                Part("names nothing staged", ("areas/inbox/none.html",)),
            ],
            marks=[{"kind": "consolidation-watermark", "name": "x", "value": "1"}],
        )

    data = _run(corpus, registry(trace_consolidation=two))
    commits = [
        c
        for c in _commits(corpus.root, data)
        if c.trailers["Memhtml-Phase"] == ["trace-consolidation"]
    ]
    assert [c.subject.split(": ", 1)[1] for c in commits] == [
        "distill one",
        "distill two",
        "the rest",
    ]
    phase = next(p for p in data["phases"] if p["phase"] == "trace-consolidation")
    assert phase["commit_sha"] == commits[-1].sha
    files = [git(corpus.root, "show", "--name-only", "--format=", c.sha).split() for c in commits]
    assert files[0] == ["areas/inbox/one.html"] and files[1] == ["areas/inbox/two.html"]
    assert seeded["a"] in files[2] and runs.ledger_path(DATE) in files[2]
    assert "evidence s1: said one" in git(corpus.root, "show", "-s", "--format=%B", commits[0].sha)
    seen = review(corpus, DATE)
    by_phase = {p["phase"]: p for p in seen["phases"]}
    # The ledger is the run's bookkeeping: review lists the files the phase curated.
    assert len(by_phase["trace-consolidation"]["files"]) == 3
