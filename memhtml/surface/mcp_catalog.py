"""The names the MCP server serves, as plain data for the manifest and AGENTS.md.

The manifest (and `memhtml serve mcp --help`) must name what the server
serves without importing the SDK or the tools' pydantic models, so the names
live here; tests/test_docs_truth.py holds them to the served `TOOLS` and
resources, and the counts the README and docs state to them. A new tool is
its `ToolSpec` in memhtml.mcp.tools plus its name here.
"""

from __future__ import annotations

from typing import Final

SERVER_COMMAND: Final = "memhtml-mcp"
# In the order tools/list answers them: the original memhtml's fifteen, then ours.
TOOL_NAMES: Final[tuple[str, ...]] = (
    "memory_write",
    "memory_write_batch",
    "memory_read",
    "memory_search",
    "memory_recall",
    "memory_correct",
    "memory_link",
    "memory_neighbors",
    "memory_resolve",
    "memory_archive",
    "memory_reinforce",
    "memory_list",
    "memory_status",
    "exec",
    "trace_search",
    "trace_links",
    "task_add",
    "task_status",
    "task_list",
)
RESOURCE_TEMPLATES: Final[tuple[str, ...]] = (
    "memhtml://file/{path}",
    "memhtml://at/{commit}/{path}",
    "memhtml://sleep/{run_id}",
)
RESOURCES: Final[tuple[str, ...]] = ("memhtml://manifest",)


def summary() -> str:
    """One sentence naming the tools and resources, with the count."""
    return (
        f"{len(TOOL_NAMES)} tools: {', '.join(TOOL_NAMES)}. Resources:"
        f" {', '.join((*RESOURCE_TEMPLATES, *RESOURCES))}."
    )
