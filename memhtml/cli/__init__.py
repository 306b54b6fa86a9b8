"""The `memhtml` command line: a thin adapter over `memhtml.ops`.

One command table (`table.py`) drives parsing, the manifest and AGENTS.md.
"""
