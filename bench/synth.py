"""A synthetic corpus generator: a pure function of (n, seed).

Plausible engineering memories (services, incidents, settings, people,
procedures) with realistic lengths (200-1,200 characters), types, tags,
entities and event times, so index and search costs resemble a real store.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memhtml.contracts.paths import placement_for, with_ordinal
from memhtml.html import NewMemory, render_memory

SERVICES = [
    "checkout-api",
    "ledger-service",
    "auth-gateway",
    "catalog-db",
    "search-indexer",
    "pricing-engine",
    "inventory-api",
    "payments-router",
    "report-builder",
    "edge-proxy",
    "fraud-scorer",
    "notification-hub",
    "session-store",
    "image-resizer",
    "billing-worker",
]
THINGS = [
    "connection pool",
    "read replica",
    "cache eviction",
    "retry budget",
    "rate limiter",
    "circuit breaker",
    "deploy pipeline",
    "feature flag",
    "schema migration",
    "load balancer",
    "message queue",
    "disk quota",
    "TLS certificate",
    "cron schedule",
    "log retention",
]
VERBS = [
    "drains",
    "throttles",
    "rejects",
    "retries",
    "caches",
    "replicates",
    "rotates",
    "compacts",
    "shards",
    "mirrors",
    "pauses",
    "restarts",
]
PEOPLE = [
    "Ana Ruiz",
    "Ben Okafor",
    "Chen Wei",
    "Dara Walsh",
    "Eli Cohen",
    "Fatima Khan",
    "Goran Petrov",
    "Hana Sato",
    "Ivan Horvat",
    "Jade Moreau",
]
FILLER = [
    "This was confirmed during the last on-call rotation.",
    "The change went out behind a flag and was watched for a day.",
    "Dashboards showed the effect within minutes.",
    "Nobody has seen a regression since the fix landed.",
    "The runbook was updated to say so explicitly.",
    "It only matters under sustained peak traffic.",
    "A load test reproduced it twice in staging.",
    "The alert threshold was tuned after this.",
]
TYPES = (
    ["semantic"] * 4
    + ["episodic"] * 3
    + ["procedural"] * 2
    + ["error_pattern", "agent_insight", "user_preference", "verdict", "precedent"]
)


def _memory(rng: random.Random, i: int) -> dict[str, Any]:
    svc, thing, verb = rng.choice(SERVICES), rng.choice(THINGS), rng.choice(VERBS)
    number = rng.randint(2, 9000)
    unit = rng.choice(["ms", "connections", "requests", "percent", "workers"])
    claim = f"The {svc} {thing} {verb} at {number} {unit} (note {i})."
    paras = []
    for _ in range(rng.randint(1, 3)):
        sentences = [rng.choice(FILLER) for _ in range(rng.randint(2, 6))]
        sentences.insert(0, f"{rng.choice(PEOPLE)} saw the {thing} on {svc} {verb} under load.")
        paras.append(" ".join(sentences))
    return {
        "title": f"{svc} {thing} {i}",
        "type": rng.choice(TYPES),
        "claim": claim,
        "body": paras,
        "tag": [thing.replace(" ", "-")],
        "entity": [f"service:{svc}"],
        "event_at": f"{rng.randint(2022, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    }


def synth_ops(n: int, seed: int = 0, offset: int = 0) -> list[dict[str, Any]]:
    """`n` write ops (deterministic in seed and offset)."""
    rng = random.Random(seed * 1_000_003 + offset)
    return [{"op": "write", **_memory(rng, offset + i)} for i in range(n)]


def synth_items(
    n: int, seed: int = 0, now: str = "2026-01-01T00:00:00Z"
) -> Iterator[tuple[str, bytes]]:
    """`n` rendered memory files as (path, bytes), one at a time (a 1M store never sits
    in memory whole)."""
    taken: set[str] = set()
    for op in synth_ops(n, seed):
        path = placement_for(op["type"], op["title"], tags=op["tag"])
        ordinal = 1
        while with_ordinal(path, ordinal) in taken:
            ordinal += 1
        path = with_ordinal(path, ordinal)
        taken.add(path)
        etype, _, ename = op["entity"][0].partition(":")
        new = NewMemory(
            title=op["title"],
            memory_type=op["type"],
            created=now,
            updated=now,
            claim=op["claim"],
            body=tuple(op["body"]),
            tags=tuple(op["tag"]),
            entities=((etype, ename),),
            event_at=op["event_at"],
        )
        yield path, render_memory(new).encode("utf-8")


def synth_files(n: int, seed: int = 0, now: str = "2026-01-01T00:00:00Z") -> dict[str, bytes]:
    """`n` rendered memory files by path (what a store of n memories holds)."""
    return dict(synth_items(n, seed, now))


def build_store(root: Path, n: int, seed: int = 0) -> Path:
    """A committed memory root holding `n` synthetic memories (one bulk commit)."""
    from memhtml.store.layout import init_repo

    init_repo(root)
    made: set[Path] = set()
    for rel, data in synth_items(n, seed):
        target = root / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        target.write_bytes(data)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "commit", "-q", "--no-verify", "-m", f"bench: {n} memories"], cwd=root, check=True
    )
    # Packed, as a store grown through memhtml's writes is (its upkeep repacks): a million
    # loose objects would make the first write's upkeep pack them all.
    subprocess.run(["git", "repack", "-a", "-d", "-q"], cwd=root, check=True)
    return root
