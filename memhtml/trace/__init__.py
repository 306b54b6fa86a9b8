"""The trace plane: agent session transcripts indexed beside the memory index.

    discover.py   where transcripts are under the transcript root
    records.py    one JSONL line -> a turn, a session fact, or a problem (pure)
    parser.py     streaming complete lines from a byte offset, bounded memory
    watermark.py  skip / tail / re-read whole (pure)
    store.py      .memhtml/traces/traces.db: migrations, writes, the read API
    scan.py       one indexing pass
    search.py     BM25 over turns
    links.py      sessions <-> memories (from the index and the state plane)
    synth.py      synthetic transcripts for tests and benchmarks

Configuration (the transcript root) is read by memhtml.ops.traces, the
composition root; nothing here reads the environment. docs/traces.md is the
full account.
"""
