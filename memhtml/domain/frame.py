"""The frame key: what a fact is about, independent of the value it states.

"The pool ceiling is 64" and "The pool ceiling is 128" are two values in one
frame, ``the pool ceiling is``; a store holding both holds a conflict. The
frame is the claim up to its LAST linking token (``of is in to by as``), the
value what follows it:

    "The capital of France is Paris."  -> ("the capital of france is", "Paris")
    "Hines Ward plays the position of cornerback." -> ("hines ward plays the position of",
                                                       "cornerback")

What this implements: the original memhtml's ``frameKeyOf``
(``packages/domain/src/frame.ts``; SURFACES-FACTS 6.1, SLEEP-FACTS 2.2.1):
collapse whitespace and trim; the frame runs to the last linking token that
has a value after it (greedy, case-sensitive: a linking token counts only in
lowercase, as a whole word; one trailing period is absorbed); no key when
there is none, when the frame has fewer than 3 space-separated tokens, or when
the value has more than 6; the key is the frame lowercased.

Where we differ: a preposition inside a proper name is not a linking token.
The original cuts "X is a citizen of United States of America" after
"States of", so the key ("x is a citizen of united states of") never meets
"X is a citizen of Canada"'s. Here ``of in to by as`` between a capitalised
word and a capitalised word (an article may come between: "Kingdom of the
Netherlands") belongs to the value; ``is`` always links. On the 18,332 facts
of FactConsolidation's largest row the key equals the benchmark's own slot
(the fact minus its object, from a template list) for 17,995 facts (98.2 %),
against 15,932 (86.9 %) for the original rule; the rest are mostly
"X is famous for Y" (keyed ``x is``, the same for every such fact of X).

A key is a *candidate* for a conflict, not a verdict: two values in one frame
can both be true (a refinement, a set-valued relation). Deciding that is
`memhtml.domain.conflicts`; this module only says what a claim is about.
"""

from __future__ import annotations

import re
from typing import Final

LINKING_TOKENS: Final = ("of", "is", "in", "to", "by", "as")
MIN_FRAME_TOKENS: Final = 3
MAX_VALUE_TOKENS: Final = 6
# Linking tokens that may sit inside a name ("Bank of America"); `is` never does.
_NAME_INNER: Final = frozenset(("of", "in", "to", "by", "as"))
_ARTICLES: Final = frozenset(("the", "a", "an"))
_WHITESPACE: Final = re.compile(r"\s+")


def normalize_claim(claim: str) -> str:
    """Whitespace runs collapsed to one space, trimmed (the text the frame rule reads)."""
    return _WHITESPACE.sub(" ", claim).strip()


def _capitalised(token: str) -> bool:
    return token[:1].isupper()


def _inside_name(tokens: list[str], i: int) -> bool:
    """True when tokens[i] joins two capitalised words ("States of America")."""
    if tokens[i] not in _NAME_INNER or i == 0 or not _capitalised(tokens[i - 1]):
        return False
    j = i + 1
    if j < len(tokens) - 1 and tokens[j] in _ARTICLES:
        j += 1
    return _capitalised(tokens[j])


def split_frame(claim: str) -> tuple[str, str] | None:
    """(frame key, value) of a claim, or None when the claim has no key.

    The value keeps its spelling (only the trailing period is dropped); the
    key is lowercased. ``frame_key(c)`` is ``split_frame(c)[0]``.
    """
    text = normalize_claim(claim)
    if text.endswith("."):
        text = text[:-1].rstrip()
    if not text:
        return None
    tokens = text.split(" ")
    cut = None
    for i in range(len(tokens) - 1):  # a linking token needs a value after it
        if tokens[i] in LINKING_TOKENS and not _inside_name(tokens, i):
            cut = i
    if cut is None or cut + 1 < MIN_FRAME_TOKENS:
        return None
    value = tokens[cut + 1 :]
    if len(value) > MAX_VALUE_TOKENS:
        return None
    return " ".join(tokens[: cut + 1]).lower(), " ".join(value)


def frame_key(claim: str) -> str | None:
    """What `claim` is about, independent of its value; None when the rule finds no frame.

    Total over strings: any text in, a key or None out.
    """
    parts = split_frame(claim)
    return None if parts is None else parts[0]
