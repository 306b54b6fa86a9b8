"""The run index: a private projection of the branch tip, kept current after every phase commit.

At the start of a run the main index (caught up under the repository lock) and
the state plane are copied with SQLite's backup API into the run's scratch
folder under `.git`, each into a temporary name renamed into place once whole,
so a kill mid-copy leaves no half copy that a resume could take for the run's
index. The run attaches its own copy of the state plane as `state`: usage rows
follow the memories the run moves there (the indexer moves them on every
rename), and nothing of a run reaches main's state.db before a merge, which
applies the same moves from the pending ledger. After each phase commit exactly
the committed paths are reprojected (`Indexer.apply_commit`), so a later phase
reads what earlier phases did. `update()` and `rebuild()` are never called on
it: they diff against the working tree's HEAD, which is main, not the branch.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from memhtml.contracts.errors import StorageError
from memhtml.domain.rrf import rrf_contribution_sql
from memhtml.index.db import BUSY_TIMEOUT_MS, watermark
from memhtml.index.indexer import Indexer, IndexReport, indexable
from memhtml.ops.corpus import Corpus
from memhtml.store.files import FileChange

if TYPE_CHECKING:
    from memhtml.embed.base import Embedder
    from memhtml.embed.matrix import LoadedMatrix
    from memhtml.html import MemoryDocument
    from memhtml.store.branch import CommitTree
    from memhtml.store.git import Git

INDEX_COPY: Final = "index.db"
STATE_COPY: Final = "state.db"
BASE_STATE: Final = "state.base.db"  # the state plane as the night found it


def _cosine_distance_blobs(a: bytes | None, b: bytes | None) -> float | None:
    from memhtml.domain.vectors import cosine_distance_blobs

    return cosine_distance_blobs(a, b)


def _uri(path: Path, read_only: bool) -> str:
    return "file:" + quote(str(path.absolute())) + ("?mode=ro" if read_only else "")


def open_index(
    index_path: Path,
    state_path: Path,
    *,
    read_only: bool = False,
    state_read_only: bool = True,
) -> sqlite3.Connection:
    """A connection to an index file with a state plane attached as `state`.

    `read_only` opens the index itself read-only too (`sleep plan` over main's
    index); `state_read_only` False attaches the state plane writable (a run's
    own copy, never main's).
    """
    try:
        conn = sqlite3.connect(
            _uri(index_path, read_only),
            uri=True,
            isolation_level=None,
            timeout=BUSY_TIMEOUT_MS / 1000,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if not read_only:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = OFF")  # scratch: a killed run copies it again
        conn.execute("ATTACH DATABASE ? AS state", (_uri(state_path, state_read_only),))
        if not state_read_only:
            conn.execute("PRAGMA state.journal_mode = WAL")
            conn.execute("PRAGMA state.synchronous = OFF")
        conn.create_function("vector_distance_cos", 2, _cosine_distance_blobs, deterministic=True)
        conn.create_function("memhtml_rrf", 3, rrf_contribution_sql, deterministic=True)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open the run index at {index_path}: {exc}") from exc
    return conn


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def _backup(source: sqlite3.Connection, schema: str, target: Path) -> None:
    """Copy one schema of `source` whole into `target`, through a temporary name.

    The copy is renamed into place only once SQLite finished it: a kill during
    the copy leaves the temporary file (removed by the next copy), never a
    partial `target`.
    """
    temp = target.with_name(target.name + ".copying")
    _remove_database(temp)
    dest = sqlite3.connect(str(temp), isolation_level=None)
    try:
        source.backup(dest, name=schema)
        dest.execute("PRAGMA journal_mode = DELETE")  # one file to rename, no -wal beside it
    except sqlite3.Error as exc:
        raise StorageError(f"cannot copy the {schema} plane into {target}: {exc}") from exc
    finally:
        dest.close()
    _remove_database(target)
    os.replace(temp, target)


def _usable(conn: sqlite3.Connection) -> bool:
    """True when a reopened run index is a whole copy: intact, with a watermark, and its
    state plane holds the usage table (what a kill mid-copy could not leave)."""
    try:
        if conn.execute("PRAGMA main.quick_check").fetchone()[0] != "ok":
            return False
        if conn.execute("PRAGMA state.quick_check").fetchone()[0] != "ok":
            return False
        has = conn.execute(
            "SELECT (SELECT count(*) FROM main.sqlite_master WHERE type = 'table'"
            " AND name IN ('index_state', 'files')),"
            " (SELECT count(*) FROM state.sqlite_master WHERE type = 'table' AND name = 'access')"
        ).fetchone()
        return tuple(has) == (2, 1) and watermark(conn) is not None
    except sqlite3.Error:
        return False


class _BranchIndexer(Indexer):
    """The indexer with the branch tip, not the working tree, as the place files are read."""

    def __init__(self, conn: sqlite3.Connection, git: Git, root: Path, clock: Any) -> None:
        super().__init__(conn, git, root, clock)
        self.tree: CommitTree | None = None

    def _read_worktree(self, paths: Any) -> dict[str, bytes | None]:
        # Only `_retry_duplicates` reads "the tree" during apply_commit: here it is the tip.
        tree = self.tree
        return {p: (tree.get(p) if tree else None) for p in paths if indexable(p)}


class RunIndex:
    """The run's own index (`<scratch>/index.db`) and the indexer that keeps it at the tip."""

    def __init__(self, corpus: Corpus, folder: Path, conn: sqlite3.Connection) -> None:
        self.corpus = corpus
        self.folder = folder
        self.conn = conn
        self.indexer = _BranchIndexer(conn, corpus.git, corpus.root, corpus.clock)

    @property
    def path(self) -> Path:
        """The index file."""
        return self.folder / "index.db"

    @property
    def state_path(self) -> Path:
        """The run's own copy of the state plane."""
        return self.folder / STATE_COPY

    @classmethod
    def copy_main(cls, corpus: Corpus, folder: Path) -> RunIndex:
        """Copy main's index and state plane (the caller holds the repository lock and
        caught the index up)."""
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / INDEX_COPY
        _remove_database(target)  # gone first: a kill below leaves no index to reopen
        _backup(corpus.conn, "state", folder / STATE_COPY)
        _backup(corpus.conn, "main", target)
        conn = open_index(target, folder / STATE_COPY, state_read_only=False)
        # The copy is the tree at main's HEAD: nothing of the working tree belongs in it.
        conn.execute("DELETE FROM worktree_overlay")
        return cls(corpus, folder, conn)

    def keep_base_state(self) -> None:
        """Keep the state plane as the night found it (`state.base.db`, beside the run's own
        copy, which the night changes as usage follows its moves): a merge that refuses
        changes rebuilds the night from exactly this."""
        _backup(self.conn, "state", self.folder / BASE_STATE)

    @classmethod
    def copy_base(cls, corpus: Corpus, folder: Path, base_state: Path | None) -> RunIndex:
        """A fresh copy of main's index (the caller holds the repository lock and caught it
        up) with `base_state` as its state plane when given (else main's, as it is now)."""
        index = cls.copy_main(corpus, folder)
        if base_state is None or not base_state.is_file():
            return index
        index.conn.close()
        source = sqlite3.connect(str(base_state))
        try:
            _backup(source, "main", folder / STATE_COPY)
        finally:
            source.close()
        conn = open_index(folder / INDEX_COPY, folder / STATE_COPY, state_read_only=False)
        return cls(corpus, folder, conn)

    @classmethod
    def reopen(cls, corpus: Corpus, folder: Path) -> RunIndex | None:
        """The run index a previous process of this run left, when it is a whole copy
        (None: absent, torn, a copy a kill cut short, or one without its state plane)."""
        target, state = folder / INDEX_COPY, folder / STATE_COPY
        if not target.is_file() or not state.is_file():
            return None
        try:
            conn = open_index(target, state, state_read_only=False)
        except StorageError:
            return None
        if not _usable(conn):
            conn.close()
            return None
        return cls(corpus, folder, conn)

    @classmethod
    def open_or_copy(cls, corpus: Corpus, folder: Path) -> RunIndex:
        """The run's index as a previous process left it, else a fresh copy of main's (the
        caller holds the repository lock and caught main's index up)."""
        index = cls.reopen(corpus, folder)
        held = index.watermark() if index is not None else None
        if index is not None and held is not None and corpus.git.resolve_commit(held):
            return index
        if index is not None:
            index.close()
        return cls.copy_main(corpus, folder)

    def watermark(self) -> str | None:
        """The commit this index projects."""
        return watermark(self.conn)

    def apply(
        self,
        parent: str,
        new: str,
        changes: Sequence[FileChange],
        tree: CommitTree,
        docs: Mapping[bytes, MemoryDocument] | None = None,
    ) -> IndexReport:
        """Reproject exactly the paths a commit from `parent` to `new` changed."""
        if self.watermark() != parent:
            raise StorageError(
                f"the run index projects {self.watermark()}, not the commit's parent {parent}"
            )
        self.indexer.tree = tree
        rows = [
            (
                c.path,
                tree.get(c.path) if c.content is None and c.moved_from else c.content,
                c.moved_from,
            )
            for c in changes
        ]
        return self.indexer.apply_commit(parent, new, rows, docs)

    def catch_up_to(self, tip: str, tree: CommitTree) -> IndexReport | None:
        """Reproject whatever differs between the commit this index holds and `tip`."""
        held = self.watermark()
        if held == tip:
            return None
        if held is None:
            raise StorageError("the run index has no watermark")
        diff = self.corpus.git.diff(held, tip)
        tree.prefetch(d.path for d in diff if d.status != "D")
        changes = [
            FileChange(d.path, None)
            if d.status == "D"
            else FileChange(d.path, tree.get(d.path), d.old_path if d.status == "R" else None)
            for d in diff
        ]
        return self.apply(held, tip, changes, tree)

    def embed(self, embedder: Embedder | None, paths: Sequence[str], clock: str) -> dict[str, Any]:
        """Vectors for new chunks of `paths` (the matrix cache lives in the scratch folder)."""
        if embedder is None or not paths:
            return {"embedded": 0}
        from memhtml.index.embedding import embed_missing, space_matches

        if not space_matches(self.conn, embedder):
            return {"embedded": 0, "error": "vector space differs"}
        return embed_missing(self.conn, embedder, self.folder, paths=paths, clock=clock).to_data()

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


class BranchCorpus(Corpus):
    """A Corpus whose index is a run index: search ranks the branch tip exactly as main would.

    It never catches up with the working tree (that is main), and its vector
    matrix cache lives in the run's scratch folder, never in main's.
    """

    def __init__(self, main: Corpus, run_index: RunIndex) -> None:
        super().__init__(main.root, embedder=main.embedder_name, require_repo=False)
        self.clock = main.clock
        self._conn = run_index.conn
        self._vectors_root = run_index.folder

    def catch_up(self) -> bool:
        """The run index is exact by construction."""
        return True

    def begin_catch_up(self) -> Any:
        """The run index is exact by construction."""
        return True

    def end_catch_up(self, probe: Any) -> bool | None:
        """The run index is exact by construction."""
        return True

    def vector_matrix(self) -> LoadedMatrix | None:
        """The matrix of the run index's vectors, cached in the scratch folder."""
        from memhtml.index.embedding import stored_space, sync_matrix

        _, _, epoch = stored_space(self.conn)
        if epoch is None:
            return None
        if self._matrix is not None and self._matrix[0] == epoch and self._matrix[1] is not None:
            max_seq = self.conn.execute("SELECT coalesce(max(seq), 0) FROM embeddings").fetchone()[
                0
            ]
            if self._matrix[1].max_seq >= max_seq:
                return self._matrix[1]
        loaded = sync_matrix(self.conn, self._vectors_root, epoch)
        self._matrix = (epoch, loaded)
        return loaded

    def close(self) -> None:
        """The run index owns the connection."""
        self._conn = None
