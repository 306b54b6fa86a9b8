"""memhtml: long-term memory for AI agents that people can trust.

A git repository of semantic HTML5 files (one fact per file) is the system of
record; a rebuildable SQLite index serves four-arm fused retrieval.

    import memhtml
    memhtml.init("~/memhtml")  # once: git repo, PARA folders, merge driver
    corpus = memhtml.open("~/memhtml")
    corpus.write(title="...", claim="...", type="semantic")
    corpus.search("one writer many readers").hits

Importing this package is cheap: heavy parts load on first use.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus
    from memhtml.store.layout import InitReport


def open(root: str | os.PathLike[str] | None = None, **options: Any) -> Corpus:
    """Open the corpus at `root` (default `$MEMHTML_ROOT`, else ~/memhtml)."""
    from memhtml.ops.corpus import open_corpus

    return open_corpus(root, **options)


def init(root: str | os.PathLike[str] | None = None) -> InitReport:
    """Scaffold the memory root at `root` (default as for `open`); idempotent.

    Returns what was found and done (`root`, `created_repo`, `created`,
    `commit_sha`), the data of `memhtml init`; open the corpus with `open(root)`.
    """
    from memhtml.ops.config import resolve_root
    from memhtml.store.layout import init_repo

    return init_repo(resolve_root(root))


__all__ = ["__version__", "init", "open"]
