"""Write-time checks benchmark (a script, not a test).

Measures what docs/conflicts.md reports:

* conflict detection on the labelled pairs (`memhtml.eval.conflict_pairs`):
  precision and recall of our rule and of the original memhtml's;
* the restatement (near-duplicate) test on the merge-safety probes and on the
  labelled pairs, swept over its cosine floor, beside the bare cosine baseline;
* last-wins consolidation of every labelled pair through the real write door
  (fake embedder): how many older memories were archived, per label.

Usage: python bench/bench_write_checks.py [--embedder local|fake]
Prints a summary and writes bench/results/write_checks.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from memhtml.eval.write_checks import consolidate_pairs, run_write_checks
from memhtml.store.layout import init_repo

RESULTS = Path(__file__).parent / "results" / "write_checks.json"


def main() -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--embedder", default="local", choices=("local", "fake"))
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    payload = run_write_checks(args.embedder)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        init_repo(root)
        payload["consolidation"] = consolidate_pairs(root)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    for name, score in payload["conflicts"].items():
        print(
            f"conflicts ({name}): precision {score['precision']} recall {score['recall']}"
            f" (tp {score['true_positives']}, fp {score['false_positives']});"
            f" set-valued flagged {score['set_valued_flagged']}/{score['set_valued_pairs']}"
        )
    print("restatements: floor  merge-safety recall / flips taken  labelled recall / others taken")
    for row in payload["restatements"]["sweep"]:
        ms, lab = row["merge_safety"], row["labelled"]
        print(
            f"  {row['threshold']:.2f}  {ms['recall']} / {ms['called_restatements']}"
            f"   {lab['recall']} / {lab['called_restatements']}"
            f"   (bare cosine: {row['bare_cosine_merge_safety']})"
        )
    for label, row in payload["consolidation"].items():
        print(f"consolidated away ({label}): {row['older_archived']} of {row['pairs']}")
    print(f"wrote {args.out}")
    return payload


if __name__ == "__main__":
    main()
