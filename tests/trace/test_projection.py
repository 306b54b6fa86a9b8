"""A plane grown by many passes equals one pass: any split of the bytes, any partial lines."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memhtml.trace.scan import scan
from memhtml.trace.store import TraceStore
from memhtml.trace.synth import write_corpus
from tests.trace.conftest import NOW, rows


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, bytes]:
    """Two sessions (one with a subagent sidecar): relative path -> final bytes."""
    source = tmp_path_factory.mktemp("source")
    made = write_corpus(source / "projects", sessions=2, seed=11, session_bytes=6_000)
    files = [s.path for s in made] + [p for s in made for p in s.sidecars]
    return {p.relative_to(source): p.read_bytes() for p in files}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.floats(0, 1), min_size=1, max_size=4), junk=st.booleans())
def test_any_sequence_of_appends_ends_where_one_pass_does(
    transcripts: dict[Path, bytes], cuts: list[float], junk: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        extra = b'{"type":"user","uuid":"x","message":{"content":"junk \\u00e9"}}\n{bad\n'
        finals = {rel: data + (extra if junk else b"") for rel, data in transcripts.items()}
        for rel in finals:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(b"")
        with TraceStore.open(root / "grown.db") as grown:
            done = dict.fromkeys(finals, 0)
            for i, cut in enumerate(sorted(cuts)):
                for rel, data in finals.items():
                    upto = int(len(data) * cut)
                    if upto > done[rel]:
                        with (root / rel).open("ab") as fh:
                            fh.write(data[done[rel] : upto])
                        done[rel] = upto
                        os.utime(root / rel, ns=(i, 10**9 * (i + 1)))
                scan(grown, root / "projects", now=NOW)
            for rel, data in finals.items():
                with (root / rel).open("ab") as fh:
                    fh.write(data[done[rel] :])
                os.utime(root / rel, ns=(99, 10**9 * 99))
            scan(grown, root / "projects", now=NOW)
            with TraceStore.open(root / "fresh.db") as fresh:
                scan(fresh, root / "projects", now=NOW)
                assert rows(grown) == rows(fresh)
