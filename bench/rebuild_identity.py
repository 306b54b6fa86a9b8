"""Identity check for `index rebuild`: same store, same clock -> the same index, row for row.

Rebuilds a fresh copy of a bench store (with a few uncommitted edits, so the
working-tree merge runs too) under a fixed clock, then fingerprints the index
plane: every table's rows in rowid order (rowids included; the FTS5 shadow
tables `files_fts_*` therefore byte for byte), the schema objects in
sqlite_master order, each table's index list, and the FTS5 BM25 top-25 of 300
queries. Run it on two versions of the code and compare:

    python -m bench.rebuild_identity --out /tmp/after.json [--size 10000 | --store DIR]
    python -m bench.rebuild_identity --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import bm25_top25, digest

NOW = "2026-06-07T08:09:10Z"
GIT_DATE = "2026-06-07T08:09:10+0000"
UNSTAMPED = ("schema_migrations", "sqlite_sequence", "sqlite_stat1")


def _rows(conn: Any, table: str) -> str:
    try:
        cur = conn.execute(f'SELECT rowid, * FROM "{table}" ORDER BY rowid')
    except Exception:  # WITHOUT ROWID: ordered by every column
        width = len(conn.execute(f'SELECT * FROM "{table}" LIMIT 0').description)
        order = ", ".join(str(i + 1) for i in range(width))
        cur = conn.execute(f'SELECT * FROM "{table}" ORDER BY {order}')
    h = hashlib.sha256()
    for row in cur:
        h.update(json.dumps([v.hex() if isinstance(v, bytes) else v for v in row]).encode())
        h.update(b"\n")
    return h.hexdigest()


def _queries(conn: Any, n: int = 300) -> list[str]:
    titles = [str(r[0]) for r in conn.execute("SELECT title FROM files ORDER BY path")]
    step = max(1, len(titles) // n)
    picked = titles[::step][:n]
    # Mixed lengths: one, two and three leading words of a title.
    return [" ".join(t.split()[: 1 + i % 3]) for i, t in enumerate(picked)]


def _dirty(root: Path) -> None:
    """A few uncommitted edits: two edited files, one deleted, one new (a copy: a duplicate)."""
    files = sorted(p for p in (root / "areas").rglob("*.html") if p.name != "index.html")
    for target in (files[5], files[len(files) // 2]):
        text = target.read_text()
        target.write_text(text.replace("</mark>", " rebuild-identity</mark>", 1))
    files[7].unlink()
    (files[9].parent / "zz-copy.html").write_bytes(files[9].read_bytes())


def _copy(store: Path, dest: Path) -> Path:
    """A copy of `store` without its index; committed (fixed dates) if it is no repository."""
    shutil.copytree(store, dest, symlinks=True, ignore=shutil.ignore_patterns(".memhtml"))
    if not (dest / ".git").exists():
        env = {
            **os.environ,
            **{
                f"GIT_{who}_{what}": value
                for who in ("AUTHOR", "COMMITTER")
                for what, value in (("NAME", "b"), ("EMAIL", "b@localhost"), ("DATE", GIT_DATE))
            },
        }
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "store"]):
            subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)
    return dest


def fingerprint(size: int, store: Path | None = None) -> dict[str, Any]:
    """Rebuild a fresh copy of the `size` store (or of `store`) under a fixed clock;
    digests of the index."""
    import memhtml
    from bench.stores import fresh_copy

    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "m"
        root = fresh_copy(size, dest) if store is None else _copy(store, dest)
        _dirty(root)
        corpus = memhtml.open(root, embedder="off", now=NOW)
        report = corpus.index.rebuild(embed=False)
        corpus.close()
        corpus = memhtml.open(root, embedder="off", now=NOW)
        conn = corpus.conn
        master = conn.execute(
            "SELECT type, name, tbl_name, sql FROM main.sqlite_master ORDER BY rowid"
        ).fetchall()
        tables = [name for kind, name, _, sql in master if kind == "table" and sql]
        result = {
            "size": size,
            "projected": report["projected"],
            "skipped": digest(report["skipped"]),
            "schema": digest(master),
            "index_lists": digest(
                {t: conn.execute(f'PRAGMA index_list("{t}")').fetchall() for t in tables}
            ),
            # schema_migrations records when the copy was migrated (the wall clock).
            "tables": {t: _rows(conn, t) for t in tables if t not in UNSTAMPED},
            "bm25_top25": bm25_top25(conn, _queries(conn), exact=True),
        }
        corpus.close()
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--store", type=Path, help="a store (or a tree to commit) instead")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2)
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                print(f"DIFFERS: {key}: {a.get(key)} != {b.get(key)}")
        print("identical" if a == b else "DIFFERENT")
        sys.exit(0 if a == b else 1)
    text = json.dumps(fingerprint(args.size, args.store), indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
