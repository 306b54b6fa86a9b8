"""The probe catalogue: sixty target facts, twenty per control kind, as data.

Each entry is a header line and three indented lines:

    key | memory type | folder | entities (type:name ...) | tags (...)
        title: ...
        claim: ...     (the target claim in its written form)
        query: ...     (what an agent would search for; it carries the claim's
                        distinguishing token in the same construction, so the
                        flip applied to the claim applies to the query too)

`{slot}` placeholders are filled from `World.slots()`. Negation and qualifier
entries are written in one form; the generator flips about half of them, so
both polarities are targets. `memhtml.eval.probes` checks every filled entry
for well-posedness when it builds a probe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class ProbeTemplate:
    """One target fact, written with {slot} placeholders (see World.slots)."""

    key: str
    kind: str
    memory_type: str
    folder: str
    title: str
    claim: str
    query: str
    entities: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


NEGATION: Final = """
vip-drain | procedural | resources/runbooks | service:{svc} | deploys rollback
    title: {svc} VIP drain on rollback
    claim: Drain the {svc} VIP before reverting a failed deploy.
    query: drain the {svc} VIP before reverting a bad deploy

primary-restart | procedural | areas/databases | database:{db} | postgres
    title: {db} restarts and the nightly batch
    claim: Restart the {db} primary during the nightly batch window.
    query: restart the {db} primary during the nightly batch

bucket-versioning | semantic | resources/storage | bucket:{bucket} | storage
    title: {bucket} bucket versioning
    claim: The {bucket} bucket is versioned.
    query: {bucket} bucket is versioned

replica-reporting | semantic | resources/postgres | database:{db} | postgres reporting
    title: {db} replica and reporting queries
    claim: The {db} replica can serve reporting queries.
    query: {db} replica can serve reporting queries

squash-merge | user_preference | areas/preferences | service:{svc} person:{person} | git
    title: Merging pull requests into {svc}
    claim: Always squash-merge pull requests into the {svc} main branch.
    query: always squash-merge {svc} pull requests

schema-retry | error_pattern | areas/error-patterns | queue:{queue} | kafka
    title: Retrying {queue} schema failures
    claim: Retrying the {queue} message that failed schema validation will succeed later.
    query: {queue} message that failed schema validation will succeed on retry

healthcheck-db-ping | agent_insight | areas/insights | service:{svc} | healthchecks
    title: {svc} health check scope
    claim: The {svc} health check must include the database ping.
    query: {svc} health check must include the database ping

page-before-failover | procedural | areas/procedures | database:{db} team:{team} | oncall
    title: Paging before a {db} failover
    claim: Page the database on-call before starting the {db} failover.
    query: page the database on-call before the {db} failover

flag-cleanup | verdict | resources/verdicts | service:{svc} | feature-flags
    title: Cleaning up {svc} feature flags
    claim: Feature flags in {svc} should be removed within two sprints of full rollout.
    query: {svc} feature flags should be removed within two sprints of rollout

friday-freeze | semantic | projects/{ws} | service:{svc} project:{ws} | deploys
    title: {svc} and the Friday freeze
    claim: {svc} is safe to deploy during the Friday change freeze.
    query: {svc} is safe to deploy during the Friday freeze

laptop-migrations | procedural | areas/procedures | service:{svc} | migrations
    title: Where {svc} migrations run from
    claim: Never run database migrations for {svc} from a laptop.
    query: never run {svc} database migrations from a laptop

incident-summary | user_preference | areas/preferences | team:{team} | incidents
    title: Incident summaries for the {team} team
    claim: Incident summaries for the {team} team must be posted within one business day.
    query: {team} incident summaries must be posted within one business day

key-rotation | procedural | resources/runbooks | service:{svc} | security
    title: {svc} signing key rotation
    claim: Rotate the {svc} signing keys after every security release.
    query: rotate the {svc} signing keys after a security release

sync-replication | semantic | resources/postgres | database:{db} | postgres
    title: {db} replication mode
    claim: Writes to {db} are replicated synchronously to the standby.
    query: {db} writes are replicated synchronously to the standby

pool-exhaustion | error_pattern | areas/error-patterns | service:{svc} | database
    title: {svc} connection pool exhaustion
    claim: The {svc} connection pool is exhausted when the batch importer runs.
    query: {svc} connection pool is exhausted when the batch importer runs

status-page | precedent | resources/precedents | service:{svc} | incidents
    title: Announcing {svc} outages
    claim: Customer-facing outages on {svc} were announced on the public status page.
    query: {svc} outages were announced on the public status page

token-reuse | agent_insight | areas/insights | service:{svc} | security
    title: {svc} token caching across tenants
    claim: Cached tokens from {svc} can be reused across tenants.
    query: cached {svc} tokens can be reused across tenants

snapshot-resize | procedural | areas/databases | database:{db} | storage
    title: Resizing the {db} volume
    claim: Snapshot the {db} volume before resizing it.
    query: snapshot the {db} volume before resizing

rollback-plan | user_preference | areas/preferences | service:{svc} | change-management
    title: Change requests for {svc}
    claim: Always include a rollback plan in {svc} change requests.
    query: always include a rollback plan in {svc} change requests

webhook-signature | semantic | resources/security | service:{svc} | security
    title: {svc} webhook signatures
    claim: The {svc} webhook endpoint must verify the request signature.
    query: {svc} webhook endpoint must verify the request signature
"""

NUMBER: Final = """
pgbouncer-port | semantic | resources/postgres | database:{db} | postgres
    title: {db} connection pooler
    claim: The {db} pgbouncer listens on port 6432.
    query: {db} pgbouncer port 6432

lb-timeout | semantic | resources/networking | service:{svc} | networking
    title: {svc} load balancer health check
    claim: The {svc} load balancer health check times out after 15 seconds.
    query: {svc} health check timeout of 15 seconds

snapshot-retention | procedural | areas/databases | database:{db} | backups
    title: {db} snapshot retention
    claim: Keep 14 daily snapshots of {db} before pruning older ones.
    query: keep 14 daily {db} snapshots

node-version | semantic | projects/{ws} | service:{svc} project:{ws} | runtime
    title: {svc} runtime
    claim: {svc} runs on Node 20.11 in production.
    query: {svc} Node version 20.11

rate-limit-429 | error_pattern | areas/error-patterns | service:{svc} | rate-limits
    title: {svc} tenant rate limiting
    claim: {svc} returns HTTP 429 once a tenant passes 300 requests per minute.
    query: {svc} HTTP 429 responses for a tenant

partitions | semantic | resources/kafka | queue:{queue} | kafka
    title: {queue} topic layout
    claim: The {queue} topic has 24 partitions.
    query: {queue} topic with 24 partitions

pg-version | semantic | resources/postgres | database:{db} | postgres
    title: {db} engine version
    claim: {db} runs Postgres 15.6.
    query: {db} Postgres version 15.6

worker-concurrency | procedural | areas/procedures | service:{svc} | capacity
    title: {svc} worker concurrency
    claim: Set the {svc} worker concurrency to 8 per pod.
    query: {svc} worker concurrency of 8 per pod

jwt-expiry | semantic | resources/security | service:{svc} | security
    title: {svc} access token lifetime
    claim: {svc} access tokens expire after 900 seconds.
    query: {svc} access token expiry 900 seconds

redis-eviction | semantic | resources/caching | service:{svc} tool:redis | caching
    title: {svc} cache eviction
    claim: The {svc} Redis cache starts evicting keys at 75 percent memory.
    query: {svc} Redis eviction at 75 percent memory

pr-size | user_preference | areas/preferences | service:{svc} person:{person} | git
    title: Pull request size for {svc}
    claim: {person} wants {svc} pull requests kept under 400 changed lines.
    query: {svc} pull requests under 400 changed lines

canary-duration | verdict | resources/verdicts | service:{svc} | deploys
    title: {svc} canary length
    claim: The {svc} canary runs for 30 minutes before promotion.
    query: {svc} canary runs for 30 minutes

grpc-port | semantic | resources/networking | service:{svc} | networking
    title: {svc} gRPC endpoint
    claim: The {svc} gRPC server listens on port 50051.
    query: {svc} gRPC port 50051

holiday-scale | procedural | projects/{ws} | service:{svc} project:{ws} | capacity
    title: {svc} holiday capacity
    claim: Scale {svc} to 12 pods ahead of the holiday sale.
    query: scale {svc} to 12 pods for the holiday sale

reindex-duration | agent_insight | areas/insights | service:{svc} | search
    title: {svc} full reindex time
    claim: A full reindex of {svc} takes about 45 minutes.
    query: {svc} full reindex takes 45 minutes

lifecycle-days | semantic | resources/storage | bucket:{bucket} | storage
    title: {bucket} lifecycle rule
    claim: The {bucket} bucket lifecycle deletes objects after 90 days.
    query: {bucket} lifecycle deletes objects at 90 days

oom-137 | error_pattern | areas/error-patterns | service:{svc} | kubernetes
    title: {svc} out-of-memory kills
    claim: {svc} exits with code 137 when a pod exceeds its 512Mi memory limit.
    query: {svc} pod exit code 137

gateway-connections | semantic | resources/networking | service:{svc} | networking
    title: {svc} gateway connection limit
    claim: The {svc} API gateway allows 50 concurrent connections per client.
    query: {svc} gateway 50 concurrent connections per client

autovacuum-workers | precedent | resources/precedents | database:{db} | postgres
    title: {db} vacuum backlog
    claim: The {db} vacuum backlog cleared after raising autovacuum workers to 6.
    query: {db} autovacuum workers raised to 6

terraform-pin | procedural | areas/procedures | team:{team} tool:terraform | terraform
    title: Terraform version for {team} modules
    claim: Pin terraform to 1.7.5 in the {team} modules.
    query: {team} modules pinned to terraform 1.7.5
"""

QUALIFIER: Final = """
migrations-staging | procedural | areas/procedures | database:{db} | migrations
    title: Where {db} schema migrations go
    claim: Apply {db} schema migrations on staging.
    query: apply {db} schema migrations on staging

reporting-replica | semantic | resources/postgres | database:{db} | reporting
    title: {db} reporting traffic
    claim: Reporting queries for {db} go to the replica.
    query: {db} reporting queries go to the replica

maintenance-flag | procedural | resources/runbooks | service:{svc} | maintenance
    title: {svc} maintenance flag
    claim: Enable the {svc} maintenance flag while draining traffic.
    query: enable the {svc} maintenance flag while draining traffic

audit-write-only | semantic | resources/security | service:{svc} | audit
    title: {svc} audit log permissions
    claim: The {svc} audit log is write-only for application roles.
    query: {svc} audit log write-only for application roles

upstream-cold-cache | error_pattern | areas/error-patterns | service:{svc} | caching
    title: {svc} timeout spikes
    claim: {svc} timeouts spike when the upstream cache is cold.
    query: {svc} timeouts when the upstream cache is cold

outbound-processor | semantic | resources/networking | service:{svc} | networking
    title: {svc} payment processor traffic
    claim: Traffic from {svc} to the payment processor is outbound only.
    query: {svc} traffic to the payment processor is outbound

min-log-level | user_preference | areas/preferences | service:{svc} person:{person} | logging
    title: {svc} log level
    claim: {person} prefers the minimum log level for {svc} set to debug.
    query: {svc} minimum log level set to debug

backup-replica | procedural | areas/databases | database:{db} | backups
    title: {db} backup source
    claim: {db} backups are taken from the replica.
    query: {db} backups are taken from the replica

session-cookies | semantic | resources/security | service:{svc} | security
    title: {svc} session storage
    claim: {svc} keeps sessions in encrypted cookies.
    query: {svc} sessions kept in encrypted cookies

weekday-schema | verdict | resources/verdicts | database:{db} | change-management
    title: Timing of {db} schema changes
    claim: Schema changes to {db} ship on weekday mornings only.
    query: {db} schema changes ship on weekday mornings

admin-internal | semantic | resources/security | service:{svc} | networking
    title: {svc} admin endpoint exposure
    claim: The {svc} admin endpoint is internal to the VPC.
    query: {svc} admin endpoint is internal to the VPC

p99-first | agent_insight | areas/insights | service:{svc} | observability
    title: Spotting {svc} latency regressions
    claim: {svc} latency regressions show up first in the p99 panel.
    query: {svc} latency regressions show up first in p99

bucket-public | semantic | resources/storage | bucket:{bucket} | storage
    title: {bucket} bucket access
    claim: The {bucket} bucket is public.
    query: {bucket} bucket is public

blue-pool | procedural | projects/{ws} | service:{svc} project:{ws} | deploys
    title: {svc} rollout pool
    claim: Deploy {svc} to the blue pool.
    query: deploy {svc} to the blue pool

ingress-resets | error_pattern | areas/error-patterns | service:{svc} | kubernetes
    title: {svc} connection resets
    claim: Connection resets on {svc} come from the ingress controller.
    query: {svc} connection resets from the ingress controller

invoice-order | semantic | projects/{ws} | service:{svc} project:{ws} | billing
    title: {svc} invoice ordering
    claim: {svc} lists invoices in descending date order.
    query: {svc} invoices in descending date order

downstream-dns | precedent | resources/precedents | service:{svc} | incidents
    title: {svc} DNS outage
    claim: The {svc} outage was traced to the downstream DNS change.
    query: {svc} outage traced to the downstream DNS change

weekend-alerts | user_preference | areas/preferences | service:{svc} person:{person} | oncall
    title: {svc} alert routing
    claim: {person} wants {svc} alerts routed to the {team} channel on weekend shifts.
    query: {svc} alerts on weekend shifts

sync-acks | semantic | resources/kafka | queue:{queue} | kafka
    title: {queue} producer acknowledgements
    claim: The {queue} producer waits for synchronous acknowledgements.
    query: {queue} producer synchronous acknowledgements

cron-disable | procedural | resources/runbooks | service:{svc} database:{db} | restores
    title: {svc} cron jobs during restores
    claim: Disable the {svc} cron jobs during the {db} restore.
    query: disable the {svc} cron jobs during the {db} restore
"""


def parse_catalogue(kind: str, text: str) -> tuple[ProbeTemplate, ...]:
    """Parse one block of entries (see the module docstring) into templates."""
    out: list[ProbeTemplate] = []
    for entry in (e for e in text.strip().split("\n\n") if e.strip()):
        head, *rest = entry.strip().splitlines()
        key, memory_type, folder, entities, tags = (part.strip() for part in head.split("|"))
        fields = dict(line.strip().split(": ", 1) for line in rest)
        out.append(
            ProbeTemplate(
                key=key,
                kind=kind,
                memory_type=memory_type,
                folder=folder,
                title=fields["title"],
                claim=fields["claim"],
                query=fields["query"],
                entities=tuple(entities.split()),
                tags=tuple(tags.split()),
            )
        )
    return tuple(out)


NEGATION_TEMPLATES: Final = parse_catalogue("negation", NEGATION)
NUMBER_TEMPLATES: Final = parse_catalogue("number", NUMBER)
QUALIFIER_TEMPLATES: Final = parse_catalogue("qualifier", QUALIFIER)

__all__ = [
    "NEGATION_TEMPLATES",
    "NUMBER_TEMPLATES",
    "QUALIFIER_TEMPLATES",
    "ProbeTemplate",
    "parse_catalogue",
]
