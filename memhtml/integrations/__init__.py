"""Wiring memhtml into coding agents: `integrations install|uninstall|list|doctor|shell` and `hook`.

The host knowledge (where each agent keeps its MCP servers, hooks,
instructions and skills; the names of its events; the fields of its hook
payloads; how it reads a hook's answer) is data, in `hosts.py`. Everything
else works on that data: `plan.py` renders the fragments an install merges
into the user's own files, `jsonc.py`, `fence.py` and `tomltable.py` merge
and remove them without touching a byte that is not ours, `receipt.py`
records every byte written so `uninstall` removes exactly that, and
`hook.py` is the engine an installed hook runs.

This package sits beside `cli/` (layer 7): it composes `ops/` (the hook's
recall and transcript indexing) and is called by the CLI. Installing never
opens a store: the root recorded into a host's config may not exist yet.
"""
