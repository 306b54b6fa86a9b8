"""Entity names: one comparison key per spelling, how alike two names are, and which wins.

Entity resolution (sleep) reads `memhtml-entity` values `type:name` and folds
the spellings of one subject onto one. Three kinds of fold, from certain to
tentative:

* **normalization** -- spellings with one key (NFKC, case-folded, whitespace
  collapsed): ``Checkout-API``, ``checkout-api``, ``checkout-api `` ;
* **declared aliases** -- names a person record lists with `memhtml-alias`;
* **fuzzy** -- names whose character overlap (2 x LCS / total length, the
  original's `nameSimilarity`, SLEEP-FACTS 2.3) is at least FUZZY_THRESHOLD
  and that differ in no way the merge guards care about.

Where we differ from the original: its normalized form is also the written
one (every name ends up lower-case); here the most used spelling of a key is
written, cleaned (NFC, whitespace collapsed), so ``Ada Lovelace`` stays
capitalised. Its character pass merged a 0.85-similar pair at once; here a
fuzzy pair must also pass `fuzzy_mergeable` (no different number, no
different short word: ``service-a`` / ``service-b`` is two services) and be
corroborated on two nights before anything is rewritten (the sleep phase).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Final

from memhtml.domain.guards import merge_vetoed, normalize_name

FUZZY_THRESHOLD: Final = 0.85
MIN_DIFFERING_WORD: Final = 4  # a differing word shorter than this names another thing
_ALNUM: Final = re.compile(r"[^\W_]+")

__all__ = [
    "FUZZY_THRESHOLD",
    "canonical_spelling",
    "clean_name",
    "fuzzy_mergeable",
    "lcs_length",
    "name_key",
    "name_similarity",
]


def name_key(name: str) -> str:
    """The comparison key: NFKC, case-folded, whitespace collapsed and trimmed."""
    return normalize_name(name)


def clean_name(name: str) -> str:
    """The written form of a spelling: NFC, whitespace collapsed and trimmed (case kept)."""
    return " ".join(unicodedata.normalize("NFC", name).split())


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of two strings (O(len a x len b))."""
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if ca == cb else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def name_similarity(a: str, b: str) -> float:
    """2 x LCS / (len a + len b) over the keys; 1 for equal keys, 0 when either is empty."""
    ka, kb = name_key(a), name_key(b)
    if ka == kb:
        return 1.0
    if not ka or not kb:
        return 0.0
    return 2 * lcs_length(ka, kb) / (len(ka) + len(kb))


def similarity_bound(a: str, b: str) -> float:
    """An upper bound of `name_similarity` from lengths alone (to skip hopeless pairs)."""
    la, lb = len(name_key(a)), len(name_key(b))
    return 2 * min(la, lb) / (la + lb) if la + lb else 0.0


def fuzzy_mergeable(a: str, b: str) -> bool:
    """True when two close names may be one subject: they differ only in separators or
    inside long words, never in a number, a qualifier or a short word."""
    ka, kb = name_key(a), name_key(b)
    if ka == kb:
        return True
    if "".join(_ALNUM.findall(ka)) == "".join(_ALNUM.findall(kb)):
        return True  # checkout-api / checkout api / checkout_api
    if merge_vetoed(ka, kb):
        return False
    wa, wb = set(_ALNUM.findall(ka)), set(_ALNUM.findall(kb))
    differing = wa ^ wb
    return all(len(w) >= MIN_DIFFERING_WORD for w in differing)


def canonical_spelling(counts: Mapping[str, int]) -> str:
    """The spelling a group of spellings folds onto: most used, then the smallest key,
    then the smallest spelling (cleaned)."""
    best = min(counts, key=lambda s: (-counts[s], name_key(s), clean_name(s)))
    return clean_name(best)


def fuzzy_pairs(
    names: Iterable[str], threshold: float = FUZZY_THRESHOLD
) -> list[tuple[str, str, float]]:
    """Pairs (a, b, similarity) with a < b whose similarity is at least `threshold` and
    that `fuzzy_mergeable` allows; keys compared, names as given."""
    ordered = sorted(set(names), key=lambda n: (len(name_key(n)), n))
    out: list[tuple[str, str, float]] = []
    for i, a in enumerate(ordered):
        la = len(name_key(a))
        for b in ordered[i + 1 :]:
            lb = len(name_key(b))
            if 2 * la / (la + lb) < threshold:
                break  # sorted by length: every later name is longer still
            if name_key(a) == name_key(b):
                continue
            sim = name_similarity(a, b)
            if sim >= threshold and fuzzy_mergeable(a, b):
                out.append((min(a, b), max(a, b), sim))
    out.sort(key=lambda p: (p[0], p[1]))
    return out
