"""The fts arm's BM25 over a cached copy of FTS5's own postings, equal to FTS5's `bm25()`.

FTS5 ranks an OR query by computing `bm25()` for every matching row: it
decodes each row's position lists and looks its size up in the docsize
table, for each row. A broad query at 10k memories matches thousands of rows
(the arm's largest cost, and nearly all of a 100k search's). A process that
searches again and again can keep, per query term, the rows holding it and
how often (read once from FTS5's own index through `fts5vocab`, so the
tokenizer and stemmer are FTS5's), plus every row's size, and score a query
with a few numpy passes instead.

Equality is to the bit, not approximate: `scores` evaluates FTS5's formula
(sqlite's ext/fts5/fts5_aux.c, k1 = 1.2, b = 0.75, IDF floored at 1e-6) with
the same float64 operations in the same order, phrase by phrase, and the
averages come from the same records FTS5 reads. Tests compare it with
`bm25(files_fts)` row for row.

The cache is keyed by FTS5's structure and averages records, which change
with every committed write to the index, so a write by any process drops it.
Loading costs more than one FTS5 query, so nothing is loaded on the first
query after a change: a one-shot CLI search, or a search after every write,
runs FTS5 as before; the second query in a row over an unchanged index loads
what it needs, and later ones are served from memory.

A write this process makes itself (the write doors) patches the cache
instead (`before_write`, `after_write`): the rows of the written paths are the
whole difference (files rows, and so fts rows, change only by path), so their
sizes are read again, the others kept, and every row's length term is
recomputed from the new averages with the same operations. Their text (the
one column, external content `files.fts_text`) is tokenized before and after
by the same tokenizer, and the cached postings of every term they held or
hold lose those rows and gain the new counts. The new sizes must add up to
the averages record's row and token totals, and each written row's token
count must be its docsize, or the patch is refused and the next queries
reload as before.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

    import numpy as np
    import numpy.typing as npt

# FTS5's bm25() constants (fts5_aux.c).
K1: Final = 1.2
B: Final = 0.75
IDF_FLOOR: Final = 1e-6
# Cached postings beyond this many (row, count) entries are evicted, least recently used first:
# ~16 bytes an entry, so ~64 MB at most.
MAX_ENTRIES: Final = 4_000_000
# A write naming more paths than this drops the cache (the next queries reload it).
MAX_PATCH: Final = 512
_TOKENIZE: Final = re.compile(r"tokenize\s*=\s*'([^']*)'", re.IGNORECASE)


@dataclass(frozen=True)
class Posting:
    """The rows holding one term (ascending rowids) and how often each holds it."""

    rows: npt.NDArray[np.int64]
    counts: npt.NDArray[np.float64]


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """One SQLite varint (big-endian, 7 bits a byte, the ninth byte whole) and the next offset."""
    value = 0
    for i in range(8):
        byte = blob[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | blob[at + 8], at + 9


def _varints(blob: bytes) -> list[int]:
    out, at = [], 0
    while at < len(blob):
        value, at = _varint(blob, at)
        out.append(value)
    return out


def _size(blob: bytes) -> int:
    """A docsize record's token count, all columns."""
    return blob[0] if len(blob) == 1 else sum(_varints(blob))


def _texts(conn: sqlite3.Connection, paths: tuple[str, ...]) -> dict[int, str | None]:
    """The files (and fts) rowids of `paths`, whatever their scope, and the text each
    holds in the fts index (its one column, external content: files.fts_text)."""
    if not paths:
        return {}
    marks = ",".join("?" for _ in paths)
    return {
        int(r[0]): r[1]
        for r in conn.execute(f"SELECT id, fts_text FROM files WHERE path IN ({marks})", paths)
    }


@dataclass(frozen=True)
class WriteMark:
    """The cache state a write began over, and its paths' rowids before it."""

    key: tuple[bytes, bytes]
    sizes: npt.NDArray[np.float64]
    paths: tuple[str, ...]
    rows: list[int]
    terms: frozenset[str]  # every term those rows held


def scores(
    postings: list[Posting], n_rows: int, norms: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The rows matching any phrase (ascending) and FTS5's bm25() of each (lower is better).

    One phrase per posting, in the query's order (the order FTS5 sums them in);
    `norms[rowid]` is the row's length term, `row_norms`. A phrase a row does not
    hold adds 0.0 in FTS5's loop, which leaves the sum as it is, so it is skipped.
    """
    import numpy as np

    total = np.zeros(len(norms), np.float64)
    matched = np.zeros(len(norms), np.bool_)
    for p in postings:
        n_hit = len(p.rows)
        idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        if idf <= 0.0:
            idf = IDF_FLOOR
        total[p.rows] += idf * ((p.counts * (K1 + 1.0)) / (p.counts + norms[p.rows]))
        matched[p.rows] = True
    rows = np.flatnonzero(matched)
    return rows, -1.0 * total[rows]


def best_first(
    rows: npt.NDArray[np.int64], score: npt.NDArray[np.float64], first: int
) -> Iterator[tuple[list[int], list[float]]]:
    """`rows` by ascending score (ties by row, as `rows` ascend), a band at a time.

    The first band holds the `first` best and every row tied with the last of
    them, each next band four times as many: a caller that needs only the top
    few sorts only those, and the bands joined are the full order.
    """
    import numpy as np

    done = 0
    lower = -math.inf  # scores are finite: the first band is everything up to its cut
    while done < len(rows):
        want = min(first, len(rows)) - 1
        cut = float(np.partition(score, want)[want]) if want < len(rows) - 1 else math.inf
        band = np.flatnonzero((score > lower) & (score <= cut))
        band = band[np.argsort(score[band], kind="stable")]
        done += len(band)
        lower = cut
        first *= 4
        if len(band):  # many ties at a cut can leave the next band empty
            yield rows[band].tolist(), score[band].tolist()


def row_norms(
    rowids: npt.NDArray[np.int64], sizes: npt.NDArray[np.float64], n_rows: int, n_tokens: int
) -> npt.NDArray[np.float64]:
    """`k1 * (1 - b + b * D / avgdl)` of every row, indexed by rowid (FTS5's operations)."""
    import numpy as np

    avgdl = float(n_tokens) / float(n_rows)
    norms = np.zeros(int(rowids.max()) + 1 if len(rowids) else 0, np.float64)
    norms[rowids] = K1 * ((1 - B) + B * sizes / avgdl)
    return norms


class Postings:
    """Per-connection cache of the fts index's postings and row sizes (see the module doc)."""

    def __init__(self, table: str = "files_fts") -> None:
        self.table = table
        self._key: tuple[bytes, bytes] | None = None
        self._terms: OrderedDict[str, Posting] = OrderedDict()
        self._entries = 0
        # (row count, each row's length term by rowid); None: not loaded, or too sparse to hold.
        self._norms: tuple[int, npt.NDArray[np.float64] | None] | None = None
        self._tokenizer: sqlite3.Connection | None = None
        self._words: dict[str, tuple[str, ...]] = {}
        self._vocab_conn: sqlite3.Connection | None = None
        # Every row's size by rowid (-1: no such row), kept beside the norms for a patch.
        self._sizes: npt.NDArray[np.float64] | None = None
        self.loads = 0  # row sizes read from the whole docsize table (tests count them)
        self.patches = 0  # row sizes and postings patched after this process's own write
        self.term_loads = 0  # postings read through fts5vocab

    # -- the index's state -------------------------------------------------------
    def _state(self, conn: sqlite3.Connection) -> tuple[bytes, bytes] | None:
        rows = dict(
            conn.execute(f"SELECT id, block FROM {self.table}_data WHERE id IN (1, 10)").fetchall()
        )
        if 1 not in rows or 10 not in rows:
            return None
        return bytes(rows[10]), bytes(rows[1])

    def ready(self, conn: sqlite3.Connection) -> bool:
        """True when this query may be served from memory: the index is the one the previous
        query saw. A changed index drops everything cached and answers False."""
        key = self._state(conn)
        if key is None or key != self._key:
            self._key = key
            self._terms.clear()
            self._entries = 0
            self._norms = None
            self._sizes = None
            return False
        return True

    # -- query words as FTS5 tokenizes them -----------------------------------------
    def terms_of(self, conn: sqlite3.Connection, word: str) -> tuple[str, ...]:
        """The tokens FTS5 makes of `word` (its tokenizer, its stemmer), memoised."""
        found = self._words.get(word)
        if found is not None:
            return found
        tok = self._tokenizer_conn(conn)
        tok.execute("INSERT INTO q(rowid, t) VALUES (1, ?)", (word,))
        terms = tuple(
            r[0] for r in tok.execute("SELECT term FROM qv WHERE doc = 1 ORDER BY offset")
        )
        tok.execute("DELETE FROM q")
        if len(self._words) > 50_000:
            self._words.clear()
        self._words[word] = terms
        return terms

    def _tokenizer_conn(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        if self._tokenizer is None:
            sql = conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = ?", (self.table,)
            ).fetchone()
            match = _TOKENIZE.search(sql[0] if sql else "")
            tokenize = match.group(1) if match else "unicode61"
            tok = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            tok.execute(f"CREATE VIRTUAL TABLE q USING fts5(t, tokenize = '{tokenize}')")
            tok.execute("CREATE VIRTUAL TABLE qv USING fts5vocab(q, instance)")
            self._tokenizer = tok
        return self._tokenizer

    # -- postings --------------------------------------------------------------------
    def posting(self, conn: sqlite3.Connection, term: str) -> Posting:
        """The rows holding `term`, loaded through fts5vocab on first use."""
        import numpy as np

        found = self._terms.get(term)
        if found is not None:
            self._terms.move_to_end(term)
            return found
        vocab = self._vocab(conn)
        self.term_loads += 1
        rows = conn.execute(
            f"SELECT doc, count(*) FROM {vocab} WHERE term = ? GROUP BY doc ORDER BY doc",
            (term,),
        ).fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        posting = Posting(np.ascontiguousarray(arr[:, 0]), arr[:, 1].astype(np.float64))
        self._terms[term] = posting
        self._entries += len(rows)
        while self._entries > MAX_ENTRIES and len(self._terms) > 1:
            _, old = self._terms.popitem(last=False)
            self._entries -= len(old.rows)
        return posting

    def _vocab(self, conn: sqlite3.Connection) -> str:
        name = f"temp.memhtml_{self.table}_instance"
        if self._vocab_conn is not conn:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {name}"
                f" USING fts5vocab(main, {self.table}, instance)"
            )
            self._vocab_conn = conn
        return name

    def _row_norms(self, conn: sqlite3.Connection) -> tuple[int, npt.NDArray[np.float64] | None]:
        """The table's row count and every row's length term, read once per index state.

        None for the terms when rowids are so sparse that an array by rowid would
        be mostly holes (a table with many deletes): FTS5 ranks those queries.
        """
        import numpy as np

        if self._norms is None:
            assert self._key is not None
            totals = _varints(self._key[1])  # the averages record: rows, then tokens per column
            n_rows, n_tokens = totals[0], sum(totals[1:])
            ids: list[int] = []
            sizes: list[int] = []
            for rowid, blob in conn.execute(f"SELECT id, sz FROM {self.table}_docsize"):
                ids.append(rowid)
                sizes.append(_size(blob))
            self.loads += 1
            sparse = not ids or n_rows == 0 or max(ids) > 4 * len(ids) + 100_000
            if sparse:
                self._norms, self._sizes = (n_rows, None), None
            else:
                by_row = np.full(max(ids) + 1, -1.0, np.float64)
                by_row[np.array(ids, np.int64)] = np.array(sizes, np.float64)
                self._set_sizes(by_row, n_rows, n_tokens)
        assert self._norms is not None
        return self._norms

    def _set_sizes(self, by_row: npt.NDArray[np.float64], n_rows: int, n_tokens: int) -> None:
        import numpy as np

        ids = np.flatnonzero(by_row >= 0)
        self._sizes = by_row
        self._norms = (n_rows, row_norms(ids, by_row[ids], n_rows, n_tokens))

    # -- this process's own writes ------------------------------------------------------
    def before_write(self, conn: sqlite3.Connection, paths: set[str]) -> WriteMark | None:
        """Before a write of `paths` (under the repository lock, before its index transaction):
        what `after_write` needs to patch the row sizes, or None (the cache drops as ever)."""
        if self.table != "files_fts" or self._sizes is None or len(paths) > MAX_PATCH:
            return None
        from memhtml.index.db import read_snapshot

        ordered = tuple(sorted(paths))
        with read_snapshot(conn):
            if self._key is None or self._state(conn) != self._key:
                return None
            old = _texts(conn, ordered)
        terms = frozenset(t for counts in self._counts(conn, old).values() for t in counts)
        return WriteMark(self._key, self._sizes, ordered, list(old), terms)

    def after_write(self, conn: sqlite3.Connection, mark: WriteMark | None) -> bool:
        """After the write `mark` began (its index transaction committed): the written rows'
        sizes read again, the rest kept. True when patched; False leaves the usual reload."""
        import numpy as np

        from memhtml.index.db import read_snapshot

        if mark is None or self._key != mark.key or self._sizes is not mark.sizes:
            return False
        with read_snapshot(conn):
            key = self._state(conn)
            if key is None:
                return False
            texts = _texts(conn, mark.paths)
            new = list(texts)
            marks = ",".join("?" for _ in new)
            sizes = dict(
                conn.execute(
                    f"SELECT id, sz FROM {self.table}_docsize WHERE id IN ({marks})", new
                ).fetchall()
                if new
                else []
            )
        totals = _varints(key[1])
        n_rows, n_tokens = totals[0], sum(totals[1:])
        top = max([*new, len(mark.sizes) - 1])
        by_row = np.full(top + 1, -1.0, np.float64)
        by_row[: len(mark.sizes)] = mark.sizes
        by_row[np.array(mark.rows, np.int64)] = -1.0
        for rowid, blob in sizes.items():
            by_row[rowid] = _size(blob)
        present = by_row[by_row >= 0]
        # The sizes must be the averages record's: else something else changed meanwhile.
        if n_rows == 0 or len(present) != n_rows or int(present.sum()) != n_tokens:
            return False
        if top > 4 * n_rows + 100_000:  # too sparse to hold (see _row_norms)
            return False
        counts = self._counts(conn, texts)
        # Tokenized here as FTS5 indexed them: each row's count must be its docsize.
        if any(sum(counts[r].values()) != _size(sizes[r]) for r in new):
            return False
        self._key = key
        self._set_sizes(by_row, n_rows, n_tokens)
        self._patch_terms(mark.terms, set(mark.rows) | set(new), counts)
        self.patches += 1
        return True

    def _patch_terms(
        self, old_terms: frozenset[str], rows: set[int], counts: dict[int, dict[str, int]]
    ) -> None:
        """The cached postings of every term the written rows held before or hold now: those
        rows taken out, then the new ones put in with their counts (rows stay ascending)."""
        import numpy as np

        gone = np.array(sorted(rows), np.int64)
        terms = set(old_terms).union(*(c.keys() for c in counts.values()))
        for term in terms:
            cached = self._terms.get(term)
            if cached is None:
                continue
            keep = ~np.isin(cached.rows, gone)
            added = sorted((r, float(c[term])) for r, c in counts.items() if term in c)
            ids = np.concatenate([cached.rows[keep], np.array([a[0] for a in added], np.int64)])
            cnt = np.concatenate([cached.counts[keep], np.array([a[1] for a in added])])
            order = np.argsort(ids, kind="stable")
            self._terms[term] = Posting(
                np.ascontiguousarray(ids[order]), np.ascontiguousarray(cnt[order], np.float64)
            )
            self._entries += len(ids) - len(cached.rows)

    def _counts(
        self, conn: sqlite3.Connection, texts: dict[int, str | None]
    ) -> dict[int, dict[str, int]]:
        """Each row's terms and how often it holds each, tokenized as FTS5 indexes the text
        (the same tokenizer; the table's one column)."""
        tok = self._tokenizer_conn(conn)
        out: dict[int, dict[str, int]] = {rowid: {} for rowid in texts}
        try:
            for rowid, text in texts.items():
                tok.execute("INSERT INTO q(rowid, t) VALUES (?, ?)", (rowid, text))
            for doc, term, n in tok.execute(
                "SELECT doc, term, count(*) FROM qv GROUP BY doc, term"
            ):
                out[int(doc)][str(term)] = int(n)
        finally:
            tok.execute("DELETE FROM q")
        return out

    # -- the arm -----------------------------------------------------------------------
    def ranked(
        self, conn: sqlite3.Connection, words: list[str]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """Every row matching any of `words` (each one FTS5 phrase) and its bm25, rows ascending
        (`best_first` orders them); None when FTS5 should rank this query itself (see `ready`,
        and a word FTS5 reads as several tokens, which is a phrase to match in order)."""
        if not self.ready(conn):
            return None
        terms = []
        for word in words:
            tokens = self.terms_of(conn, word)
            if len(tokens) != 1:
                return None
            terms.append(tokens[0])
        n_rows, norms = self._row_norms(conn)
        if norms is None:
            return None
        postings = [self.posting(conn, t) for t in terms]
        if any(len(p.rows) and p.rows[-1] >= len(norms) for p in postings):
            return None  # a row without a size: not one state of the index (never expected)
        return scores(postings, n_rows, norms)

    def close(self) -> None:
        if self._tokenizer is not None:
            self._tokenizer.close()
            self._tokenizer = None
