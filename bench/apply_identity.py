"""Identity check for the batch write path: same batch, same clock -> same bytes and rows.

Applies one fixed batch (1,000 synthetic writes, plus corrections, archives and
links of existing memories, and a write-check batch) into a fresh copy of the
10k bench store with a fixed clock and fixed git dates, then fingerprints what
landed: the tree HEAD names (so every file's bytes), the commit ids, the
`files` rows, the chunks and every child table, and the FTS5 BM25 top-25 scores
of 200 queries. Run it on two versions of the code and compare the digests:

    python -m bench.apply_identity --out /tmp/after.json [--size 10000]
    python -m bench.apply_identity --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import bm25_top25, digest

NOW = "2026-06-07T08:09:10Z"
GIT_DATE = "2026-06-07T08:09:10+0000"
TABLES = (
    "files",
    "chunks",
    "file_tags",
    "file_entities",
    "file_aliases",
    "file_facets",
    "file_citations",
    "edges",
    "retired_paths",
    "skipped_files",
    "worktree_overlay",
)
IGNORED_COLUMNS = {"indexed_at", "updated_at"}  # wall-clock stamps of the pass, not content


def _table(conn: Any, name: str) -> str:
    cur = conn.execute(f"SELECT * FROM {name}")  # fixed names
    cols = [d[0] for d in cur.description]
    keep = [i for i, c in enumerate(cols) if c not in IGNORED_COLUMNS]
    rows = sorted(
        (tuple(row[i] for i in keep) for row in cur.fetchall()),
        key=lambda r: json.dumps(r, default=repr),
    )
    return digest([[cols[i] for i in keep], rows])


def _queries(conn: Any) -> list[str]:
    words = [
        str(r[0]) for r in conn.execute("SELECT title FROM files ORDER BY path LIMIT 400 OFFSET 37")
    ]
    return [" ".join(w.split()[:3]) for w in words[::2]]


def _ops(root: Path) -> list[list[dict[str, Any]]]:
    from bench.synth import synth_ops

    existing = sorted(
        p.relative_to(root).as_posix()
        for p in (root / "areas").rglob("*.html")
        if p.name != "index.html"
    )
    writes = synth_ops(1000, seed=2, offset=10_000_000)
    mixed: list[dict[str, Any]] = []
    for i in range(0, 40, 4):
        mixed.append({"op": "correct", "target_path": existing[i], "claim": f"Corrected fact {i}."})
        mixed.append({"op": "archive", "path": existing[i + 1], "reason": "stale"})
        mixed.append(
            {"op": "link", "src": existing[i + 2], "rel": "supports", "dst": existing[i + 3]}
        )
    small = synth_ops(20, seed=5, offset=40_000_000)
    return [writes, mixed, small]


def fingerprint(size: int) -> dict[str, Any]:
    """Apply the fixed batches into a fresh copy of the `size` store; digests of the result."""
    import memhtml
    from bench.stores import fresh_copy

    os.environ.update(
        {
            "GIT_AUTHOR_DATE": GIT_DATE,
            "GIT_COMMITTER_DATE": GIT_DATE,
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@localhost",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@localhost",
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = fresh_copy(size, Path(tmp) / "m")
        corpus = memhtml.open(root, embedder="off", now=NOW)
        corpus.index.rebuild(embed=False)
        outcomes = []
        for batch in _ops(root):
            outcome = corpus.apply(batch, continue_on_error=True)
            outcomes.append([outcome.commit_sha, outcome.results])
        corpus.close()
        corpus = memhtml.open(root, embedder="off", now=NOW)
        conn = corpus.conn
        tree = subprocess.run(
            ["git", "-C", str(root), "ls-tree", "-r", "HEAD"],
            capture_output=True,
            check=True,
        ).stdout
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
            capture_output=True,
            check=True,
        ).stdout
        result = {
            "size": size,
            "outcomes": digest(outcomes),
            "commits": [o[0] for o in outcomes],
            "tree": hashlib.sha256(tree).hexdigest(),
            "worktree_clean": status == b"",
            "tables": {name: _table(conn, name) for name in TABLES},
            "bm25_top25": bm25_top25(conn, _queries(conn), exact=False),
        }
        corpus.close()
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2)
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        same = a == b
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                print(f"DIFFERS: {key}: {a.get(key)} != {b.get(key)}")
        print("identical" if same else "DIFFERENT")
        sys.exit(0 if same else 1)
    result = fingerprint(args.size)
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
