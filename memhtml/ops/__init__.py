"""The composition root: the only layer that reads configuration and wires store, index and seams.

The CLI, the MCP server, the notebooks and the benchmarks all call
`memhtml.open(...)` / :class:`memhtml.ops.corpus.Corpus`.
"""
