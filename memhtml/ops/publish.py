"""`memhtml publish`: the corpus as a static site, committed or written elsewhere.

The rendering is pure (`memhtml.html.listing.render_site`); this module reads
its input from the index (`site_artifacts`, which the sleep `integrity` phase
can call on its own connection), works out which generated files change
(`site_changes`), and either commits them through the corpus's write path
(`Corpus.commit_changes` under the repository lock: one commit, nothing when
nothing changed) or, with `out`, writes the site and a copy of every memory it
lists into a directory outside the corpus without committing anything.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import DirtyTreeError, InvalidFlagError, OutInsideRepoError
from memhtml.contracts.vocab import PARA_BUCKETS
from memhtml.html.listing import (
    LISTING_NAME,
    SITEMAP_NAME,
    STYLESHEET_NAME,
    VIEW_DIR,
    ListedMemory,
    ListedRun,
    ListedSkip,
    render_site,
    run_from_report,
)
from memhtml.store.git import blob_sha, commit_subject

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

# Root-level files publish owns; below the memory folders it owns every `index.html`,
# and everything under the root's memhtml-view/ (a memory's view page).
ROOT_FILES: Final[tuple[str, ...]] = (LISTING_NAME, SITEMAP_NAME, STYLESHEET_NAME)
VIEW_PREFIX: Final = VIEW_DIR + "/"
RUNS_DIR: Final = ".memhtml/sleep"  # the committed sleep reports the front page lists
# Generated views merge like the listings: a conflict is settled by publishing again.
_DIRTY_SHOWN: Final = 20
_BODY_LINES: Final = 200

_FILES_SQL: Final = (
    # Archived is the path's bucket (the index's rule), never the status meta.
    "SELECT path, title, gist, memory_type,"
    " CASE WHEN archived = 1 THEN 'archived' ELSE 'active' END,"
    " updated_at, archived_at, task_status, superseded_by, created_at, event_at,"
    " valid_from, valid_until, due_at, confidence, importance, author FROM files ORDER BY path"
)
_LINKS_SQL: Final = "SELECT src_path, rel, dst_path FROM edges WHERE derived = 0"
_TAGS_SQL: Final = "SELECT path, tag FROM file_tags ORDER BY path, tag"
_ENTITIES_SQL: Final = (
    "SELECT path, entity_type || ':' || entity_name FROM file_entities"
    " ORDER BY path, entity_type, entity_name"
)
_FACETS_SQL: Final = "SELECT path, name, value FROM file_facets ORDER BY path, ordinal"
_SKIPPED_SQL: Final = "SELECT path, reason FROM skipped_files ORDER BY path"


def _grouped(conn: sqlite3.Connection, sql: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for path, *rest in conn.execute(sql):
        out.setdefault(str(path), []).append(rest[0] if len(rest) == 1 else tuple(rest))
    return out


def site_inputs(conn: sqlite3.Connection) -> tuple[list[ListedMemory], list[ListedSkip]]:
    """Every indexed memory (archived included) with its authored links, tags, entities and
    facets, and the skipped files."""
    links: dict[str, list[tuple[str, str]]] = {}
    for src, rel, dst in conn.execute(_LINKS_SQL):
        links.setdefault(str(src), []).append((str(rel), str(dst)))
    from memhtml.domain.secrets import redact

    # A memory stored with --allow-secret keeps its text; the site's pages never show it.
    tags, entities = _grouped(conn, _TAGS_SQL), _grouped(conn, _ENTITIES_SQL)
    facets = _grouped(conn, _FACETS_SQL)
    memories = [
        ListedMemory(
            path=row[0],
            title=redact(row[1]),
            gist=redact(row[2]),
            memory_type=row[3],
            status=row[4],
            updated_at=row[5],
            archived_at=row[6],
            task_status=row[7],
            superseded_by=row[8],
            links=tuple(sorted(links.get(row[0], ()))),
            created_at=row[9],
            event_at=row[10],
            valid_from=row[11],
            valid_until=row[12],
            due_at=row[13],
            confidence=row[14],
            importance=row[15],
            author=row[16],
            tags=tuple(tags.get(row[0], ())),
            entities=tuple(entities.get(row[0], ())),
            facets=tuple(facets.get(row[0], ())),
        )
        for row in conn.execute(_FILES_SQL)
    ]
    skipped = [ListedSkip(str(p), str(r)) for p, r in conn.execute(_SKIPPED_SQL)]
    return memories, skipped


def sleep_runs(reports: Iterable[tuple[str, bytes]]) -> list[ListedRun]:
    """The runs whose reports (`.memhtml/sleep/<run-id>.html`, path and bytes) a tree holds."""
    runs = (run_from_report(path, data) for path, data in reports)
    return [r for r in runs if r is not None]


def _reports_on_disk(root: Path) -> list[tuple[str, bytes]]:
    folder = root / RUNS_DIR
    if not folder.is_dir():
        return []
    return [
        (f"{RUNS_DIR}/{f.name}", f.read_bytes())
        for f in sorted(folder.iterdir())
        if f.name.endswith(".html") and f.is_file()
    ]


def site_artifacts(
    conn: sqlite3.Connection, reports: Iterable[tuple[str, bytes]] = ()
) -> dict[str, bytes]:
    """The generated files for the index `conn` holds and the sleep `reports` (path, bytes)
    of its tree, `{path: bytes}` in path order."""
    return render_site(*site_inputs(conn), sleep_runs(reports))


def is_owned(path: str) -> bool:
    """True for a path publish regenerates or removes: the root files it writes, every
    `index.html` below the memory folders (a generated name: never a memory) and every
    file under `memhtml-view/`."""
    if path in ROOT_FILES or path.startswith(VIEW_PREFIX):
        return True
    return path.split("/", 1)[0] in PARA_BUCKETS and path.rsplit("/", 1)[-1] == LISTING_NAME


def site_changes(
    artifacts: Mapping[str, bytes], held: Mapping[str, str]
) -> tuple[dict[str, bytes], list[str]]:
    """What turns a tree into the published site: (writes, removals).

    `held` maps each owned path the tree holds to its blob id. A write is an
    artifact whose bytes the tree does not hold; a removal is an owned listing
    the site no longer has (its directory holds nothing now).
    """
    writes = {p: data for p, data in artifacts.items() if held.get(p) != blob_sha(data)}
    removals = sorted(p for p in held if p not in artifacts and is_owned(p))
    return writes, removals


def publish(corpus: Corpus, *, out: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Regenerate the site: commit it (one commit, none when nothing changed) or write `out`."""
    target = None if out is None else _out_dir(corpus.root, Path(out))
    with corpus.lock.hold():
        corpus.recover()
        corpus.catch_up()  # the index equals HEAD plus the working tree (we hold the lock)
        memories, skipped = site_inputs(corpus.conn)
        reports = _reports_on_disk(corpus.root)
        artifacts = render_site(memories, skipped, sleep_runs(reports))
        counts = {
            "memories": len(memories),
            "archived": sum(1 for m in memories if m.status == "archived"),
            "unparseable": sum(1 for s in skipped if s.duplicate_of is None),
            "duplicates": sum(1 for s in skipped if s.duplicate_of is not None),
        }
        if target is not None:
            listed = [m.path for m in memories] + [s.path for s in skipped if s.duplicate_of]
            listed += [path for path, _ in reports]
            return {**_write_out(corpus.root, target, artifacts, listed), **counts}
        return {**_commit(corpus, artifacts), **counts}


def _commit(corpus: Corpus, artifacts: dict[str, bytes]) -> dict[str, Any]:
    from memhtml.store.files import FileChange, resolve_inside, write_atomic

    dirty = sorted(str(p) for (p,) in corpus.conn.execute("SELECT path FROM worktree_overlay"))
    if dirty:
        from memhtml.ops.dirty import clean_tree_suggestions

        shown = ", ".join(dirty[:_DIRTY_SHOWN]) + (" ..." if len(dirty) > _DIRTY_SHOWN else "")
        raise DirtyTreeError(
            f"{len(dirty)} memory file(s) have uncommitted edits ({shown}); the committed"
            " listings must describe the commit they land in",
            suggestions=[
                *clean_tree_suggestions(corpus.root, dirty),
                "memhtml publish --out DIR  (writes the site elsewhere and commits nothing)",
            ],
            details={"paths": dirty},
        )
    head = corpus.git.head()
    held = (
        {
            e.path: e.sha
            for e in corpus.git.ls_tree(
                head, (*ROOT_FILES, VIEW_PREFIX, *(f"{b}/" for b in PARA_BUCKETS))
            )
            if is_owned(e.path)
        }
        if head
        else {}
    )
    writes, removals = site_changes(artifacts, held)
    # A generated file HEAD already holds but the working tree altered goes back without a commit.
    restored = [
        p for p, data in artifacts.items() if p not in writes and _disk(corpus.root / p) != data
    ]
    for p in restored:
        write_atomic(resolve_inside(corpus.root, p), artifacts[p])
    changes = [FileChange(p, data) for p, data in writes.items()]
    changes += [FileChange(p, None) for p in removals]
    sha = None
    if changes:
        subject = commit_subject("publish", f"regenerate {len(artifacts)} generated artifacts")
        body = [f"write {c.path}" if c.content is not None else f"remove {c.path}" for c in changes]
        more = [f"... and {len(body) - _BODY_LINES} more"] if len(body) > _BODY_LINES else []
        lines = [subject, "", *body[:_BODY_LINES], *more, "", "Memhtml-Op: publish", ""]
        message = "\n".join(lines)
        sha, _, _ = corpus.commit_changes(changes, message)
    return {
        "root": str(corpus.root),
        "out": None,
        "artifacts": len(artifacts),
        "written": len(writes) + len(restored),
        "paths": sorted([*writes, *restored]),
        "removed": removals,
        "copied": 0,
        "commit_sha": sha,
    }


def _disk(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _out_dir(root: Path, out: Path) -> Path:
    """The resolved --out directory; refused inside the root, or where it would write into it."""
    target = out.expanduser().resolve()
    real_root = root.resolve()
    if target == real_root or real_root in target.parents:
        raise OutInsideRepoError(
            f"--out {out} is inside the memory root {root}",
            suggestions=[
                "memhtml publish (commits the site into the repository)",
                "pick a directory outside the memory root",
            ],
        )
    if target.exists() and not target.is_dir():
        raise InvalidFlagError(f"--out {out} exists and is not a directory")
    return target


def _write_out(
    root: Path, target: Path, artifacts: Mapping[str, bytes], listed: Iterable[str]
) -> dict[str, Any]:
    """Write the site and a copy of every listed memory under `target`; nothing is deleted."""
    from memhtml.store.files import write_atomic

    real_root = root.resolve()
    checked: dict[Path, bool] = {}

    def put(rel: str, data: bytes) -> bool:
        dest = target / rel
        parent = dest.parent
        if parent not in checked:  # a symlink under --out must not lead into the corpus
            real = parent.resolve()
            checked[parent] = real == real_root or real_root in real.parents
        if checked[parent]:
            raise OutInsideRepoError(
                f"--out {target}: {rel} would be written inside the memory root {root}"
            )
        if _disk(dest) == data:
            return False
        write_atomic(dest, data)
        return True

    written = [p for p, data in artifacts.items() if put(p, data)]
    copied = 0
    for rel in listed:
        data = _disk(root / rel)
        if data is not None and put(rel, data):
            copied += 1
    return {
        "root": str(root),
        "out": str(target),
        "artifacts": len(artifacts),
        "written": len(written),
        "paths": written,
        "removed": [],
        "copied": copied,
        "commit_sha": None,
    }
