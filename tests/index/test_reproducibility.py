"""Stateful property: whatever happened, the index a read sees equals a fresh rebuild.

Random sequences of write doors, hand edits (committed or not, reverted,
made unparseable and repaired), `git mv`, deletions and restores, with index
updates and reads at random points. At the end a read (no explicit update)
must report the index fresh, and the row set it reached incrementally must
equal the one a rebuild at the same HEAD and working tree produces (indexing
timestamps excluded).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

import memhtml
from memhtml.contracts.errors import MemhtmlError
from memhtml.store.layout import init_repo

from .test_indexer import fresh_rebuild_snapshot, snapshot

WORDS = ["alpha", "beta", "gamma", "delta", "pool", "vip", "drain", "port", "cache", "replica"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


class IndexMachine(RuleBasedStateMachine):
    """Drives a real repository and its index."""

    @initialize(watch=st.booleans())
    def setup(self, watch: bool) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memhtml-stateful-"))
        self.root = self.tmp / "memory"
        init_repo(self.root)
        self.corpus: Any = memhtml.open(self.root, embedder="fake")
        if watch:  # as the MCP server does: reads trust the kernel's change events
            self.corpus.watch_tree()
        self.counter = 0

    def _live(self) -> list[str]:
        return sorted(
            p.relative_to(self.root).as_posix()
            for b in ("areas", "resources", "projects")
            for p in (self.root / b).rglob("*.html")
        )

    @rule(
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
        kind=st.sampled_from(["semantic", "episodic", "procedural"]),
    )
    def write(self, words: list[str], kind: str) -> None:
        self.counter += 1
        self.corpus.write(
            title=f"{' '.join(words)} {self.counter}",
            type=kind,
            claim=f"The {' '.join(words)} fact {self.counter}.",
            tag=words[:1],
            entity=[f"topic:{words[-1]}"],
        )

    @precondition(lambda self: bool(self._live()))
    @rule(i=st.integers(0, 100), data=st.data())
    def correct_or_archive(self, i: int, data: st.DataObject) -> None:
        live = self._live()
        path = live[i % len(live)]
        try:
            if data.draw(st.booleans()):
                self.counter += 1
                self.corpus.correct(path, claim=f"Corrected {self.counter}.")
            else:
                self.corpus.archive(path)
        except MemhtmlError:
            pass  # e.g. the target is dirty: refusing is correct behaviour

    @precondition(lambda self: len(self._live()) >= 2)
    @rule(i=st.integers(0, 100), j=st.integers(0, 100))
    def link(self, i: int, j: int) -> None:
        live = self._live()
        a, b = live[i % len(live)], live[j % len(live)]
        with contextlib.suppress(MemhtmlError):  # refusing a bad link is correct
            self.corpus.link(a, "relates_to", b)

    @precondition(lambda self: bool(self._live()))
    @rule(i=st.integers(0, 100), commit=st.booleans())
    def hand_edit(self, i: int, commit: bool) -> None:
        live = self._live()
        path = live[i % len(live)]
        target = self.root / path
        text = target.read_text()
        self.counter += 1
        target.write_text(text.replace("</mark>", f" edited {self.counter}</mark>", 1))
        if commit:
            git(self.root, "commit", "-qam", "hand edit")

    @precondition(lambda self: bool(self._live()))
    @rule(i=st.integers(0, 100), commit=st.booleans())
    def hand_move(self, i: int, commit: bool) -> None:
        live = self._live()
        path = live[i % len(live)]
        self.counter += 1
        dest = f"resources/moved/m{self.counter}.html"
        (self.root / "resources" / "moved").mkdir(parents=True, exist_ok=True)
        git(self.root, "mv", path, dest)
        if commit:
            git(self.root, "commit", "-qm", "hand move")

    @precondition(lambda self: bool(self._live()))
    @rule(i=st.integers(0, 100))
    def hand_delete(self, i: int) -> None:
        live = self._live()
        (self.root / live[i % len(live)]).unlink()

    @precondition(lambda self: bool(self._live()))
    @rule(i=st.integers(0, 100))
    def hand_break(self, i: int) -> None:
        """A hand edit that makes the file unparseable (a datetime nobody can sort)."""
        live = self._live()
        target = self.root / live[i % len(live)]
        text = target.read_text()
        start = text.find('name="memhtml-created" content="')
        if start >= 0:
            start += len('name="memhtml-created" content="')
            end = text.index('"', start)
            target.write_text(text[:start] + "last tuesday" + text[end:])

    @rule(i=st.integers(0, 100))
    def hand_revert(self, i: int) -> None:
        """`git checkout -- FILE` of one uncommitted change: edits undone, deletions restored."""
        out = subprocess.run(
            ["git", "diff", "--name-only", "HEAD"],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        changed = sorted(p for p in out if p.endswith(".html"))
        if changed:
            path = changed[i % len(changed)]
            subprocess.run(
                ["git", "checkout", "HEAD", "--", path],
                cwd=self.root,
                capture_output=True,
                check=False,
            )

    @rule()
    def update(self) -> None:
        self.corpus.index.update()

    @rule()
    def read(self) -> None:
        """A search catches the index up on its own."""
        result = self.corpus.search("alpha fact")
        assert result.index_fresh

    def teardown(self) -> None:
        if not hasattr(self, "corpus"):
            return
        try:
            # What a read sees, with no `index update` in between.
            assert self.corpus.search("fact").index_fresh
            assert self.corpus.index.status()["index_fresh"]
            incremental = snapshot(self.corpus.conn)
            self.corpus.close()
            assert incremental == fresh_rebuild_snapshot(self.root)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


IndexMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MEMHTML_STATEFUL_EXAMPLES", "30")),
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestIndexReproducibility = IndexMachine.TestCase
