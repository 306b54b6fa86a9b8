"""Write-time verdicts on two claims: a conflict, a restatement, or neither.

A **conflict** is two values in one frame (`memhtml.domain.frame`): "The pool
ceiling is 64" against "The pool ceiling is 128". A question states no value
and conflicts with nothing ("do I need software to test my resume?"). A frame
match alone is not enough, because two values can both be true:

* the same value spelled differently ("two weeks" / "2 weeks", "30 s" /
  "30 seconds", "Alice Chen" / "alice chen") is a restatement;
* a value that contains the other one and adds detail ("64" / "64
  connections per node", "Lisbon" / "Lisbon, Portugal") refines it, unless
  what it adds flips the fact (a negation, another number, an opposed
  qualifier: "enabled" / "not enabled" is a conflict).

What this does not see: relations that hold several values at once ("Alice
is allergic to peanuts" / "... to shellfish"): their frames match and their
values differ, so they are reported as conflicts. A caller that consolidates
(last-wins) asserts the frames it writes hold one value each.

A **restatement** (a likely near-duplicate) says what another memory says:
two claims of one frame whose values do not conflict (the same value, or a
refinement of it), or claims of different frames (or none) whose vectors are
at least `RESTATEMENT_COSINE` alike while none of the anti-merge guards fires
(`memhtml.domain.guards.divergence`), so a flip ("drain" / "do not drain",
port 8080 / 9090) is never called a restatement. Retrieval's near-duplicate
test (`memhtml.domain.neardup`) also counts two claims one span apart, or
sharing most words, as near-duplicates: right for ordering a stale value
after its update, wrong for a restatement, since it makes "the default branch
is main" restate "... is trunk" (docs/conflicts.md has the measurement).

Every function here is pure and total over strings.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from memhtml.domain.frame import split_frame
from memhtml.domain.guards import divergence

if TYPE_CHECKING:
    import numpy.typing as npt

# The cosine floor of a restatement across frames, measured with MiniLM
# (docs/conflicts.md): with the guards on no merge-safety flip passes at any
# floor, and 0.92 is the lowest at which no labelled conflict or compatible
# pair of another fact does (0.90 lets "the deploy freeze is in effect" restate
# "... is lifted").
RESTATEMENT_COSINE: Final = 0.92

# Spellings of one value that mean the same (numbers and units; compared folded).
_NUMBER_WORDS: Final = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "fifteen": "15",
    "twenty": "20",
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "ninety": "90",
    "hundred": "100",
}
_UNITS: Final = {
    "ms": "millisecond",
    "msec": "millisecond",
    "milliseconds": "millisecond",
    "s": "second",
    "sec": "second",
    "secs": "second",
    "seconds": "second",
    "min": "minute",
    "mins": "minute",
    "minutes": "minute",
    "h": "hour",
    "hr": "hour",
    "hrs": "hour",
    "hours": "hour",
    "d": "day",
    "days": "day",
    "wk": "week",
    "wks": "week",
    "weeks": "week",
    "months": "month",
    "yr": "year",
    "yrs": "year",
    "years": "year",
    "percent": "%",
    "pct": "%",
    "kilobytes": "kb",
    "megabytes": "mb",
    "gigabytes": "gb",
    "terabytes": "tb",
}
_VALUE_WORD: Final = re.compile(r"[^\W_]+(?:[.-][^\W_]+)*|%")
_NUMBER_UNIT: Final = re.compile(r"^(\d+(?:\.\d+)?)([a-z%]+)$")
# The guards that say what a refinement added changes the fact.
_FLIP_GUARDS: Final = frozenset(("negation", "number", "qualifier"))


def value_words(value: str) -> tuple[str, ...]:
    """A value's comparable words: folded, numbers and units in one spelling ("30s" = "30 sec")."""
    folded = unicodedata.normalize("NFKC", value).casefold().replace("\u2019", "'")
    out: list[str] = []
    for word in _VALUE_WORD.findall(folded):
        glued = _NUMBER_UNIT.match(word)
        parts = [glued.group(1), glued.group(2)] if glued else [word]
        for part in parts:
            spelled = _NUMBER_WORDS.get(part, part)
            out.append(_UNITS.get(spelled, spelled))
    return tuple(out)


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    n = len(shorter)
    return any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


def refines(a: str, b: str) -> bool:
    """One value holds the other's words in order and adds nothing that flips the fact."""
    wa, wb = value_words(a), value_words(b)
    if not wa or not wb or wa == wb:
        return False
    longer, shorter = (wa, wb) if len(wa) >= len(wb) else (wb, wa)
    if not _contains(longer, shorter):
        return False
    return not (_FLIP_GUARDS & set(divergence(a, b)))


def values_conflict(a: str, b: str) -> bool:
    """Two values of one frame that cannot both hold: neither the same nor a refinement."""
    wa, wb = value_words(a), value_words(b)
    if wa == wb:
        return False
    return not refines(a, b)


@dataclass(frozen=True)
class FrameConflict:
    """Two claims with one frame and conflicting values."""

    key: str
    value: str
    other_value: str


def asserts(claim: str) -> bool:
    """False for a question: it states no value, so it conflicts with nothing."""
    return not claim.rstrip().endswith("?")


def claims_conflict(claim: str, other: str) -> FrameConflict | None:
    """The conflict between two claims, or None (different frames, no frame, a question,
    or compatible values)."""
    if not (asserts(claim) and asserts(other)):
        return None
    mine, theirs = split_frame(claim), split_frame(other)
    if mine is None or theirs is None or mine[0] != theirs[0]:
        return None
    if not values_conflict(mine[1], theirs[1]):
        return None
    return FrameConflict(mine[0], mine[1], theirs[1])


def restates(
    claim: str,
    other: str,
    claim_vec: npt.ArrayLike | None = None,
    other_vec: npt.ArrayLike | None = None,
    *,
    cosine_threshold: float = RESTATEMENT_COSINE,
) -> bool:
    """True when `claim` likely says what `other` says (see the module docstring).

    Without both vectors only claims of one frame can be judged.
    """
    mine, theirs = split_frame(claim), split_frame(other)
    if mine is not None and theirs is not None and mine[0] == theirs[0]:
        return not values_conflict(mine[1], theirs[1])
    if claim_vec is None or other_vec is None:
        return False
    from memhtml.domain.vectors import cosine_similarity

    if cosine_similarity(claim_vec, other_vec) < cosine_threshold:
        return False
    return not divergence(claim, other)
