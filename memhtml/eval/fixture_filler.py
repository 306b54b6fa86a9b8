"""Generators for the everyday filler of an engineering-ops memory: incidents,
deploys, service facts, runbooks, insights, preferences, error patterns,
verdicts, precedents, glossary entries, inbox notes, project notes and queue
facts (the structural memories are in `fixture_structure`).

Each generator takes the `World` and returns `MemSpec`s; it draws only from
`world.rng`, so the call order alone fixes the output. Links are added by
`fixture.py` once every path is known.
"""

from __future__ import annotations

from collections.abc import Callable

from memhtml.contracts.paths import slugify
from memhtml.eval.fixture_markup import (
    MemSpec,
    article,
    aside,
    cite,
    code_block,
    define,
    facets,
    fold,
    inline_code,
    para,
    quote,
    steps,
    when,
)
from memhtml.eval.fixture_world import (
    CAUSES,
    CONTEXTS,
    DATABASES,
    QUEUES,
    REGIONS,
    SERVICES,
    TEAMS,
    TOOLS,
    World,
)

LANGUAGES = ("Go", "Python", "Kotlin", "TypeScript", "Rust", "Java")
ENVS = ("the canary fleet", "the EU cluster", "the shared cluster", "every region")
WIKI = "https://wiki.example.internal"


# -- filler -----------------------------------------------------------------------------


def incident(world: World) -> MemSpec:
    """An incident (episodic) with a time, facets, a timeline fold and a postmortem citation."""
    svc, cause = world.pick(SERVICES), world.pick(CAUSES)
    created, updated = world.dates(5, 360)
    day = world.day_before(created)
    minutes = world.rng.randint(4, 95)
    commander = world.pick(world.people)
    folder = f"projects/{world.pick(world.workspaces)}" if world.chance(0.5) else "areas/incidents"
    title = f"{svc} errors on {World.label(day)}"
    body = article(
        f"{svc} returned errors for {minutes} minutes after {cause}.",
        when("It started on", day, World.label(day)),
        facets(
            [
                ("Duration", f"{minutes} minutes", float(minutes)),
                ("Severity", world.pick(("SEV1", "SEV2", "SEV3")), None),
                ("Commander", commander.name, None),
            ]
        ),
        fold(
            "Timeline",
            f"Alerts fired for {svc} within two minutes.",
            f"{commander.first} declared the incident and paged the owning team.",
            "Recovery followed the rollback.",
        ),
        cite("Write-up:", f"{svc} postmortem, {World.label(day)}"),
    )
    return MemSpec(
        path=world.claim_path(folder, title),
        title=title,
        memory_type="episodic",
        created=created,
        updated=updated,
        article=body,
        entities=(("service", svc), ("person", commander.name)),
        tags=("incident",),
        links=(("about_person", commander.path),),
        role="incident",
        metas={"memhtml-importance": str(world.rng.randint(5, 9))},
    )


def deploy(world: World) -> MemSpec:
    """A deploy (episodic) with a helm command."""
    svc, env = world.pick(SERVICES), world.pick(ENVS)
    version = f"{world.rng.randint(1, 4)}.{world.rng.randint(0, 30)}.{world.rng.randint(0, 9)}"
    created, updated = world.dates(3, 300)
    day = world.day_before(created, 3)
    title = f"{svc} {version} rollout"
    body = article(
        f"{svc} {version} went out to {env} without a rollback.",
        when("Rolled out on", day, World.label(day)),
        code_block("bash", f"helm upgrade {svc} charts/{svc} --set image.tag={version}"),
        para(world.pick(CONTEXTS)),
    )
    return MemSpec(
        path=world.claim_path("areas/deploys", title),
        title=title,
        memory_type="episodic",
        created=created,
        updated=updated,
        article=body,
        entities=(("service", svc), ("tool", "helm")),
        tags=("deploys",),
        role="deploy",
    )


def service_fact(world: World) -> MemSpec:
    """A service fact sheet (semantic) with facets and a numeric port."""
    svc, team, lang = world.pick(SERVICES), world.pick(TEAMS), world.pick(LANGUAGES)
    port = world.rng.choice((8080, 8443, 9000, 9090, 3000, 5000))
    region = world.pick(REGIONS)
    created, updated = world.dates(20, 380)
    title = f"{svc} at a glance"
    body = article(
        f"{svc} is owned by the {team} team and written in {lang}.",
        facets(
            [
                ("Owner", team, None),
                ("Language", lang, None),
                ("HTTP port", str(port), float(port)),
                ("Home region", region, None),
            ]
        ),
        para(f"Dashboards for {svc} live in the {team} folder in Grafana."),
    )
    return MemSpec(
        path=world.claim_path("resources/services", title),
        title=title,
        memory_type="semantic",
        created=created,
        updated=updated,
        article=body,
        entities=(("service", svc), ("team", team), ("region", region)),
        tags=("services",),
        role="fact",
    )


def runbook(world: World) -> MemSpec:
    """A runbook (procedural) with steps, a command, a fold and an aside."""
    db, tool = world.pick(DATABASES), world.pick(TOOLS)
    created, updated = world.dates(20, 380)
    title = f"Failing over {db}"
    body = article(
        f"Fail over {db} with the orchestrator and confirm replication lag first.",
        steps(
            [
                f"Check replication lag on {db} in Grafana.",
                "Announce the failover in the incident channel.",
                "Run the orchestrator failover command.",
                "Verify writes succeed against the new leader.",
            ]
        ),
        code_block("bash", f"orchestrator-client -c graceful-master-takeover -a {db}"),
        fold("Why not by hand", "Manual failovers skipped the fencing step twice last year."),
        aside(f"{tool} dashboards lag by about a minute during the switch."),
    )
    return MemSpec(
        path=world.claim_path("resources/runbooks", title),
        title=title,
        memory_type="procedural",
        created=created,
        updated=updated,
        article=body,
        entities=(("database", db), ("tool", tool)),
        tags=("runbook", "databases"),
        role="runbook",
    )


def insight(world: World) -> MemSpec:
    """An agent insight with a quotation and an aside; from a session."""
    svc = world.pick(SERVICES)
    session = world.pick(world.sessions)
    created, updated = world.dates(3, 200)
    share = world.rng.randint(55, 90)
    title = f"{svc} alert noise after deploys"
    body = article(
        f"About {share} percent of {svc} alerts in the hour after a deploy clear on their own.",
        quote(
            "Transient alerts are a symptom of thresholds tuned for steady state.",
            f"{WIKI}/observability/alerting",
            "The alerting guide says:",
        ),
        aside("Counted over the last quarter of pager history."),
    )
    return MemSpec(
        path=world.claim_path("areas/insights", title),
        title=title,
        memory_type="agent_insight",
        created=created,
        updated=updated,
        article=body,
        entities=(("service", svc),),
        tags=("alerting",),
        links=(("from_session", session.path),),
        role="insight",
        metas={
            "memhtml-author": "agent:claude",
            "memhtml-session": session.session_id,
            "memhtml-confidence": "0.7",
        },
    )


PREFERENCES = (
    "short status updates in the incident channel",
    "Grafana links instead of screenshots in tickets",
    "code reviews before noon in their timezone",
    "terraform plans attached to every change request",
    "commit messages in the imperative mood",
    "one alert per symptom rather than per host",
    "runbooks that start with the rollback",
)


def preference(world: World) -> MemSpec:
    """A user preference about a person (about_person and authored_by)."""
    person, pref = world.pick(world.people), world.pick(PREFERENCES)
    created, updated = world.dates(5, 300)
    title = f"{person.first} on {pref.split()[0]} {pref.split()[1]}"
    body = article(f"{person.name} prefers {pref}.", para(world.pick(CONTEXTS)))
    return MemSpec(
        path=world.claim_path("areas/preferences", title),
        title=title,
        memory_type="user_preference",
        created=created,
        updated=updated,
        article=body,
        entities=(("person", person.name),),
        tags=("preferences",),
        links=(("about_person", person.path), ("authored_by", person.path)),
        role="preference",
    )


ERRORS = (
    ("connection refused", "the pooler restarts"),
    ("deadline exceeded", "the upstream queue backs up"),
    ("too many open files", "the file descriptor limit stays at the default"),
    ("certificate has expired", "the internal CA rotates"),
    ("relation does not exist", "a migration runs out of order"),
)


def error_pattern(world: World) -> MemSpec:
    """An error pattern with a log excerpt and a cited vendor note."""
    svc, (msg, cause) = world.pick(SERVICES), world.pick(ERRORS)
    created, updated = world.dates(5, 300)
    title = f"{svc} logs {msg}"
    body = article(
        f"{svc} logs {msg} when {cause}.",
        code_block("log", f'level=error service={svc} msg="{msg}"'),
        quote(
            f"Errors like {msg} are retried by the client library.",
            f"{WIKI}/services/{svc}/errors",
            "From the service notes:",
        ),
    )
    return MemSpec(
        path=world.claim_path("areas/error-patterns", title),
        title=title,
        memory_type="error_pattern",
        created=created,
        updated=updated,
        article=body,
        entities=(("service", svc),),
        tags=("errors",),
        role="error",
    )


DECISIONS = (
    ("secrets", "vault", "sealed environment files"),
    ("deploys", "argo-cd", "hand-run helm upgrades"),
    ("paging", "pagerduty", "email alerts"),
    ("edge routing", "envoy", "nginx"),
    ("queueing", "kafka", "a database outbox table"),
)


def verdict(world: World) -> MemSpec:
    """A decision record citing the review it came from."""
    topic, tool, alt = world.pick(DECISIONS)
    created, updated = world.dates(30, 380)
    title = f"Decision on {topic}"
    body = article(
        f"We use {tool} for {topic} instead of {alt}.",
        cite("Decided in", f"Architecture review of {created[:7]}"),
        para(f"Revisit when {alt} gains first-class support in the platform."),
    )
    return MemSpec(
        path=world.claim_path("resources/verdicts", title),
        title=title,
        memory_type="verdict",
        created=created,
        updated=updated,
        article=body,
        entities=(("tool", tool),),
        tags=("decisions",),
        role="verdict",
    )


FIXES = (
    "pinning the client library",
    "raising the pool size",
    "adding a circuit breaker",
    "moving the job off the primary",
    "splitting the queue by tenant",
)


def precedent(world: World) -> MemSpec:
    """A precedent: what happened once and what fixed it."""
    svc, fix, cause = world.pick(SERVICES), world.pick(FIXES), world.pick(CAUSES)
    created, updated = world.dates(30, 380)
    day = world.day_before(created, 20)
    title = f"{svc} recovery by {fix}"
    body = article(
        f"When {svc} degraded after {cause}, {fix} restored service.",
        when("This happened on", day, World.label(day)),
        cite("See", f"{svc} incident log"),
    )
    return MemSpec(
        path=world.claim_path("resources/precedents", title),
        title=title,
        memory_type="precedent",
        created=created,
        updated=updated,
        article=body,
        entities=(("service", svc),),
        tags=("precedents",),
        role="precedent",
    )


TERMS = (
    ("error budget", "is the share of failed requests a service may spend before releases pause."),
    ("write amplification", "is the ratio of bytes written to disk to bytes the client wrote."),
    ("connection draining", "lets in-flight requests finish before a backend leaves the pool."),
    ("blast radius", "is the set of users a single failure can reach."),
    ("toil", "is manual, repetitive operational work that scales with traffic."),
    ("circuit breaker", "stops calls to a failing dependency until it recovers."),
    ("fencing token", "is a number that lets storage reject writes from a stale leader."),
)


def glossary(world: World) -> MemSpec:
    """A glossary entry with a `<dfn>` and inline code."""
    term, rest = world.pick(TERMS)
    created, updated = world.dates(30, 380)
    title = f"Glossary: {term}"
    body = article(
        f"Our runbooks use {term} in its usual SRE sense.",
        define(term, rest),
        inline_code("The related metric is", "promql", f"{slugify(term).replace('-', '_')}_total"),
    )
    return MemSpec(
        path=world.claim_path("resources/glossary", title),
        title=title,
        memory_type="semantic",
        created=created,
        updated=updated,
        article=body,
        tags=("glossary",),
        role="glossary",
    )


def inbox_note(world: World) -> MemSpec:
    """An untagged, unfiled note in areas/inbox/ (plain claim and body)."""
    svc, region = world.pick(SERVICES), world.pick(REGIONS)
    created, updated = world.dates(1, 60)
    kind = world.pick(("episodic", "semantic"))
    title = f"Note about {svc} in {region}"
    claim = f"Someone mentioned that {svc} may move to {region} next quarter."
    return MemSpec(
        path=world.claim_path("areas/inbox", title),
        title=title,
        memory_type=kind,
        created=created,
        updated=updated,
        claim=claim,
        body=(world.pick(CONTEXTS),),
        role="inbox",
    )


def project_note(world: World) -> MemSpec:
    """A project decision note under projects/<workspace>/ with a milestone facet."""
    ws, svc, tool = world.pick(world.workspaces), world.pick(SERVICES), world.pick(TOOLS)
    created, updated = world.dates(5, 250)
    milestone = world.rng.randint(1, 5)
    title = f"{ws}: {svc} through {tool}"
    body = article(
        f"The {ws} project routes {svc} through {tool} from milestone {milestone}.",
        facets(
            [("Milestone", str(milestone), float(milestone)), ("Owner", world.pick(TEAMS), None)]
        ),
        para(world.pick(CONTEXTS)),
    )
    return MemSpec(
        path=world.claim_path(f"projects/{ws}", title),
        title=title,
        memory_type="semantic",
        created=created,
        updated=updated,
        article=body,
        entities=(("project", ws), ("service", svc), ("tool", tool)),
        tags=("projects",),
        role="project",
    )


def queue_fact(world: World) -> MemSpec:
    """A queue fact (semantic) with a numeric retention facet."""
    queue, svc = world.pick(QUEUES), world.pick(SERVICES)
    hours = world.rng.choice((24, 48, 72, 168))
    created, updated = world.dates(10, 300)
    title = f"{queue} consumers"
    body = article(
        f"{svc} consumes the {queue} topic as its own consumer group.",
        facets([("Retention", f"{hours} hours", float(hours)), ("Consumer", svc, None)]),
    )
    return MemSpec(
        path=world.claim_path("resources/kafka", title),
        title=title,
        memory_type="semantic",
        created=created,
        updated=updated,
        article=body,
        entities=(("queue", queue), ("service", svc)),
        tags=("kafka",),
        role="fact",
    )


FILLERS: tuple[Callable[[World], MemSpec], ...] = (
    incident,
    deploy,
    service_fact,
    runbook,
    insight,
    preference,
    error_pattern,
    verdict,
    precedent,
    glossary,
    inbox_note,
    project_note,
    queue_fact,
)

__all__ = [
    "FILLERS",
    "deploy",
    "incident",
]
