"""The fixture's world: who and what an engineering-ops memory corpus talks about.

Closed vocabularies (services, databases, people, workspaces) and a `World`
that draws from them with one seeded `random.Random`, hands out unique paths
and dates relative to a fixed `now`. Nothing here reads a clock, a file or the
network: the same seed and `now` give the same world.

Vocabulary entries are chosen so that a flip rule never fires on them (no
negation words, no qualifier words, no free-standing numbers), which keeps
every control derived from a probe claim a change of the claim's own token
(tests/eval/test_flips.py checks this).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, TypeVar

from memhtml.contracts.dates import as_datetime, format_instant
from memhtml.contracts.paths import slugify, with_ordinal

T = TypeVar("T")

SERVICES: Final[tuple[str, ...]] = (
    "checkout-api",
    "ledger-service",
    "billing-worker",
    "auth-gateway",
    "search-indexer",
    "notification-hub",
    "inventory-api",
    "payments-router",
    "session-broker",
    "image-resizer",
    "report-builder",
    "pricing-engine",
    "fraud-scorer",
    "shipping-quotes",
    "catalog-sync",
)
DATABASES: Final[tuple[str, ...]] = (
    "ledger-db",
    "orders-db",
    "accounts-db",
    "catalog-db",
    "events-db",
    "audit-db",
)
QUEUES: Final[tuple[str, ...]] = (
    "order-events",
    "invoice-jobs",
    "email-outbox",
    "index-updates",
    "payout-batches",
)
BUCKETS: Final[tuple[str, ...]] = ("audit-archive", "invoice-pdfs", "db-backups", "access-logs")
REGIONS: Final[tuple[str, ...]] = ("us-east-1", "eu-west-1", "ap-southeast-2", "us-west-2")
TEAMS: Final[tuple[str, ...]] = ("payments", "platform", "data", "identity", "growth", "storage")
TOOLS: Final[tuple[str, ...]] = (
    "terraform",
    "helm",
    "argo-cd",
    "pgbouncer",
    "haproxy",
    "envoy",
    "kafka",
    "redis",
    "grafana",
    "pagerduty",
    "vault",
    "kubectl",
)
WORKSPACES: Final[tuple[str, ...]] = (
    "checkout-revamp",
    "ledger-migration",
    "edge-proxy",
    "search-reindex",
    "billing-rewrite",
    "auth-hardening",
)
PEOPLE: Final[tuple[str, ...]] = (
    "Amara Okafor",
    "Jonas Lindqvist",
    "Priya Raman",
    "Mateo Alvarez",
    "Hana Kobayashi",
    "Tomasz Nowak",
    "Leila Haddad",
    "Sam Whitfield",
    "Ines Duarte",
    "Kwame Mensah",
    "Yuki Tanaka",
    "Noor Aziz",
)
ROLES: Final[tuple[str, ...]] = (
    "site reliability engineer",
    "database administrator",
    "engineering manager",
    "backend lead",
    "security engineer",
    "staff engineer",
    "product manager",
    "on-call coordinator",
)
TIMEZONES: Final[tuple[str, ...]] = (
    "Europe/Berlin",
    "America/New_York",
    "Asia/Tokyo",
    "Europe/Lisbon",
    "Africa/Lagos",
    "America/Denver",
)
CAUSES: Final[tuple[str, ...]] = (
    "a config push that dropped the connection pool size",
    "an expired TLS certificate on the internal load balancer",
    "a schema migration that locked the orders table",
    "a dependency bump that changed the JSON date format",
    "a noisy neighbour saturating the node network",
    "a DNS change that pointed clients at the old cluster",
    "a retry storm from the mobile clients",
    "a cache stampede after the nightly flush",
)
CONTEXTS: Final[tuple[str, ...]] = (
    "Learned the hard way during an incident review.",
    "Agreed in the weekly operations sync.",
    "Confirmed by reading the service configuration.",
    "Written down after a near miss in the change window.",
    "The owning team confirmed this in the channel.",
    "Recorded while pairing on the on-call handover.",
    "Noted while reviewing the runbook with the database team.",
    "Came up twice in postmortems this quarter.",
)


@dataclass(frozen=True)
class Person:
    """A person with a file under resources/people/."""

    name: str
    role: str
    team: str
    timezone: str
    path: str

    @property
    def first(self) -> str:
        """The first name (an alias)."""
        return self.name.split()[0]

    @property
    def handle(self) -> str:
        """A chat handle (an alias)."""
        first, last = self.name.lower().split()[:2]
        return f"{first[0]}{last}"


@dataclass(frozen=True)
class Session:
    """An agent session whose log is an episodic memory (a provenance link target)."""

    session_id: str
    path: str
    day: str


@dataclass
class World:
    """Seeded draws, dates relative to `now`, and the set of paths handed out."""

    rng: random.Random
    now: str
    taken: set[str] = field(default_factory=set)
    workspaces: list[str] = field(default_factory=list)
    people: list[Person] = field(default_factory=list)
    sessions: list[Session] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._now_dt: datetime = as_datetime(self.now)
        self.workspaces = self.rng.sample(list(WORKSPACES), 4)

    # -- draws -------------------------------------------------------------------------
    def pick(self, items: Sequence[T]) -> T:
        """One item."""
        return items[self.rng.randrange(len(items))]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """k distinct items."""
        return self.rng.sample(list(items), k)

    def chance(self, p: float) -> bool:
        """True with probability p."""
        return self.rng.random() < p

    def slots(self) -> dict[str, str]:
        """One value for every template slot."""
        person = self.pick(self.people) if self.people else None
        return {
            "svc": self.pick(SERVICES),
            "db": self.pick(DATABASES),
            "queue": self.pick(QUEUES),
            "bucket": self.pick(BUCKETS),
            "region": self.pick(REGIONS),
            "team": self.pick(TEAMS),
            "tool": self.pick(TOOLS),
            "ws": self.pick(self.workspaces),
            "person": person.name if person else "Sam Whitfield",
        }

    # -- dates -------------------------------------------------------------------------
    def moment(self, min_days: int, max_days: int) -> datetime:
        """A whole-minute instant between max_days and min_days before now."""
        minutes = self.rng.randint(min_days * 1440, max(min_days * 1440, max_days * 1440))
        return (self._now_dt - timedelta(minutes=minutes)).replace(second=0, microsecond=0)

    def dates(self, min_days: int = 2, max_days: int = 400) -> tuple[str, str]:
        """(created, updated) instants, updated on or after created and before now."""
        created = self.moment(min_days, max_days)
        later = created + timedelta(minutes=self.rng.randint(0, 20 * 1440))
        updated = min(later, self._now_dt - timedelta(days=1))
        updated = max(updated, created)
        return format_instant(created), format_instant(updated)

    def day_before(self, instant: str, max_days: int = 10) -> str:
        """A calendar day up to max_days before `instant` (an event date)."""
        moment = as_datetime(instant) - timedelta(days=self.rng.randint(0, max_days))
        return moment.strftime("%Y-%m-%d")

    def future_day(self, min_days: int, max_days: int) -> str:
        """A calendar day after now (due dates)."""
        moment = self._now_dt + timedelta(days=self.rng.randint(min_days, max_days))
        return moment.strftime("%Y-%m-%d")

    @staticmethod
    def label(day: str) -> str:
        """A human label for a day: 2025-10-03 -> 3 October 2025."""
        moment = datetime.strptime(day, "%Y-%m-%d")
        return f"{moment.day} {moment.strftime('%B %Y')}"

    # -- paths -------------------------------------------------------------------------
    def claim_path(self, folder: str, title: str) -> str:
        """A free path for `title` in `folder` (collisions get -2, -3, ... like the store)."""
        base = f"{folder}/{slugify(title)}.html"
        ordinal = 1
        path = base
        while path in self.taken:
            ordinal += 1
            path = with_ordinal(base, ordinal)
        self.taken.add(path)
        return path

    def reserve(self, path: str) -> str:
        """Reserve an exact path (raises if taken: the generator planned it)."""
        if path in self.taken:
            raise ValueError(f"fixture path planned twice: {path}")
        self.taken.add(path)
        return path


def fill(template: str, slots: dict[str, str]) -> str:
    """`str.format` over the slot values."""
    return template.format(**slots)


__all__ = [
    "BUCKETS",
    "CAUSES",
    "CONTEXTS",
    "DATABASES",
    "PEOPLE",
    "QUEUES",
    "REGIONS",
    "ROLES",
    "SERVICES",
    "TEAMS",
    "TOOLS",
    "WORKSPACES",
    "Person",
    "Session",
    "World",
    "fill",
]
