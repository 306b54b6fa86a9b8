"""What a batch did: per-op results, the commit, and the summary adapters print.

`BatchOutcome` is the value every batch door returns (`Corpus.run_ops`);
`commit_message` spells the batch's one commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import MemhtmlError
from memhtml.store.git import commit_subject

if TYPE_CHECKING:
    from memhtml.ops.batch import AnyOp


@dataclass
class BatchOutcome:
    """Per-op results, the commit, and what indexing and embedding did."""

    results: list[dict[str, Any]]
    commit_sha: str | None
    aborted: bool = False
    failure: MemhtmlError | None = None
    index: dict[str, Any] = field(default_factory=dict)
    vectors: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] | None = None  # the write-time checks' report, when any ran

    def summary(self) -> dict[str, int]:
        """Counts by outcome; every op is in exactly one of the counters after `total`.

        `written` counts write ops that created a memory (a correction's
        replacement counts under `corrected`); `linked` counts links added, and
        a link that was already there is `unchanged`.
        """

        def done(op: str) -> int:
            return sum(1 for r in self.results if r["ok"] and r["op"] == op and r.get("changed"))

        consolidated = sum(
            1 for r in self.results if r["ok"] and r.get("consolidated_into") is not None
        )
        out = {
            "total": len(self.results),
            "written": done("write"),
            "deduped": sum(1 for r in self.results if r["ok"] and r.get("deduped")),
            "corrected": done("correct"),
            "archived": done("archive"),
            "linked": done("link"),
            "unchanged": sum(
                1 for r in self.results if r["ok"] and not r.get("changed") and not r.get("deduped")
            )
            - consolidated,
            "failed": sum(1 for r in self.results if not r["ok"] and not r.get("skipped")),
            "skipped": sum(1 for r in self.results if r.get("skipped")),
        }
        if consolidated:  # last-wins: ops whose content a later op's write replaced
            out["consolidated"] = consolidated
        return out

    @property
    def partial(self) -> bool:
        """Ops failed under continue-on-error: the others were committed (or changed nothing)."""
        return not self.aborted and any(not r["ok"] for r in self.results)

    def to_data(self) -> dict[str, Any]:
        """The envelope payload (`batch.applied`)."""
        data = {
            "results": self.results,
            "summary": self.summary(),
            "commit_sha": self.commit_sha,
            "aborted": self.aborted,
            "partial": self.partial,
            "index": self.index,
            "vectors": self.vectors,
        }
        if self.checks is not None:
            data["checks"] = self.checks
        if self.index.get("warnings"):  # the commit landed; what did not follow it
            data["warnings"] = self.index["warnings"]
        return data

    def error(
        self, *, continue_flag: str = "continue_on_error: true", lines: Sequence[int] | None = None
    ) -> MemhtmlError | None:
        """The failure an adapter answers with, or None when every op succeeded.

        An aborted batch answers with the failing op's own code; a partial one
        (continue-on-error) with ERR_PARTIAL_FAILURE. Either way `details` is
        `to_data()`: every per-op result, the summary and the commit.
        """
        from memhtml.contracts.errors import PartialFailureError

        failed = [r for r in self.results if not r["ok"] and not r.get("skipped")]
        if not failed:
            return None
        first = failed[0]
        where = f"op index {first['index']}"
        if lines is not None:
            where += f" (line {lines[first['index']]})"
        if self.aborted and self.failure is not None:
            return type(self.failure)(
                f"{where} failed ({self.failure.message}); nothing was committed",
                suggestions=[f"fix that op, or pass {continue_flag} to commit the rest"],
                details=self.to_data(),
            )
        landed = (
            f"the others were committed as {self.commit_sha}"
            if self.commit_sha
            else "the others changed nothing, so there is no commit"
        )
        return PartialFailureError(
            f"{len(failed)} of {len(self.results)} ops failed (first: {where},"
            f" {first.get('code')}: {first.get('error')}); {landed}",
            suggestions=["details.results has each op's outcome; retry the failed ones"],
            details=self.to_data(),
        )


def _op_name(op: AnyOp) -> str:
    return op.op


def commit_message(ops: Sequence[AnyOp], results: Sequence[dict[str, Any]]) -> str:
    """The batch commit's message: a subject naming the op (or the counts), one body line
    per change (a superseded memory included), and the `Memhtml-Op` trailer."""
    from memhtml.contracts.ops import ArchiveOp, CorrectOp, WriteOp

    done = [(op, r) for op, r in zip(ops, results, strict=True) if r["ok"] and r.get("changed")]
    if len(done) == 1:
        op, r = done[0]
        if isinstance(op, WriteOp):
            subject = commit_subject("write", op.title)
        elif isinstance(op, CorrectOp):
            subject = commit_subject("correct", f"{r['target_path']} -> {r['path']}")
        elif isinstance(op, ArchiveOp):
            reason = f" — {op.reason}" if op.reason else ""
            subject = commit_subject("archive", f"{r['path']}{reason}")
        else:
            subject = commit_subject("link", f"{r['src_path']} {r['rel']} {r['dst_path']}")
    else:
        counts: dict[str, int] = {}
        for op, _ in done:
            counts[_op_name(op)] = counts.get(_op_name(op), 0) + 1
        parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        subject = commit_subject("apply", f"{len(done)} ops ({parts})")
    lines = [subject, ""]
    body = []
    for op, r in done:
        body.append(f"{_op_name(op)} {r.get('path') or r.get('src_path')}")
        body += [f"supersede {archived} by {r['path']}" for archived in r.get("superseded") or ()]
    lines += body[:200]
    if len(body) > 200:
        lines.append(f"... and {len(body) - 200} more")
    lines += ["", f"Memhtml-Op: {'apply' if len(done) > 1 else _op_name(done[0][0])}"]
    return "\n".join(lines) + "\n"
