"""A path is an identity: which paths the write doors may never hand to a new memory.

A citation of a memory is its path. If an archived or moved memory's path were
given to an unrelated new fact, every old citation (links in other memories,
notes, commit messages) would silently resolve to the wrong fact, and
supersedence chains could loop. So a path any memory ever held stays retired.
"""

from __future__ import annotations

import sqlite3
from typing import Final

_EVER_HELD: Final = """
SELECT 1 FROM retired_paths WHERE path = :p
UNION ALL SELECT 1 FROM files WHERE path = :p
UNION ALL SELECT 1 FROM worktree_overlay WHERE path = :p
UNION ALL SELECT 1 FROM files WHERE origin_path = :p AND archived = 1
UNION ALL SELECT 1 FROM files WHERE superseded_by = :p
UNION ALL SELECT 1 FROM edges WHERE dst_path = :p AND derived = 0
LIMIT 1
"""


def path_ever_held(conn: sqlite3.Connection, path: str) -> bool:
    """True when `path` is or was a memory's identity, as far as the index knows.

    Sources: paths HEAD's history deleted or moved away (`retired_paths`), paths
    HEAD holds (even when the working tree deleted them), paths the working tree
    touched, origins of archived memories, supersedence targets, and the targets
    of authored links (a dangling link must not come to point at a new fact).
    """
    return conn.execute(_EVER_HELD, {"p": path}).fetchone() is not None
