"""person-links: one `resources/people/` record per person, and `about_person` links to it.

For every `person:` entity an active non-task memory declares (read from the
run index, so the names are entity-resolution's, which ran just before):

* the person's record is the active `resources/people/` file that declares
  that `person:` name or lists it as a `memhtml-alias`; when none does, one
  is created at `resources/people/<slug>.html` (a free path: never one any
  memory held) as an ordinary memory of the shared format -- type semantic,
  the name as title, the claim "<name> appears in this agent's memory.",
  the `person:` entity, author `agent:sleep`, written by the Planner's write
  door so it is rendered and validated like any other;
* every other memory declaring the name gains `about_person` to the record
  (a head-only edit; a link already there is left alone).

Existing records are never rewritten. Where we differ from the original
(SLEEP-FACTS 2.4): it found a record only by the name's slug and read the
names before entity-resolution's rewrites; here a record is found by the
names and aliases it declares, and the index already holds the resolved names.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from memhtml.contracts.errors import MemhtmlError
from memhtml.contracts.ops import LinkOp, WriteOp
from memhtml.contracts.paths import memory_slug
from memhtml.contracts.vocab import PEOPLE_DIR
from memhtml.domain.entities import clean_name, name_key
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase, listed

AUTHOR: Final = "agent:sleep"


def _people(ctx: SleepContext) -> dict[str, tuple[str, list[str]]]:
    """name key -> (the name as most files spell it, the memories declaring it)."""
    spellings: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for kind, name, path in ctx.conn.execute(
        "SELECT fe.entity_type, fe.entity_name, fe.path FROM file_entities fe"
        " JOIN files f ON f.path = fe.path"
        " WHERE fe.source = 'meta' AND f.archived = 0 AND f.memory_type <> 'task'"
        " ORDER BY fe.path"
    ):
        if name_key(str(kind)) == "person" and name_key(str(name)):
            spellings[name_key(str(name))][str(name)].add(str(path))
    out: dict[str, tuple[str, list[str]]] = {}
    for key, by_spelling in spellings.items():
        name = min(by_spelling, key=lambda s: (-len(by_spelling[s]), s))
        paths = sorted({p for ps in by_spelling.values() for p in ps})
        out[key] = (clean_name(name), paths)
    return out


def _records(ctx: SleepContext) -> dict[str, str]:
    """name key -> the active person record that declares it (name first, then alias)."""
    by_name: dict[str, str] = {}
    by_alias: dict[str, str] = {}
    for path, kind, name in ctx.conn.execute(
        "SELECT fe.path, fe.entity_type, fe.entity_name FROM file_entities fe"
        " JOIN files f ON f.path = fe.path"
        " WHERE f.archived = 0 AND fe.source = 'meta' AND f.path LIKE ? ORDER BY fe.path",
        (PEOPLE_DIR + "/%",),
    ):
        if name_key(str(kind)) == "person":
            by_name.setdefault(name_key(str(name)), str(path))
    for path, alias in ctx.conn.execute(
        "SELECT a.path, a.alias FROM file_aliases a JOIN files f ON f.path = a.path"
        " WHERE f.archived = 0 AND a.path LIKE ? ORDER BY a.path",
        (PEOPLE_DIR + "/%",),
    ):
        by_alias.setdefault(name_key(str(alias)), str(path))
    return {**by_alias, **by_name}


def _linked(ctx: SleepContext, src: str, record: str) -> bool:
    return (
        ctx.conn.execute(
            "SELECT 1 FROM edges WHERE src_path = ? AND rel = 'about_person' AND dst_path = ?"
            " AND derived = 0",
            (src, record),
        ).fetchone()
        is not None
    )


class PersonLinks(BasePhase):
    """Person records and about_person links."""

    name = "person-links"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Create missing records, then link every memory that names a person to its record."""
        people = _people(ctx)
        records = _records(ctx)
        counts = dict.fromkeys(("people", "created", "linked", "already_linked", "failed"), 0)
        counts["people"] = len(people)
        out = PhaseOutcome(counts=counts)
        lines: list[str] = []
        linked_people: set[str] = set()
        for done, key in enumerate(sorted(people), start=1):
            ctx.progress(done, len(people))
            name, paths = people[key]
            record = records.get(key)
            if record is None:
                counts["created"] += 1
                record = f"{PEOPLE_DIR}/{memory_slug(name)}.html"
                if not ctx.dry_run:
                    try:
                        made = ctx.planner.write(
                            WriteOp(
                                title=name,
                                type="semantic",
                                claim=f"{name} appears in this agent's memory.",
                                entity=[f"person:{name}"],
                                author=AUTHOR,
                                path=record,
                            )
                        )
                    except (MemhtmlError, ValueError):  # a refused field, pydantic's too
                        counts["created"] -= 1
                        counts["failed"] += 1
                        continue
                    record = str(made["path"])
                    if made["created"]:
                        out.touched.append(Touched(record, "created"))
                        lines.append(f"create {record} for person:{name}")
                    else:  # the same claim already holds a record: link to that one
                        counts["created"] -= 1
            for path in paths:
                if path == record:
                    continue
                if _linked(ctx, path, record):
                    counts["already_linked"] += 1
                    continue
                if ctx.dry_run:
                    counts["linked"] += 1
                    linked_people.add(key)
                    continue
                try:
                    result = ctx.planner.link(
                        LinkOp(op="link", src=path, rel="about_person", dst=record)
                    )
                except MemhtmlError:
                    counts["failed"] += 1
                    continue
                if result["created"]:
                    counts["linked"] += 1
                    linked_people.add(key)
                    out.touched.append(Touched(path, "rewritten"))
                else:
                    counts["already_linked"] += 1
        out.subject = (
            f"link {counts['linked']} memories to {len(linked_people)} people,"
            f" create {counts['created']} records"
        )
        out.body = listed(lines)
        return out


PHASE = PersonLinks()
