"""Handler for `publish`: one call into memhtml.ops.publish."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation


def publish(inv: Invocation, out: str | None = None) -> dict[str, Any]:
    """Regenerate the static site (committed, or into --out)."""
    corpus = inv.corpus()
    try:
        return dict(corpus.publish(out=out))
    finally:
        corpus.close()


def human_publish(data: dict[str, Any]) -> str:
    """A terminal summary: what was written and where."""
    where = data["out"] or data["root"]
    line = (
        f"published {data['memories']} memories ({data['archived']} archived) to {where}:"
        f" {data['artifacts']} generated files, {data['written']} written"
    )
    if data["copied"]:
        line += f", {data['copied']} memories copied"
    if data["removed"]:
        line += f", {len(data['removed'])} stale pages removed"
    lines = [line]
    if data["commit_sha"]:
        lines.append(f"  commit {data['commit_sha'][:12]}")
    elif data["out"] is None:
        lines.append("  nothing changed: no commit")
    if data["unparseable"]:
        lines.append(f"  {data['unparseable']} unparseable files listed as such (memhtml doctor)")
    lines.append(f"  open {where}/index.html")
    return "\n".join(lines)
