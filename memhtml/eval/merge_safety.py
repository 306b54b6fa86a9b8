"""Merge-safety probes: can a duplicate detector tell a paraphrase from a contradiction?

Two pair sets, both deterministic functions of a seed:

* **must-not-merge** pairs: a claim and its flip (`memhtml.eval.flips`) — the
  same fact with one negation, number, port, version, qualifier or identifier
  changed. Merging any of them destroys a fact; a detector must merge none.
* **paraphrase** pairs: a claim and a rewrite that keeps every fact-bearing
  token (clauses reordered, synonyms, an imperative turned passive). A good
  detector recognizes them; how many it does is its recall.

`merge_pairs()` is the reusable source (sleep's dedup and entity resolution
can be gated on it later); `score_detector()` scores any `merges(a, b)`
predicate; `run_merge_safety()` scores the two detectors memhtml has today:
write-time dedup (content-hash equality of the rendered article) and a cosine
threshold over an embedder, with a threshold sweep.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memhtml.contracts.errors import InvalidFlagError, MemhtmlError
from memhtml.eval.fixture_world import World, fill
from memhtml.eval.flips import FLIP_KINDS, Flip, flip
from memhtml.eval.probes import catalogue

DEFAULT_THRESHOLD: Final = 0.92  # sleep's near-duplicate constant
SWEEP: Final[tuple[float, ...]] = (
    0.80,
    0.85,
    0.88,
    0.90,
    0.92,
    0.94,
    0.95,
    0.96,
    0.97,
    0.98,
    0.99,
    0.995,
    0.999,
)
MAX_LISTED: Final = 12  # merged pair ids listed in the envelope (the count is always full)
MUST_NOT_MERGE: Final = "must_not_merge"
PARAPHRASE: Final = "paraphrase"

IDENTIFIER_CLAIMS: Final[tuple[str, ...]] = (
    "Run the {svc} backfill on db-03 first.",
    "INC-4821 was caused by the {svc} config push.",
    "The {db} primary runs on host pg-prod-12.",
    "{svc} pages the on-call through service PD-2231.",
    "Ticket OPS-1187 tracks the {db} upgrade.",
    "{svc} traffic moved to node pool pool-07 last week.",
    "The {queue} consumers run in us-east-1 only.",
    "The {svc} image is built from commit build-4410.",
)


@dataclass(frozen=True)
class MergePair:
    """Two claims and whether a detector may merge them."""

    pair_id: str
    kind: str  # must_not_merge | paraphrase
    subkind: str  # negation, number, port, version, qualifier, identifier | the rewrites applied
    left: str
    right: str

    def to_data(self) -> dict[str, str]:
        """A JSON-ready mapping."""
        return {
            "pair_id": self.pair_id,
            "kind": self.kind,
            "subkind": self.subkind,
            "left": self.left,
            "right": self.right,
        }


# -- the paraphrase generator ---------------------------------------------------------------

# Synonyms that never touch a flip token (negations, numbers, qualifiers).
SYNONYMS: Final[tuple[tuple[str, str], ...]] = (
    ("restart", "reboot"),
    ("deploy", "release"),
    ("removed", "deleted"),
    ("verify", "check"),
    ("include", "contain"),
    ("posted", "published"),
    ("reused", "shared"),
    ("serve", "handle"),
    ("announced", "published"),
    ("listens on", "accepts connections on"),
    ("expire", "lapse"),
    ("succeed", "work"),
    ("keeps", "stores"),
    ("lists", "sorts"),
    ("wants", "would like"),
    ("prefers", "likes"),
    ("takes about", "needs roughly"),
    ("cleared", "went away"),
    ("allows", "permits"),
    ("change requests", "change tickets"),
    ("business day", "working day"),
    ("a failed deploy", "a broken release"),
    ("routed to", "sent to"),
    ("go to", "are sent to"),
    ("come from", "originate in"),
    ("show up", "appear"),
    ("spike", "jump"),
    ("exhausted", "used up"),
    ("caused by", "triggered by"),
    ("tracks", "covers"),
    ("pages", "alerts"),
    ("moved to", "migrated to"),
    ("runs on", "is hosted on"),
    ("built from", "produced from"),
)
_SYN_RE: Final = re.compile(
    r"\b(" + "|".join(re.escape(a) for a, _ in sorted(SYNONYMS, key=lambda p: -len(p[0]))) + r")\b",
    re.IGNORECASE,
)
_SYN: Final = {a: b for a, b in SYNONYMS}
_CONNECTIVES: Final[tuple[str, ...]] = ("before", "after", "during", "when", "while", "once")
PARTICIPLES: Final[dict[str, str]] = {
    "drain": "drained",
    "restart": "restarted",
    "rotate": "rotated",
    "snapshot": "snapshotted",
    "page": "paged",
    "apply": "applied",
    "enable": "enabled",
    "disable": "disabled",
    "deploy": "deployed",
    "set": "set",
    "scale": "scaled",
    "pin": "pinned",
    "run": "run",
    "include": "included",
    "squash-merge": "squash-merged",
    "keep": "kept",
}
_PREPOSITIONS: Final = r"(before|after|during|to|in|on|from|while|into|for|ahead|within|across)"


def _synonyms(text: str) -> str | None:
    def swap(m: re.Match[str]) -> str:
        word = m.group(1)
        new = _SYN[word.lower()]
        return new[:1].upper() + new[1:] if word[:1].isupper() else new

    out = _SYN_RE.sub(swap, text)
    return out if out != text else None


def _reorder(text: str) -> str | None:
    """'X before Y.' -> 'Before Y, x.' at the first connective after three words."""
    body = text.rstrip(".")
    for word in _CONNECTIVES:
        m = re.search(rf"\s{word}\s", body)
        if m is None or len(body[: m.start()].split()) < 3:
            continue
        head, tail = body[: m.start()], body[m.end() :]
        if "," in tail or not tail:
            continue
        keep = head[:2].isupper() or "-" in head.split()[0]
        first = head if keep else head[:1].lower() + head[1:]
        return f"{word.capitalize()} {tail}, {first}."
    return None


def _passive(text: str) -> str | None:
    """An imperative ('Drain the VIP before X.') to a passive ('The VIP should be drained
    before X.'), keeping never/always/do not in place."""
    m = re.match(
        r"^(Never |Always |Do not )?([A-Za-z-]+) (the |a )?(.+?) " + _PREPOSITIONS + r" (.+)$", text
    )
    if m is None:
        return None
    adverb, verb, article, obj, prep, rest = m.groups()
    participle = PARTICIPLES.get(verb.lower())
    if participle is None:
        return None
    modal = {"Never ": "should never", "Always ": "should always", "Do not ": "should not"}.get(
        adverb or "", "should"
    )
    first = obj.split()[0]
    if article:
        phrase = f"{article.strip().capitalize()} {obj}"
    elif "-" in first or not first[:1].islower():
        phrase = obj  # a service name or a number keeps its spelling
    else:
        phrase = obj[:1].upper() + obj[1:]
    return f"{phrase} {modal} be {participle} {prep} {rest}"


def paraphrase(text: str) -> tuple[str, tuple[str, ...]] | None:
    """A deterministic rewrite of `text` that keeps its facts, and the rewrites applied;
    None when no rewrite applies."""
    applied: list[str] = []
    current = text
    for name, rewrite in (("passive", _passive), ("reorder", _reorder), ("synonyms", _synonyms)):
        if name == "reorder" and "passive" in applied:
            continue
        out = rewrite(current)
        if out is not None and out != current:
            current, applied = out, [*applied, name]
    return (current, tuple(applied)) if applied else None


# -- pairs ----------------------------------------------------------------------------------


def _subkind(f: Flip) -> str:
    if f.kind == "number" and f.rule in ("port", "version"):
        return f.rule
    return f.kind


def source_claims(seed: int = 7) -> list[str]:
    """The claims pairs are built from: every probe template and identifier claim, filled."""
    world = World(random.Random(seed), "2026-01-01T00:00:00Z")
    claims = [fill(t.claim, world.slots()) for t in catalogue()]
    claims += [fill(c, world.slots()) for c in IDENTIFIER_CLAIMS]
    return claims


def merge_pairs(seed: int = 7) -> list[MergePair]:
    """Must-not-merge pairs (one per claim and applicable flip kind) and paraphrase pairs."""
    out: list[MergePair] = []
    for i, claim in enumerate(source_claims(seed), start=1):
        for kind in FLIP_KINDS:
            f = flip(claim, kind)
            if f is not None:
                out.append(
                    MergePair(f"m{i:02d}-{kind}", MUST_NOT_MERGE, _subkind(f), claim, f.flipped)
                )
        rewritten = paraphrase(claim)
        if rewritten is not None:
            text, applied = rewritten
            out.append(MergePair(f"p{i:02d}", PARAPHRASE, "+".join(applied), claim, text))
    return out


# -- scoring --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DetectorScore:
    """How a duplicate detector did on the pairs."""

    detector: str
    must_not_merge: int
    false_merges: int
    false_merges_by_kind: dict[str, int]
    paraphrases: int
    paraphrases_recognized: int
    merged_pairs: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """No must-not-merge pair was merged."""
        return self.false_merges == 0

    @property
    def paraphrase_recall(self) -> float | None:
        """Share of paraphrase pairs the detector merges."""
        return self.paraphrases_recognized / self.paraphrases if self.paraphrases else None

    def to_data(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "detector": self.detector,
            "passed": self.passed,
            "must_not_merge": self.must_not_merge,
            "false_merges": self.false_merges,
            "false_merges_by_kind": self.false_merges_by_kind,
            "paraphrases": self.paraphrases,
            "paraphrases_recognized": self.paraphrases_recognized,
            "paraphrase_recall": self.paraphrase_recall,
            "merged_must_not_merge": list(self.merged_pairs[:MAX_LISTED]),
            "merged_listed": min(len(self.merged_pairs), MAX_LISTED),
        }


def score_detector(
    name: str, pairs: Sequence[MergePair], merges: Callable[[str, str], bool]
) -> DetectorScore:
    """Score any merge predicate on the pairs (must-not-merge merges must be 0)."""
    by_kind: dict[str, int] = {}
    merged: list[str] = []
    recognized = 0
    for pair in pairs:
        verdict = merges(pair.left, pair.right)
        if pair.kind == MUST_NOT_MERGE and verdict:
            by_kind[pair.subkind] = by_kind.get(pair.subkind, 0) + 1
            merged.append(pair.pair_id)
        elif pair.kind == PARAPHRASE and verdict:
            recognized += 1
    return DetectorScore(
        detector=name,
        must_not_merge=sum(1 for p in pairs if p.kind == MUST_NOT_MERGE),
        false_merges=len(merged),
        false_merges_by_kind=dict(sorted(by_kind.items())),
        paraphrases=sum(1 for p in pairs if p.kind == PARAPHRASE),
        paraphrases_recognized=recognized,
        merged_pairs=tuple(merged),
    )


def content_hash_of_claim(claim: str) -> str:
    """The content hash the write door computes for a memory holding only this claim."""
    from memhtml.html import NewMemory, parse_memory, render_memory

    text = render_memory(
        NewMemory(
            title="pair",
            memory_type="semantic",
            created="2026-01-01",
            updated="2026-01-01",
            claim=claim,
        )
    )
    return parse_memory(text).content_hash


def write_dedup_merges(left: str, right: str) -> bool:
    """Write-time dedup: two memories merge exactly when their content hashes are equal."""
    return content_hash_of_claim(left) == content_hash_of_claim(right)


def cosine_table(pairs: Sequence[MergePair], embedder_name: str) -> list[float]:
    """Cosine similarity of each pair under an embedder (rows are unit length)."""
    import numpy as np

    from memhtml.embed.registry import get_embedder

    embedder = get_embedder(embedder_name)
    if embedder is None:
        raise InvalidFlagError("the merge-safety baseline needs an embedder, not off")
    texts = sorted({t for p in pairs for t in (p.left, p.right)})
    rows = embedder.embed_documents(texts)
    index = {t: i for i, t in enumerate(texts)}
    return [float(np.dot(rows[index[p.left]], rows[index[p.right]])) for p in pairs]


def cosine_report(
    pairs: Sequence[MergePair],
    sims: Sequence[float],
    threshold: float,
    sweep: Sequence[float] = SWEEP,
) -> dict[str, Any]:
    """The cosine baseline at `threshold`, the sweep, and the threshold that merges nothing."""

    def at(t: float) -> DetectorScore:
        return _score_by_sims(pairs, sims, t)

    mnm = [s for p, s in zip(pairs, sims, strict=True) if p.kind == MUST_NOT_MERGE]
    para = [s for p, s in zip(pairs, sims, strict=True) if p.kind == PARAPHRASE]
    safe = max(mnm) if mnm else None
    safe_recall = (
        sum(1 for s in para if safe is not None and s > safe) / len(para) if para else None
    )

    def stats(values: Sequence[float]) -> dict[str, float | None]:
        ordered = sorted(values)
        if not ordered:
            return {"min": None, "median": None, "max": None}
        return {
            "min": round(ordered[0], 4),
            "median": round(ordered[len(ordered) // 2], 4),
            "max": round(ordered[-1], 4),
        }

    return {
        "threshold": threshold,
        "at_threshold": at(threshold).to_data(),
        "sweep": [
            {
                "threshold": t,
                "false_merges": s.false_merges,
                "paraphrase_recall": s.paraphrase_recall,
            }
            for t in sweep
            for s in (at(t),)
        ],
        "zero_false_merge_threshold": None if safe is None else round(safe, 6),
        "zero_false_merge_note": "merging only above the highest must-not-merge cosine",
        "paraphrase_recall_above_it": safe_recall,
        "cosine_must_not_merge": stats(mnm),
        "cosine_paraphrase": stats(para),
        "closest_must_not_merge": _closest(pairs, sims),
    }


def _closest(pairs: Sequence[MergePair], sims: Sequence[float]) -> dict[str, Any] | None:
    """The must-not-merge pair an embedder finds most alike (the hardest case)."""
    scored = [(s, p) for p, s in zip(pairs, sims, strict=True) if p.kind == MUST_NOT_MERGE]
    if not scored:
        return None
    s, p = max(scored, key=lambda sp: (sp[0], sp[1].pair_id))
    return {**p.to_data(), "cosine": round(s, 6)}


def _score_by_sims(pairs: Sequence[MergePair], sims: Sequence[float], t: float) -> DetectorScore:
    lookup = {(p.left, p.right): s for p, s in zip(pairs, sims, strict=True)}
    return score_detector(f"cosine>={t}", pairs, lambda a, b: lookup[(a, b)] >= t)


def run_merge_safety(
    seed: int = 7,
    threshold: float = DEFAULT_THRESHOLD,
    embedders: Sequence[str] = ("fake", "local"),
) -> dict[str, Any]:
    """Score write-time dedup and the cosine baseline for each embedder on the pairs."""
    if not 0.0 < threshold <= 1.0:
        raise InvalidFlagError("--threshold must be within (0, 1]")
    pairs = merge_pairs(seed)
    counts: dict[str, int] = {}
    for p in pairs:
        key = f"{p.kind}:{p.subkind}" if p.kind == MUST_NOT_MERGE else p.kind
        counts[key] = counts.get(key, 0) + 1
    cosine: dict[str, Any] = {}
    for name in embedders:
        try:
            sims = cosine_table(pairs, name)
        except MemhtmlError as exc:
            cosine[name] = {"error": f"{exc.code}: {exc.message}", "passed": None}
            continue
        report = cosine_report(pairs, sims, threshold)
        report["passed"] = report["at_threshold"]["passed"]
        cosine[name] = report
    dedup = score_detector("write-dedup (content hash)", pairs, write_dedup_merges)
    return {
        "seed": seed,
        "threshold": threshold,
        "pairs": {"total": len(pairs), **dict(sorted(counts.items()))},
        "write_dedup": dedup.to_data(),
        "cosine": cosine,
        "examples": [p.to_data() for p in _examples(pairs)],
    }


def _examples(pairs: Sequence[MergePair]) -> list[MergePair]:
    seen: set[str] = set()
    out: list[MergePair] = []
    for p in pairs:
        key = p.subkind if p.kind == MUST_NOT_MERGE else PARAPHRASE
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


__all__ = [
    "DEFAULT_THRESHOLD",
    "MUST_NOT_MERGE",
    "PARAPHRASE",
    "SWEEP",
    "DetectorScore",
    "MergePair",
    "cosine_report",
    "cosine_table",
    "merge_pairs",
    "paraphrase",
    "run_merge_safety",
    "score_detector",
    "write_dedup_merges",
]
