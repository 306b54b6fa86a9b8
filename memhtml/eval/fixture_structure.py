"""Generators for the fixture's structural memories: people, agent sessions, archived
and superseded memories, tasks with their edges, and sleep-written arcs.

Like the everyday filler (`fixture_filler`), each generator draws only from
`world.rng`; links between structural memories are planned here, links
among the filler in `fixture.py`.
"""

from __future__ import annotations

from datetime import timedelta

from memhtml.contracts.dates import as_datetime, format_instant
from memhtml.contracts.paths import slugify
from memhtml.eval.fixture_filler import deploy
from memhtml.eval.fixture_markup import MemSpec, article, facets, para, steps, when
from memhtml.eval.fixture_world import (
    DATABASES,
    PEOPLE,
    ROLES,
    SERVICES,
    TEAMS,
    TIMEZONES,
    Person,
    Session,
    World,
)


def _person_spec(world: World, person: Person) -> MemSpec:
    created, updated = world.dates(200, 400)
    rotation = world.rng.randint(2, 6)
    body = article(
        f"{person.name} is a {person.role} on the {person.team} team.",
        facets(
            [
                ("Role", person.role, None),
                ("Team", person.team, None),
                ("Timezone", person.timezone, None),
                ("On-call rotation", f"every {rotation} weeks", float(rotation)),
            ]
        ),
        para(f"Reach {person.first} in the {person.team} channel; handle @{person.handle}."),
    )
    return MemSpec(
        path=person.path,
        title=person.name,
        memory_type="semantic",
        created=created,
        updated=updated,
        article=body,
        entities=(("person", person.name), ("team", person.team)),
        tags=("people",),
        aliases=(person.first, person.handle),
        role="person",
        metas={"memhtml-confidence": "1", "memhtml-importance": "5"},
    )


def people(world: World, count: int) -> list[MemSpec]:
    """Person files under resources/people/ (also fills world.people)."""
    out = []
    for name in world.sample(PEOPLE, count):
        path = world.reserve(f"resources/people/{slugify(name)}.html")
        person = Person(name, world.pick(ROLES), world.pick(TEAMS), world.pick(TIMEZONES), path)
        world.people.append(person)
        out.append(_person_spec(world, person))
    return out


def sessions(world: World, count: int) -> list[MemSpec]:
    """Agent session logs (episodic) that memories point at with from_session."""
    out = []
    for _ in range(count):
        created, updated = world.dates(5, 200)
        day = created[:10]
        session_id = f"{world.rng.getrandbits(64):016x}"
        ws = world.pick(world.workspaces)
        title = f"Agent session {day} on {ws}"
        path = world.reserve(f"resources/sessions/{day}-{session_id[:8]}.html")
        turns = world.rng.randint(12, 140)
        body = article(
            f"An agent session worked on {ws} and recorded what it learned.",
            when("Held on", day, World.label(day)),
            facets([("Session", session_id, None), ("Turns", str(turns), float(turns))]),
            para(f"The session touched {world.pick(SERVICES)} and {world.pick(DATABASES)}."),
        )
        world.sessions.append(Session(session_id, path, day))
        out.append(
            MemSpec(
                path=path,
                title=title,
                memory_type="episodic",
                created=created,
                updated=updated,
                article=body,
                entities=(("project", ws),),
                tags=("sessions",),
                role="session",
                metas={"memhtml-author": "agent:claude", "memhtml-session": session_id},
            )
        )
    return out


# -- lifecycle: archived and superseded ---------------------------------------------------


def archived(world: World) -> MemSpec:
    """A memory retention triage archived: under archive/<YYYY>/ with status archived."""
    live = deploy(world)
    world.taken.discard(live.path)
    moment = world.moment(20, 200)
    when_archived = format_instant(moment)
    path = world.reserve(f"archive/{moment.year:04d}/{live.path}")
    updated = max(live.updated, when_archived)
    return MemSpec(
        path=path,
        title=live.title,
        memory_type=live.memory_type,
        created=live.created,
        updated=updated,
        article=live.article,
        status="archived",
        metas={"memhtml-archived": when_archived, "memhtml-reprieves": "1"},
        entities=live.entities,
        tags=live.tags,
        role="archived",
    )


def superseded_pair(world: World) -> tuple[MemSpec, MemSpec]:
    """A corrected fact: the old version archived with superseded-by, the new one supersedes it."""
    db = world.pick(DATABASES)
    old_major = world.rng.randint(12, 14)
    new_major = old_major + world.rng.randint(1, 3)
    title = f"{db} major version"
    live_path = world.claim_path("resources/postgres", title)
    moment = world.moment(20, 150)
    corrected = format_instant(moment)
    created = format_instant(moment - timedelta(days=world.rng.randint(60, 200)))
    old_path = world.reserve(f"archive/{moment.year:04d}/{live_path}")
    old = MemSpec(
        path=old_path,
        title=title,
        memory_type="semantic",
        created=created,
        updated=corrected,
        claim=f"{db} runs Postgres {old_major}.",
        body=("Checked with SELECT version().",),
        status="archived",
        metas={
            "memhtml-archived": corrected,
            "memhtml-valid-until": corrected,
            "memhtml-superseded-by": live_path,
        },
        entities=(("database", db),),
        tags=("postgres",),
        role="superseded",
    )
    new_created = format_instant(as_datetime(corrected))
    new = MemSpec(
        path=live_path,
        title=title,
        memory_type="semantic",
        created=new_created,
        updated=new_created,
        claim=f"{db} runs Postgres {new_major} since the upgrade.",
        body=("Checked with SELECT version() after the maintenance window.",),
        metas={"memhtml-valid-from": corrected, "memhtml-confidence": "0.95"},
        entities=(("database", db),),
        tags=("postgres",),
        links=(("supersedes", old_path),),
        role="replacement",
    )
    return old, new


# -- tasks and arcs -----------------------------------------------------------------------

TASK_TITLES = (
    "Upgrade {db} to the next Postgres major",
    "Add a runbook for {svc} failover",
    "Remove stale feature flags from {svc}",
    "Rotate the {svc} service account keys",
    "Load test {svc} before the holiday sale",
    "Move {svc} alerts to the new routing tree",
    "Document {db} backup restore drill",
    "Cut {svc} cold start time",
    "Review {db} index bloat",
    "Split {svc} deploy pipeline per region",
)
TASK_STATUSES = ("todo", "doing", "blocked", "done")


def tasks(world: World, count: int) -> list[MemSpec]:
    """Tasks with statuses and due dates; the first two are parents of subtasks, and some
    block others (task edges)."""
    out: list[MemSpec] = []
    for i in range(count):
        svc, db = world.pick(SERVICES), world.pick(DATABASES)
        title = TASK_TITLES[i % len(TASK_TITLES)].format(svc=svc, db=db)
        in_project = i % 5 != 4
        folder = (
            f"projects/{world.workspaces[i % len(world.workspaces)]}/tasks"
            if in_project
            else "areas/inbox/tasks"
        )
        created, updated = world.dates(2, 90)
        status = TASK_STATUSES[i % len(TASK_STATUSES)]
        owner = world.pick(world.people)
        metas = {
            "memhtml-task-status": status,
            "memhtml-due": world.future_day(3, 60) if status != "done" else created[:10],
        }
        links: list[tuple[str, str]] = [("authored_by", owner.path)]
        if i >= 2 and i < 6:
            links.append(("subtask_of", out[i % 2].path))
        if i >= 6 and out:
            links.append(("blocks", out[i - 5].path))
        out.append(
            MemSpec(
                path=world.claim_path(folder, title),
                title=title,
                memory_type="task",
                created=created,
                updated=updated,
                claim=f"{title}.",
                body=(f"Owner: {owner.name}.",),
                metas=metas,
                entities=(("service", svc), ("person", owner.name)),
                tags=("task",),
                links=tuple(links),
                role="task",
            )
        )
    return out


def arc(world: World, members: list[MemSpec], index: int) -> MemSpec:
    """A sleep-written arc summarizing some incidents (relates_to each member)."""
    created, updated = world.dates(1, 30)
    titles = [m.title for m in members]
    title = f"Incident arc {index + 1}: recurring errors"
    body = article(
        f"{len(members)} incidents share a pattern: config changes shipped without a canary.",
        steps(titles, ordered=False),
        para("Synthesized by sleep from the incidents listed above."),
    )
    return MemSpec(
        path=world.claim_path("areas/arcs", title),
        title=title,
        memory_type="arc",
        created=created,
        updated=updated,
        article=body,
        tags=("arc",),
        links=tuple(("relates_to", m.path) for m in members),
        role="arc",
        metas={"memhtml-author": "agent:sleep", "memhtml-confidence": "0.6"},
    )


__all__ = [
    "arc",
    "archived",
    "people",
    "sessions",
    "superseded_pair",
    "tasks",
]
