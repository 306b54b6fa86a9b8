"""Research evaluation toolkit.

``memhtml.eval.benchmarks`` turns public memory benchmarks (LoCoMo,
MemoryAgentBench FactConsolidation, BEAM, LongMemEval) into neutral records and
implements the benchmarks' own retrieval metrics. Everything here is pure: no
memory store, index or model is touched; harnesses feed these records through
memhtml's real write path and search.
"""
