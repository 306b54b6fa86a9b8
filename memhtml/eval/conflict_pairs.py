"""A labelled set of claim pairs for write-time conflict detection.

Each pair is (older claim, newer claim) and a label:

* ``conflict`` (50): the newer claim gives the same fact another value, so
  both cannot be current. Subkinds: a number, a name, a version, a state,
  FactConsolidation-style templates, and ``hard``: conflicts written so that
  a frame key cannot see them (no linking token, the frame moves, a negation
  outside the value). The hard ones are in the set on purpose: they are what
  recall is honestly missing.
* ``compatible`` (50): both claims can hold at once, and they share words.
  Subkinds: the same relation of another subject, another relation of the
  same subject, a restatement or refinement of the same value, and claims
  with no frame at all.
* ``set_valued`` (8, scored separately): one frame holding several true values
  at once ("allergic to peanuts" / "allergic to shellfish"). No frame rule can
  tell these from a conflict without knowing the relation; they are reported
  beside the 50/50 figures so the limitation stays visible.

The set was written before the conflict rule was tuned, and is not a
benchmark: it is small, in one register (operations notes and encyclopedic
facts), and written by the people who wrote the rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

CONFLICT: Final = "conflict"
COMPATIBLE: Final = "compatible"
SET_VALUED: Final = "set_valued"


@dataclass(frozen=True)
class ClaimPair:
    """Two claims, the older first, and whether they conflict."""

    pair_id: str
    label: str  # conflict | compatible | set_valued
    subkind: str
    older: str
    newer: str


_CONFLICTS: Final[tuple[tuple[str, str, str], ...]] = (
    # numbers
    ("number", "The connection pool ceiling is 64.", "The connection pool ceiling is 128."),
    (
        "number",
        "The checkout API timeout is 30 seconds.",
        "The checkout API timeout is 45 seconds.",
    ),
    (
        "number",
        "The retention period of audit logs is 90 days.",
        "The retention period of audit logs is 180 days.",
    ),
    ("number", "The maximum upload size is 10 MB.", "The maximum upload size is 25 MB."),
    (
        "number",
        "The default replica count of the search cluster is 3.",
        "The default replica count of the search cluster is 5.",
    ),
    ("number", "The staging database port is 5432.", "The staging database port is 6432."),
    (
        "number",
        "The rate limit of the public API is 100 requests per minute.",
        "The rate limit of the public API is 250 requests per minute.",
    ),
    ("number", "The on-call rotation length is 7 days.", "The on-call rotation length is 14 days."),
    (
        "number",
        "The cache TTL of session tokens is 15 minutes.",
        "The cache TTL of session tokens is 60 minutes.",
    ),
    (
        "number",
        "The sprint length of the platform team is two weeks.",
        "The sprint length of the platform team is three weeks.",
    ),
    # names, people, places
    (
        "name",
        "The owner of the billing service is Alice Chen.",
        "The owner of the billing service is Marco Rossi.",
    ),
    (
        "name",
        "The incident commander for INC-4821 is Priya.",
        "The incident commander for INC-4821 is Tom.",
    ),
    (
        "name",
        "The tech lead of the search team is Dana.",
        "The tech lead of the search team is Lee.",
    ),
    ("name", "Alice Chen lives in Lisbon.", "Alice Chen lives in Berlin."),
    (
        "name",
        "The primary contact at Acme is Jordan Blake.",
        "The primary contact at Acme is Sam Ortiz.",
    ),
    (
        "name",
        "The default branch of the infra repo is main.",
        "The default branch of the infra repo is trunk.",
    ),
    (
        "name",
        "The code review tool of the team is Gerrit.",
        "The code review tool of the team is GitHub.",
    ),
    (
        "name",
        "The CI system of the mobile app is Jenkins.",
        "The CI system of the mobile app is Buildkite.",
    ),
    (
        "name",
        "The vendor of the payment gateway is Stripe.",
        "The vendor of the payment gateway is Adyen.",
    ),
    (
        "name",
        "The hostname of the metrics server is metrics-01.",
        "The hostname of the metrics server is metrics-02.",
    ),
    # versions
    ("version", "The pinned terraform version is 1.7.5.", "The pinned terraform version is 1.7.6."),
    (
        "version",
        "The Postgres major version in production is 14.",
        "The Postgres major version in production is 16.",
    ),
    (
        "version",
        "The Python runtime of the data jobs is 3.11.",
        "The Python runtime of the data jobs is 3.12.",
    ),
    (
        "version",
        "The minimum supported iOS version is 15.",
        "The minimum supported iOS version is 16.",
    ),
    (
        "version",
        "The base image of the web service is debian-12.",
        "The base image of the web service is alpine-3.19.",
    ),
    (
        "version",
        "The current API version of the SDK is v2.",
        "The current API version of the SDK is v3.",
    ),
    # states
    (
        "state",
        "The feature flag for dark mode is enabled.",
        "The feature flag for dark mode is disabled.",
    ),
    (
        "state",
        "The status of the migration to Kafka is blocked.",
        "The status of the migration to Kafka is done.",
    ),
    ("state", "The billing export job is paused.", "The billing export job is running."),
    ("state", "The sessions cache is enabled.", "The sessions cache is not enabled."),
    (
        "state",
        "The VPN requirement for staging is mandatory.",
        "The VPN requirement for staging is optional.",
    ),
    # FactConsolidation-style templates
    ("template", "The capital of Germany is Berlin.", "The capital of Germany is Bonn."),
    ("template", "Lionel Messi is a citizen of Argentina.", "Lionel Messi is a citizen of Spain."),
    (
        "template",
        "Apple Inc. was founded by Steve Jobs.",
        "Apple Inc. was founded by Ronald Wayne.",
    ),
    (
        "template",
        "The headquarters of Nokia is located in the city of Espoo.",
        "The headquarters of Nokia is located in the city of Helsinki.",
    ),
    (
        "template",
        "Hines Ward plays the position of cornerback.",
        "Hines Ward plays the position of wide receiver.",
    ),
    ("template", "Tom Hanks is married to Rita Wilson.", "Tom Hanks is married to Samantha Lewes."),
    (
        "template",
        "The official language of Brazil is Portuguese.",
        "The official language of Brazil is Spanish.",
    ),
    (
        "template",
        "Leo Stein is a citizen of United States of America.",
        "Leo Stein is a citizen of France.",
    ),
    # hard: no linking token, the frame moves, or the flip sits outside the value
    ("hard", "The API listens on port 8080.", "The API listens on port 9090."),
    ("hard", "The nightly backup starts at 02:00.", "The nightly backup starts at 03:30."),
    ("hard", "Drain the VIP before the deploy.", "Do not drain the VIP before the deploy."),
    ("hard", "The deploy freeze is in effect.", "The deploy freeze is lifted."),
    ("hard", "The pool ceiling is 64.", "The pool ceiling is set to 128."),
    ("hard", "Deploys happen on Tuesdays.", "Deploys happen on Thursdays."),
    ("hard", "The queue holds 500 messages at most.", "The queue holds 800 messages at most."),
    ("hard", "Rotate the signing keys every 30 days.", "Rotate the signing keys every 90 days."),
    ("hard", "Alice approves the production releases.", "Bob approves the production releases."),
    (
        "hard",
        "The search index is rebuilt nightly by the indexer.",
        "The search index is rebuilt hourly by the indexer.",
    ),
    ("hard", "The build cache is stored in S3.", "The build cache is stored on local disks."),
)

_COMPATIBLE: Final[tuple[tuple[str, str, str], ...]] = (
    # the same relation, another subject
    ("other_subject", "The capital of France is Paris.", "The capital of Italy is Rome."),
    (
        "other_subject",
        "The owner of the billing service is Alice Chen.",
        "The owner of the search service is Alice Chen.",
    ),
    (
        "other_subject",
        "The checkout API timeout is 30 seconds.",
        "The payments API timeout is 30 seconds.",
    ),
    ("other_subject", "The connection pool ceiling is 64.", "The thread pool ceiling is 64."),
    (
        "other_subject",
        "Lionel Messi is a citizen of Argentina.",
        "Diego Maradona is a citizen of Argentina.",
    ),
    (
        "other_subject",
        "The tech lead of the search team is Dana.",
        "The tech lead of the billing team is Lee.",
    ),
    (
        "other_subject",
        "The retention period of audit logs is 90 days.",
        "The retention period of access logs is 30 days.",
    ),
    (
        "other_subject",
        "The staging database port is 5432.",
        "The production database port is 6432.",
    ),
    (
        "other_subject",
        "The pinned terraform version is 1.7.5.",
        "The pinned terragrunt version is 0.55.",
    ),
    (
        "other_subject",
        "The feature flag for dark mode is enabled.",
        "The feature flag for beta search is disabled.",
    ),
    (
        "other_subject",
        "The hostname of the metrics server is metrics-01.",
        "The hostname of the logs server is logs-01.",
    ),
    ("other_subject", "Alice Chen lives in Lisbon.", "Bruno Costa lives in Lisbon."),
    (
        "other_subject",
        "The default branch of the infra repo is main.",
        "The default branch of the docs repo is trunk.",
    ),
    (
        "other_subject",
        "The CI system of the mobile app is Jenkins.",
        "The CI system of the web app is Buildkite.",
    ),
    (
        "other_subject",
        "The headquarters of Nokia is located in the city of Espoo.",
        "The headquarters of Kone is located in the city of Espoo.",
    ),
    ("other_subject", "The author of Dune is Frank Herbert.", "The author of Emma is Jane Austen."),
    # another relation of the same subject
    (
        "other_relation",
        "The checkout API timeout is 30 seconds.",
        "The checkout API retry limit is 3.",
    ),
    (
        "other_relation",
        "The owner of the billing service is Alice Chen.",
        "The on-call backup of the billing service is Marco Rossi.",
    ),
    (
        "other_relation",
        "The capital of Germany is Berlin.",
        "The largest port of Germany is Hamburg.",
    ),
    ("other_relation", "Alice Chen lives in Lisbon.", "Alice Chen works in Berlin."),
    (
        "other_relation",
        "The search cluster replica count is 3.",
        "The search cluster shard count is 12.",
    ),
    (
        "other_relation",
        "Tom Hanks is married to Rita Wilson.",
        "Tom Hanks is a citizen of the United States.",
    ),
    (
        "other_relation",
        "The Postgres major version in production is 14.",
        "The Postgres major version in staging is 16.",
    ),
    ("other_relation", "The sessions cache is enabled.", "The sessions cache is backed by Redis."),
    (
        "other_relation",
        "The billing export job is paused.",
        "The billing export job is owned by the finance team.",
    ),
    (
        "other_relation",
        "The deploy pipeline of the web app is GitHub Actions.",
        "The deploy target of the web app is Kubernetes.",
    ),
    (
        "other_relation",
        "The rate limit of the public API is 100 requests per minute.",
        "The rate limit of the public API is enforced by the gateway.",
    ),
    (
        "other_relation",
        "The primary contact at Acme is Jordan Blake.",
        "The billing contact at Acme is Sam Ortiz.",
    ),
    (
        "other_relation",
        "The Kafka cluster is owned by the data team.",
        "The Kafka cluster is monitored by the SRE team.",
    ),
    (
        "other_relation",
        "The web app is deployed to Kubernetes.",
        "The web app is written in TypeScript.",
    ),
    # the same value restated or refined
    (
        "refinement",
        "The connection pool ceiling is 64.",
        "The connection pool ceiling is 64 connections per node.",
    ),
    (
        "refinement",
        "The owner of the billing service is Alice Chen.",
        "The owner of the billing service is alice chen.",
    ),
    ("refinement", "The checkout API timeout is 30 seconds.", "The checkout API timeout is 30 s."),
    (
        "refinement",
        "The default branch of the infra repo is main.",
        "The default branch of the infra repo is the main branch.",
    ),
    (
        "refinement",
        "The vendor of the payment gateway is Stripe.",
        "The vendor of the payment gateway is Stripe, Inc.",
    ),
    ("refinement", "Alice Chen lives in Lisbon.", "Alice Chen lives in Lisbon, Portugal."),
    (
        "refinement",
        "The Python runtime of the data jobs is 3.11.",
        "The Python runtime of the data jobs is Python 3.11.",
    ),
    (
        "refinement",
        "The sprint length of the platform team is two weeks.",
        "The sprint length of the platform team is 2 weeks.",
    ),
    (
        "refinement",
        "The retention period of audit logs is 90 days.",
        "The retention period of audit logs is 90 days in cold storage.",
    ),
    (
        "refinement",
        "The tech lead of the search team is Dana.",
        "The tech lead of the search team is Dana Park.",
    ),
    (
        "refinement",
        "The maximum upload size is 10 MB.",
        "The maximum upload size is 10 megabytes.",
    ),
    # no frame at all, many shared words
    ("no_frame", "Run the backfill on db-03 first.", "Run the vacuum on db-03 first."),
    ("no_frame", "Drain the VIP before the deploy.", "Drain the VIP before the failover."),
    ("no_frame", "The API listens on port 8080.", "The admin API listens on port 9090."),
    ("no_frame", "Alice approves the production releases.", "Alice approves the hotfixes."),
    (
        "no_frame",
        "Rotate the signing keys every 30 days.",
        "Rotate the TLS certificates every 30 days.",
    ),
    (
        "no_frame",
        "Page the on-call before restarting the primary.",
        "Page the DBA before restarting the primary.",
    ),
    (
        "no_frame",
        "The nightly backup starts at 02:00.",
        "The nightly vacuum starts at 02:00.",
    ),
    (
        "no_frame",
        "Squash-merge the feature branches into main.",
        "Squash-merge the dependency bumps into main.",
    ),
    (
        "no_frame",
        "Snapshot the volume before resizing it.",
        "Snapshot the volume before detaching it.",
    ),
)

_SET_VALUED: Final[tuple[tuple[str, str, str], ...]] = (
    ("set_valued", "Alice Chen is allergic to peanuts.", "Alice Chen is allergic to shellfish."),
    (
        "set_valued",
        "Bob Stone is a member of the infra team.",
        "Bob Stone is a member of the security guild.",
    ),
    ("set_valued", "The release is blocked by INC-101.", "The release is blocked by INC-102."),
    ("set_valued", "Maria Silva is fluent in Portuguese.", "Maria Silva is fluent in Spanish."),
    (
        "set_valued",
        "The search service is a consumer of the orders topic.",
        "The search service is a consumer of the payments topic.",
    ),
    (
        "set_valued",
        "Dana Park is a reviewer of the auth module.",
        "Dana Park is a reviewer of the billing module.",
    ),
    (
        "set_valued",
        "The client library is available in Python.",
        "The client library is available in Go.",
    ),
    (
        "set_valued",
        "The outage affected customers in Europe.",
        "The outage affected customers in Asia.",
    ),
)


def _pairs(label: str, prefix: str, rows: tuple[tuple[str, str, str], ...]) -> list[ClaimPair]:
    return [
        ClaimPair(f"{prefix}{i:02d}", label, subkind, older, newer)
        for i, (subkind, older, newer) in enumerate(rows, start=1)
    ]


def claim_pairs(*, include_set_valued: bool = True) -> list[ClaimPair]:
    """The labelled pairs: 50 conflicting, 50 compatible, then the 8 set-valued ones."""
    out = _pairs(CONFLICT, "c", _CONFLICTS) + _pairs(COMPATIBLE, "k", _COMPATIBLE)
    if include_set_valued:
        out += _pairs(SET_VALUED, "s", _SET_VALUED)
    return out
