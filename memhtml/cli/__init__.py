"""The `memhtml` command line: a thin adapter over `memhtml.ops`.

One command table (`memhtml/surface/table.py`) drives parsing, the manifest and
AGENTS.md; the CLI generates its parser from it.
"""
