"""reprieve: a memory whose validity ran out is spared if it is still used, else archived.

TTL-passed: an active memory (not a task, not an arc, not a person record)
whose `memhtml-valid-until` is at or before the run instant. Its reprieve
score (`memhtml.domain.retention.reprieve_score`: importance, accesses,
positive outcomes, recency of the last access) decides, as in the original
(SLEEP-FACTS 2.11 and 4.3): at least 0.5 with fewer than 3 reprieves so far
-> `memhtml-valid-until` moves 14 days past the run date and
`memhtml-reprieves` goes up by one (a head-only splice); otherwise the memory
is archived through the Planner (inbound links relinked). Idempotent: a
reprieved memory is valid again, an expired one is in the archive.

Where we differ: with no recorded access, the hours since access count from
`memhtml-created` (the original used `memhtml-updated`, which its own decay
restamps nightly); the reprieve leaves `memhtml-updated` alone.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from memhtml.contracts.dates import as_datetime, format_instant
from memhtml.contracts.errors import MemhtmlError
from memhtml.contracts.vocab import PEOPLE_DIR
from memhtml.domain.retention import MAX_REPRIEVES, REPRIEVE_DAYS, reprieve_score, should_reprieve
from memhtml.html import set_meta
from memhtml.ops.fold import archive
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase, access_rows, listed, relink_touches, stamp

REASON: Final = "reprieve: validity expired"


def _hours(since: str | None, at: str) -> float:
    if not since:
        return 0.0
    try:
        return max(0.0, (as_datetime(at) - as_datetime(since)).total_seconds() / 3600)
    except ValueError:
        return 0.0


class Reprieve(BasePhase):
    """Spare or expire the memories whose validity ran out."""

    name = "reprieve"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Reprieve by score, archive the rest."""
        counts = dict.fromkeys(("ttl_passed", "reprieved", "expired", "failed", "relinked"), 0)
        counts["max_reprieves"] = MAX_REPRIEVES
        out = PhaseOutcome(counts=counts)
        access = access_rows(ctx.conn)
        until = format_instant(as_datetime(ctx.at[:10]) + timedelta(days=REPRIEVE_DAYS))
        lines: list[str] = []
        moves = []
        rows = ctx.conn.execute(
            "SELECT path, importance, reprieves, created_at FROM files"
            " WHERE archived = 0 AND memory_type NOT IN ('task', 'arc') AND path NOT LIKE ?"
            " AND valid_until IS NOT NULL AND valid_until <> '' AND valid_until <= ?"
            " ORDER BY path",
            (PEOPLE_DIR + "/%", ctx.at),
        ).fetchall()
        for done, (path, importance, reprieves, created) in enumerate(rows, start=1):
            ctx.progress(done, len(rows))
            counts["ttl_passed"] += 1
            count, _, outcome, last = access.get(path, (0, 0, 0.0, None))
            score = reprieve_score(importance, count, outcome, _hours(last or created, ctx.at))
            if should_reprieve(score, reprieves):
                counts["reprieved"] += 1
                if ctx.dry_run:
                    continue

                def edit(text: str, spared: int = (reprieves or 0) + 1) -> str:
                    text = set_meta(text, "memhtml-valid-until", until)
                    return set_meta(text, "memhtml-reprieves", str(spared))

                try:
                    if stamp(ctx, path, edit):
                        out.touched.append(Touched(path, "rewritten"))
                        lines.append(f"reprieve {path} (score {score:.3f}) until {until}")
                except MemhtmlError:
                    counts["reprieved"] -= 1
                    counts["failed"] += 1
                continue
            if ctx.dry_run:
                counts["expired"] += 1
                continue
            moved = archive(ctx, path, REASON)
            if moved is None:
                counts["failed"] += 1
                continue
            counts["expired"] += 1
            moves.append(moved)
            out.touched.append(Touched(moved.to, "archived", from_path=path))
            lines.append(f"expire {path} (score {score:.3f}) -> {moved.to}")
        counts["relinked"] = sum(len(m.relinked) for m in moves)
        out.touched += relink_touches(ctx, moves)
        out.subject = (
            f"reprieve {counts['reprieved']}, expire {counts['expired']} TTL-passed memories"
        )
        out.body = listed(lines)
        return out


PHASE = Reprieve()
