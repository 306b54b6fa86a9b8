"""Terminal views of the commands about memhtml itself: agents-doc, eval fixture, eval
merge-safety."""

from __future__ import annotations

from typing import Any

from memhtml.cli.text import pairs, plural, sha


def agents_doc(data: dict[str, Any]) -> str:
    """Written, or current."""
    if data.get("written"):
        return f"wrote {data['path']} from the command table"
    return f"{data['path']} is current"


def eval_fixture(data: dict[str, Any]) -> str:
    """The fixture corpus written: size, probes by kind, where."""
    kinds = ", ".join(f"{k} {v}" for k, v in (data.get("probes_by_kind") or {}).items())
    lines = [
        f"wrote a {data.get('files', 0):,}-file fixture (seed {data.get('seed')}) to"
        f" {data.get('root')} (commit {sha(data.get('commit_sha'))})",
        f"  {plural(data.get('probes', 0), 'probe')} ({kinds}),"
        f" {plural(data.get('controls', 0), 'control')}",
    ]
    if data.get("invalid_files"):
        lines.append(f"  {plural(data['invalid_files'], 'file')} INVALID (memhtml doctor)")
    lines.append(f"  next: memhtml eval discriminate --repo {data.get('root')}")
    return "\n".join(lines)


def _detector(d: dict[str, Any]) -> str:
    verdict = "passed" if d.get("passed") else "FAILED"
    return (
        f"{verdict}: {d.get('false_merges', 0)} false merges of {d.get('must_not_merge', 0)}"
        f" must-not-merge pairs; {d.get('paraphrases_recognized', 0)} of"
        f" {d.get('paraphrases', 0)} paraphrases recognized"
    )


def merge_safety(data: dict[str, Any]) -> str:
    """Each detector's verdict: false merges of must-not-merge pairs, paraphrases recognized."""
    rows = [("write dedup", _detector(data.get("write_dedup") or {}))]
    for name, c in (data.get("cosine") or {}).items():
        rows.append(
            (f"cosine {name}", f">= {c.get('threshold')} " + _detector(c.get("at_threshold") or {}))
        )
        if c.get("zero_false_merge_threshold") is not None:
            rows.append(
                (
                    "",
                    f"no false merge only above {c['zero_false_merge_threshold']:.3f}, where"
                    f" {c.get('paraphrase_recall_above_it', 0):.0%} of paraphrases still merge",
                )
            )
    total = (data.get("pairs") or {}).get("total", 0)
    return "\n".join(
        [f"merge safety over {plural(total, 'pair')} (seed {data.get('seed')}):", *pairs(rows)]
    )
