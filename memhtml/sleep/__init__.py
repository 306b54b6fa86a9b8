"""Sleep: the curation run on a branch, reviewed by a person, merged only through the gate.

`phase.py` is the contract between the engine and the phases; `engine.py`
walks the phases on a `sleep/<run-id>` branch, one commit per committing
phase (`runs.py`: run ids, the run record, trailers, the sleep lock;
`runindex.py`: the run's own index, reprojected after every commit;
`ledger.py`: the pending ledger); `review.py`, `merge.py` (with the corpus
gate in `gate.py`) and `plan.py` are the other commands; `phases/` holds one
module per phase, in the original's order. docs/sleep.md describes it all.
"""
