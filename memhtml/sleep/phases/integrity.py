"""integrity: dangling authored links are rewritten along resolve chains, or dropped.

An authored link whose target no memory holds any more (a hand `git mv` or
delete, an archive by another tool) is rewritten to where the index's resolve
chain leads (`memhtml.index.identity.follow`: the archive copy of a moved
memory, then what superseded it). A link nothing explains, or one that would
come to point at its own source, is dropped: the file format has no way to
say "this target is gone", and a dangling link fails `doctor`. A link whose
target is a file the index could not project (unparseable, or a duplicate of
another memory) is not dangling: it is left and counted. Unparseable files
are counted and listed, never rewritten.

The repair is the one `memhtml doctor --fix` runs
(`memhtml.ops.repair.repair_dangling`); doctor leaves the links nothing
explains and also follows history's renames, which the run index cannot see.

A published corpus stays published: when the tree holds the site's root
listing (`memhtml publish` was run and committed), the phase regenerates the
listings, the view pages, `sitemap.xml` and the stylesheet from the run index
(and the sleep reports its tree holds: the front page lists them) with the same
generator (`memhtml.ops.publish.site_artifacts`), writing only files whose
bytes change and removing listings of folders that emptied, in its own
commit. A corpus never published gets no site from sleep.

Where we differ from the original (SLEEP-FACTS 2.14): it probed
`archive/<Y>/<target>` for ten years back, where the resolve chain finds an
archive copy in any year and through supersedence; and it regenerated the
site in every corpus. The listings are generated from the run index before
this phase's own repairs land, so a link the phase rewrote shows in the
listing from the next night (or the next `memhtml publish`).
"""

from __future__ import annotations

from memhtml.index.identity import follow
from memhtml.ops.repair import DANGLING_SQL, repair_dangling
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase, listed, unparseable


class Integrity(BasePhase):
    """Rewrite or drop dangling authored links."""

    name = "integrity"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Stage the repairs (on a dry run, only count them)."""

        def destination(path: str) -> str | None:
            chain = follow(ctx.conn, path)
            return chain.resolved if chain.hops else None

        dangling = len(ctx.conn.execute(DANGLING_SQL).fetchall())
        repaired = repair_dangling(
            ctx.conn, ctx.view, destination, drop_unexplained=True, stage=not ctx.dry_run
        )
        broken = unparseable(ctx.conn)
        counts = {
            "dangling": dangling,
            "rewritten": len(repaired.relinked),
            "dropped": len(repaired.dropped),
            "left": len(repaired.left),
            "unparseable": len(broken),
        }
        out = PhaseOutcome(counts=counts)
        if not ctx.dry_run:
            sources = dict.fromkeys(r["src_path"] for r in repaired.relinked + repaired.dropped)
            out.touched = [Touched(p, "rewritten") for p in sources]
        lines = [
            f"rewrite {r['src_path']} {r['rel']} {r['from']} -> {r['to']}"
            for r in repaired.relinked
        ]
        lines += [
            f"drop {r['src_path']} {r['rel']} {r['from']}: nothing holds it"
            for r in repaired.dropped
        ]
        lines += [f"unparseable {path}: {reason}" for path, reason in broken]
        lines += self._republish(ctx, counts, out)
        out.subject = (
            f"repair {counts['rewritten'] + counts['dropped']} dangling links"
            f" ({counts['rewritten']} rewritten, {counts['dropped']} dropped)"
            + (f", regenerate {counts['regenerated']} artifacts" if counts["regenerated"] else "")
        )
        out.body = listed(lines)
        if broken:
            out.detail = f"{len(broken)} unparseable files skipped (never rewritten)"
        return out

    @staticmethod
    def _republish(ctx: SleepContext, counts: dict[str, int], out: PhaseOutcome) -> list[str]:
        """Regenerate a published site's artifacts; body lines for what changed."""
        from memhtml.ops.publish import (
            ROOT_FILES,
            RUNS_DIR,
            is_owned,
            site_artifacts,
            site_changes,
        )
        from memhtml.store.git import blob_sha

        counts["artifacts"] = counts["regenerated"] = counts["removed"] = 0
        if not ctx.view.exists(ROOT_FILES[0]):
            return []
        held = {p: blob_sha(ctx.view.read(p)) for p in ctx.view.paths() if is_owned(p)}
        reports = [
            (p, ctx.view.read(p)) for p in ctx.view.paths(RUNS_DIR + "/") if p.endswith(".html")
        ]
        artifacts = site_artifacts(ctx.conn, reports)
        writes, removals = site_changes(artifacts, held)
        counts["artifacts"] = len(artifacts)
        counts["regenerated"], counts["removed"] = len(writes), len(removals)
        if ctx.dry_run:
            return []
        for path, data in writes.items():
            ctx.view.write(path, data)
            out.touched.append(Touched(path, "rewritten" if path in held else "created"))
        for path in removals:
            ctx.view.delete(path)
        return [f"regenerate {p}" for p in writes] + [f"remove {p}" for p in removals]


PHASE = Integrity()
