"""Handlers for the `serve` group."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation


def serve_mcp(inv: Invocation) -> dict[str, Any]:
    """Run the MCP server in this process on stdio; answer once it stops."""
    from memhtml.mcp.server import serve_stdio

    return serve_stdio(inv.repo)
