"""The pending-vector count equals the pending list's length, whatever the gap."""

from __future__ import annotations

from pathlib import Path

import memhtml
from memhtml.index.embedding import count_pending, pending_chunks
from memhtml.store.layout import init_repo


def test_count_pending_equals_the_pending_list(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    init_repo(root)
    # Written with no embedder: every chunk waits for a vector.
    with memhtml.open(root, embedder="off") as c:
        c.apply(
            [
                {"op": "write", "title": f"n{i}", "type": "semantic", "claim": f"Fact {i} holds."}
                for i in range(7)
            ]
        )
        waiting = len(pending_chunks(c.conn, None))
        assert waiting >= 7
        assert count_pending(c.conn) == waiting
    # Embedded: nothing waits, and both agree on zero.
    with memhtml.open(root, embedder="fake") as c:
        c.index.embed()
        assert pending_chunks(c.conn, "fake") == []
        assert count_pending(c.conn) == 0
