"""The probe set: target facts, their derived controls, and the queries that ask for them.

A probe is (query, target path, control paths, kind). Its target is a fixture
memory whose claim comes from a template below; its controls are the same
memory (same type, folder, entities, tags, dates and body) with the claim
flipped by `memhtml.eval.flips`, so each control is a high-cosine wrong answer
by construction and differs from the target in exactly one token.

Well-posedness is checked when a probe is built, never assumed: the query
must carry the target's distinguishing token for every control (the same
flip applied to the query must succeed, in the same direction), so the target
is the one right answer lexically, and the query paraphrases the claim, so it
is answerable semantically. Negation and qualifier templates are written in
one form; the seed decides whether the target is that form or its flip, so
both polarities (e.g. "drain" and "do not drain") are exercised.

Controls are named like the store names a second memory with the same title
(`<slug>-2.html`), which sorts before the target's `<slug>.html`: every tie
broken by path goes against the target, so the gate cannot pass by luck.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from memhtml.eval.fixture_markup import MemSpec
from memhtml.eval.fixture_world import CONTEXTS, World, fill
from memhtml.eval.flips import Flip, change_number, flip, flip_like
from memhtml.eval.probe_catalogue import (
    NEGATION_TEMPLATES,
    NUMBER_TEMPLATES,
    QUALIFIER_TEMPLATES,
    ProbeTemplate,
)

PROBE_KINDS: Final[tuple[str, ...]] = ("negation", "number", "qualifier")


@dataclass(frozen=True)
class Probe:
    """A query whose right answer is `target`, with the near-identical wrong answers."""

    probe_id: str
    kind: str
    query: str
    target: str
    controls: tuple[str, ...]
    control_kinds: tuple[str, ...]
    target_claim: str
    control_claims: tuple[str, ...]
    target_token: str
    control_tokens: tuple[str, ...]
    rules: tuple[str, ...] = field(default=())

    def to_data(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "probe_id": self.probe_id,
            "kind": self.kind,
            "query": self.query,
            "target": self.target,
            "controls": list(self.controls),
            "control_kinds": list(self.control_kinds),
            "target_claim": self.target_claim,
            "control_claims": list(self.control_claims),
            "target_token": self.target_token,
            "control_tokens": list(self.control_tokens),
            "rules": list(self.rules),
        }


def catalogue() -> tuple[ProbeTemplate, ...]:
    """Every template, interleaved by kind (negation, number, qualifier, negation, ...)."""
    out: list[ProbeTemplate] = []
    for trio in zip(NEGATION_TEMPLATES, NUMBER_TEMPLATES, QUALIFIER_TEMPLATES, strict=True):
        out.extend(trio)
    return tuple(out)


class IllPosedProbeError(ValueError):
    """A template whose query does not single out its target (a bug in the catalogue)."""


def _primary_flips(kind: str, claim: str) -> list[Flip]:
    variants = (1, 2) if kind == "number" else (1,)
    found = [change_number(claim, v) if kind == "number" else flip(claim, kind) for v in variants]
    return [f for f in found if f is not None]


def _derive(template: ProbeTemplate, claim: str, query: str) -> list[Flip]:
    """The controls of a target claim: its kind's flips, plus at most one flip of another
    kind that the query also decides (e.g. a "before" in a negation probe's query)."""
    primary = _primary_flips(template.kind, claim)
    if not primary:
        raise IllPosedProbeError(f"{template.key}: the claim has no {template.kind} to flip")
    for f in primary:
        if flip_like(f, query) is None:
            raise IllPosedProbeError(
                f"{template.key}: the query {query!r} does not carry {f.removed!r} ({f.rule})"
            )
    flips = list(primary)
    for kind in PROBE_KINDS:
        if kind == template.kind:
            continue
        extra = flip(claim, kind)
        if extra is not None and flip_like(extra, query) is not None:
            flips.append(extra)
            break
    return flips


def build_probe(
    template: ProbeTemplate, world: World, index: int
) -> tuple[Probe, MemSpec, list[MemSpec]]:
    """Fill a template, pick the target's form, derive its controls, and plan the files."""
    slots = world.slots()
    claim, query = fill(template.claim, slots), fill(template.query, slots)
    if template.kind in ("negation", "qualifier") and world.chance(0.5):
        turned = flip(claim, template.kind)
        turned_query = flip_like(turned, query) if turned is not None else None
        if turned is None or turned_query is None:
            raise IllPosedProbeError(f"{template.key}: cannot turn the template around")
        claim, query = turned.flipped, turned_query
    flips = _derive(template, claim, query)
    folder = fill(template.folder, slots)
    title = fill(template.title, slots)
    created, updated = world.dates(10, 300)
    entities = tuple(
        (kind, name) for kind, _, name in (fill(e, slots).partition(":") for e in template.entities)
    )
    body = (world.pick(CONTEXTS),)
    metas = {
        "memhtml-confidence": f"{world.rng.choice((0.8, 0.85, 0.9, 0.95)):.2f}",
        "memhtml-importance": str(world.rng.randint(4, 8)),
    }
    target_path = world.claim_path(folder, title)

    def spec(path: str, text: str, role: str) -> MemSpec:
        return MemSpec(
            path=path,
            title=title,
            memory_type=template.memory_type,
            created=created,
            updated=updated,
            claim=text,
            body=body,
            metas=metas,
            entities=entities,
            tags=template.tags,
            role=role,
        )

    target = spec(target_path, claim, "target")
    controls = [spec(world.claim_path(folder, title), f.flipped, "control") for f in flips]
    probe = Probe(
        probe_id=f"{index:02d}-{template.key}",
        kind=template.kind,
        query=query,
        target=target.path,
        controls=tuple(c.path for c in controls),
        control_kinds=tuple(f.kind for f in flips),
        target_claim=claim,
        control_claims=tuple(f.flipped for f in flips),
        target_token=flips[0].removed,
        control_tokens=tuple(f.added for f in flips),
        rules=tuple(f.rule for f in flips),
    )
    return probe, target, controls


def select_templates(count: int) -> tuple[ProbeTemplate, ...]:
    """The first `count` templates of the interleaved catalogue (balanced across kinds)."""
    return catalogue()[: max(0, count)]


__all__ = [
    "NEGATION_TEMPLATES",
    "NUMBER_TEMPLATES",
    "PROBE_KINDS",
    "QUALIFIER_TEMPLATES",
    "IllPosedProbeError",
    "Probe",
    "ProbeTemplate",
    "build_probe",
    "catalogue",
    "select_templates",
]
