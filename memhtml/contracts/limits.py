"""How many values a list input may carry: one declaration for every door.

The CLI table's repeatable flags (`Param.max_count`), the MCP tools' list
fields (memhtml/mcp/inputs.py) and the core (`Scope.build`) read the same
numbers, so a caller over a bound is refused the same way whichever door it
came through: ERR_INPUT_TOO_LARGE, naming the field and the bound, before any
work. Each bound is far above what a person or an agent writes by hand and
below what breaks a query: a filter becomes one SQL term per value, and
SQLite refuses an expression deeper than 1,000 (500 tags plus 500 facets did).
"""

from __future__ import annotations

from typing import Final

# The values of one filter of a query or a listing: tags, memory types, facets,
# relations, task statuses (and the diagnostic weight overrides).
MAX_FILTER_VALUES: Final = 64
# The tags, or the entities, of one memory.
MAX_LABELS: Final = 256
# The body paragraphs of one memory (a memory holds at most 1 MiB anyway).
MAX_PARAGRAPHS: Final = 1_000
# The memories one call names: the paths of a reinforce, the tasks one task blocks.
MAX_PATHS: Final = 1_000
# The ops of one memory_write_batch (one commit).
MAX_BATCH_OPS: Final = 10_000
# The characters of one code-mode script (`exec`): the host reads its imports
# before the script runs, and that reading is the script's time too.
MAX_SCRIPT_CHARS: Final = 1_000_000


def too_many(count: int, limit: int) -> str:
    """The refusal's words, the same at every door."""
    return f"{count:,} values; at most {limit:,} are accepted (split the work into several calls)"


def too_many_message(field: str, count: int, limit: int) -> str:
    """The refusal naming its field: `--tag: 100,000 values; at most 64 are accepted (...)`."""
    return f"{field}: {too_many(count, limit)}"
