"""The `serve` command group: the MCP server, run in-process on stdio."""

from __future__ import annotations

from typing import Final

from memhtml.surface import mcp_catalog
from memhtml.surface.spec import Command

H = "memhtml.cli.handlers"

MCP_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "serve mcp",
        "Serve the store to MCP clients over stdio (the memhtml-mcp server) until stdin closes.",
        "serve.exit",
        f"{H}.serve:serve_mcp",
        errors=("ERR_REPO_REQUIRED",),
        examples=("memhtml serve mcp --repo ~/memhtml",),
        details=(
            "While serving, stdout carries only the MCP protocol and logs go to stderr; the"
            " serve.exit envelope (uptime, tool calls, errors) is printed once the client"
            " closes stdin. It serves " + mcp_catalog.summary()
        ),
    ),
)
