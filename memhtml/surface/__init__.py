"""The command surface as data: the command table, the manifest and AGENTS.md.

One table (`table.py`, with the `commands_*.py` groups it gathers) declares
every command, flag, handler path, response type and error code; the CLI
parses from it, and `manifest.py` builds the manifest and AGENTS.md from it
and from the names the MCP server serves (`mcp_catalog.py`). It sits below
both adapters, so `memhtml manifest` and the MCP server's `memhtml://manifest`
resource are one function and neither adapter imports the other's code for it.

Nothing here parses, imports an adapter's framework (typer, the MCP SDK) or
reads configuration: handlers are named by dotted path and loaded by the CLI.
"""
