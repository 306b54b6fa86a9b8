"""Run one sleep phase over a real memory root, the way the engine does, without the engine.

`run_phase(corpus, "dedup-merge")` builds a SleepContext over the corpus's
working tree (a TreeView), a Planner bound to it (as `Corpus.run_ops` builds
one, with `now` at the run instant), the corpus's index connection, runs the
phase, and commits whatever it staged as one commit through
`Corpus.commit_changes` (which reprojects exactly those paths into the
index). The engine does the same on a worktree of the `sleep/<run-id>` branch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memhtml.index.identity import path_ever_held
from memhtml.ops.tree import TreeView
from memhtml.ops.write_door import active_path_for_hash, inbound_links
from memhtml.ops.writes import Planner
from memhtml.sleep.phase import PhaseOutcome, SleepContext
from memhtml.sleep.phases import load

DEFAULT_DATE = "2026-03-02"


@dataclass
class Ran:
    """A phase's outcome, its commit (None: nothing staged) and its context."""

    outcome: PhaseOutcome
    commit_sha: str | None
    ctx: SleepContext
    changed: list[str] = field(default_factory=list)


def make_context(
    corpus: Any,
    *,
    date: str = DEFAULT_DATE,
    deep: bool = False,
    dry_run: bool = False,
    run_id: str | None = None,
    llm: Any = None,
) -> SleepContext:
    """A SleepContext over `corpus` as the engine builds one (state plane read-only by rule)."""
    corpus.sync()
    at = f"{date}T00:00:00Z"
    view = TreeView(corpus.root)
    planner = Planner(
        view=view,
        now=at,
        year=int(date[:4]),
        active_path_for_hash=lambda h: active_path_for_hash(corpus.conn, h),
        is_dirty=lambda _path: False,
        ever_held=lambda p: path_ever_held(corpus.conn, p),
        inbound=lambda p: inbound_links(corpus.conn, p),
    )
    return SleepContext(
        run_id=run_id or f"sleep/{date}",
        date=date,
        at=at,
        deep=deep,
        dry_run=dry_run,
        conn=corpus.conn,
        view=view,
        planner=planner,
        embedder=corpus.embedder,
        llm=llm,
    )


def run_phase(corpus: Any, name: str, **options: Any) -> Ran:
    """Run phase `name` and commit what it staged (unless a dry run or a non-committing phase)."""
    ctx = make_context(corpus, **options)
    phase = load(name)
    outcome = phase.run(ctx)
    changes = ctx.view.changes()
    if ctx.dry_run or not phase.commits:
        assert not changes, f"{name} staged changes on a dry run or as a non-committing phase"
        return Ran(outcome, None, ctx)
    if not changes:
        return Ran(outcome, None, ctx)
    message = f"memhtml(sleep({name})): {outcome.subject}\n\n" + "\n".join(
        f"  {line}" for line in outcome.body
    )
    with corpus.lock.hold():
        sha, _, _ = corpus.commit_changes(
            changes, message + "\n", docs=ctx.planner.docs, embedder=corpus.embedder, now=ctx.at
        )
    return Ran(outcome, sha, ctx, [c.path for c in changes])


def git(root: Any, *args: str) -> str:
    """Run git in the memory root; stdout text."""
    import subprocess

    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def memory_bytes(
    title: str,
    claim: str,
    *,
    created: str = "2026-03-01T10:00:00Z",
    memory_type: str = "semantic",
    entities: tuple[tuple[str, str], ...] = (),
    links: tuple[tuple[str, str], ...] = (),
    metas: dict[str, str] | None = None,
    aliases: tuple[str, ...] = (),
) -> bytes:
    """A memory file as the write door renders it, with the dates and metas given."""
    from memhtml.html import NewMemory, render_memory

    return render_memory(
        NewMemory(
            title=title,
            memory_type=memory_type,
            created=created,
            updated=created,
            claim=claim,
            entities=entities,
            links=links,
            metas=metas or {},
            aliases=aliases,
        )
    ).encode("utf-8")


def commit_files(corpus: Any, files: dict[str, bytes], message: str = "by hand") -> None:
    """Write files into the tree by hand and commit them with git (as another tool would)."""
    for path, data in files.items():
        target = corpus.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    git(corpus.root, "add", *files)
    git(corpus.root, "commit", "-qm", message)
    corpus.sync()


def links_of(corpus: Any, path: str) -> list[tuple[str, str]]:
    """(rel, path) of a file's authored links, read from the tree."""
    from memhtml.html import parse_memory

    return [(link.rel, link.path) for link in parse_memory((corpus.root / path).read_bytes()).links]


def doc_of(corpus: Any, path: str) -> Any:
    """The parse of a file in the tree."""
    from memhtml.html import parse_memory

    return parse_memory((corpus.root / path).read_bytes())


# The instant the phase tests' write doors stamp: the run under test is the night after.
WRITTEN = "2026-03-01T10:00:00Z"
