"""Stateful property: whatever happened, the incremental index equals a fresh rebuild.

Random sequences of write doors, hand edits (committed or not), `git mv` and
deletions, with index updates at random points. At the end, the row set the
index reached incrementally must equal the one a rebuild at the same HEAD and
working tree produces (indexing timestamps excluded).
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

    @initialize()
    def setup(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memhtml-stateful-"))
        self.root = self.tmp / "memory"
        init_repo(self.root)
        self.corpus: Any = memhtml.open(self.root, embedder="fake")
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

    @rule()
    def update(self) -> None:
        self.corpus.index.update()

    def teardown(self) -> None:
        if not hasattr(self, "corpus"):
            return
        try:
            self.corpus.index.update()
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
