"""The MCP adapter: memhtml's operations as MCP tools and resources over stdio.

`memhtml-mcp` (and `memhtml serve mcp`) serve the original memhtml's fifteen
tool names with its input field names, so an agent configured for one works
with the other. Every tool is a thin call into the same operations the CLI
uses and answers with the same envelope the CLI prints.

Importing this package is cheap; the SDK loads only in `memhtml.mcp.server`.
"""

from __future__ import annotations

SERVER_NAME = "memhtml"

__all__ = ["SERVER_NAME"]
