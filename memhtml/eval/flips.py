"""Control derivation: turn a claim into a near-identical claim that says something else.

A control is the target claim with exactly one fact-bearing token changed, so
it shares nearly every word (and, for most embedders, sits above 0.95 cosine)
while asserting a different fact. Four families:

* **negation** — ``always`` <-> ``never``; a modal and its negation
  (``must`` <-> ``must not``, ``should``, ``will``, ``is``/``are``/``was``/``were``,
  ``can`` <-> ``cannot``); an imperative and its prohibition
  (``Drain the VIP`` <-> ``Do not drain the VIP``). The leftmost construction
  is flipped.
* **number** — the first number that is not part of a date, a time or an
  identifier gets other digits: the leading digit of an integer moves up by
  ``variant`` (1..9, never 0, width kept: 5432 -> 6432), the last component of
  a dotted version moves up by ``variant`` (1.4.2 -> 1.4.3). The rule names
  the slot: ``port``, ``version`` or ``number``.
* **qualifier** — the leftmost word of a closed list of opposed pairs
  (before/after, primary/replica, staging/production, read/write,
  enable/disable, minimum/maximum, ...) swaps with its opposite, and so does
  every other occurrence of either word of that pair, so "on the replica
  before the primary" becomes "on the primary before the replica" rather than
  a sentence naming one host twice.
* **identifier** — the last digit group of a hyphenated identifier
  (``db-03``, ``us-east-1``, ``INC-4821``) moves up by ``variant``, width kept.

Every rule is deterministic. Negation and qualifier flips are involutions
(``flip(flip(x)) == x`` for text in canonical form); number and identifier
flips are undone by :func:`revert`. A claim with nothing to flip gives None:
the refusal is a value, never a silent copy of the input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from memhtml.domain.guards import SWAPPED_QUALIFIERS

FlipKind = Literal["negation", "number", "qualifier", "identifier"]
FLIP_KINDS: Final[tuple[str, ...]] = ("negation", "number", "qualifier", "identifier")

# Opposed qualifier pairs: one list, shared with the anti-merge guards.
QUALIFIER_PAIRS: Final[tuple[tuple[str, str], ...]] = SWAPPED_QUALIFIERS
_OPPOSITE: Final[dict[str, str]] = {
    **{a: b for a, b in QUALIFIER_PAIRS},
    **{b: a for a, b in QUALIFIER_PAIRS},
}
_QUALIFIER_RE: Final = re.compile(
    r"\b(" + "|".join(sorted(_OPPOSITE, key=len, reverse=True)) + r")\b", re.IGNORECASE
)

# Verbs an operational instruction starts with. Only a text starting with one
# of these reads as an imperative, so "The VIP drains" is never prefixed.
IMPERATIVE_VERBS: Final[frozenset[str]] = frozenset(
    """add allow apply archive alert back batch block bump bypass cache call check
    cherry-pick close commit compact compress copy cut delete deploy disable drain drop
    edit email enable encrypt escalate expire expose fail flush force-push freeze
    hardcode increase kill lock log lower merge migrate mount move notify open override
    page patch pause pin ping promote purge push raise rebase rebuild reboot reindex
    reload renew resize restart restore resume retry reuse revert roll rotate route run
    scale schedule set share ship shard skip snapshot split squash ssh start stop store
    tag throttle trust truncate unlock upgrade use vacuum verify wait write""".split()  # noqa: SIM905 - a word list reads better as text
)
_MODALS: Final[tuple[str, ...]] = ("must", "should", "will", "is", "are", "was", "were")
_MODAL_RE: Final = re.compile(
    r"\b(?:(always|never)|(cannot|can't|can)|(" + "|".join(_MODALS) + r")(n't|\s+not)?)\b",
    re.IGNORECASE,
)
_ADVERB_AFTER: Final = re.compile(r"\s+(always|never)\b", re.IGNORECASE)
_IMPERATIVE_NEG: Final = re.compile(r"^(\s*)(?:do not|don't)\s+", re.IGNORECASE)
_FIRST_WORD: Final = re.compile(r"^(\s*)([A-Za-z][A-Za-z-]*)")

# Tokens the number and identifier rules inspect: runs of word characters
# joined by the separators identifiers and versions use.
_TOKEN: Final = re.compile(r"[A-Za-z0-9_]+(?:[.\-:/][A-Za-z0-9_]+)*")
_DATE: Final = re.compile(r"^\d{4}-\d{2}(?:-\d{2})?(?:T[\d:]+Z?)?$")
_TIME: Final = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?$")
_VERSION: Final = re.compile(r"^(v?)(\d+(?:\.\d+){1,3})$")
_INTEGER: Final = re.compile(r"^(\d+)([A-Za-z%]{0,3})$")
_HOST_PORT: Final = re.compile(r"^([A-Za-z][\w.\-]*):(\d{2,5})$")
_IDENTIFIER: Final = re.compile(r"^([A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*[-_])(\d+)$")
_PORT_WORDS: Final = frozenset({"port", "ports", "listens", "listen", "bind", "binds"})
_VERSION_WORDS: Final = frozenset({"version", "versions", "release", "v", "upgrade", "to"})


@dataclass(frozen=True)
class Flip:
    """One derivation: `original` with the span [start, end) replaced, giving `flipped`.

    `removed` is the original's distinguishing text and `added` the control's
    ("" when a construction is added or dropped whole, e.g. the "Do not" of a
    prohibition has removed="" and added="Do not").
    """

    kind: str
    rule: str
    original: str
    flipped: str
    removed: str
    added: str
    start: int
    end: int

    @property
    def tokens(self) -> tuple[str, str]:
        """(the target's distinguishing text, the control's)."""
        return self.removed, self.added


def _match_case(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _capitalize_like(original_first: str, text: str) -> str:
    return text[:1].upper() + text[1:] if original_first.isupper() else text


# -- negation -----------------------------------------------------------------------


def _imperative(text: str) -> Flip | None:
    neg = _IMPERATIVE_NEG.match(text)
    if neg is not None:
        lead = neg.group(1)
        rest = text[neg.end() :]
        first = text[len(lead) : len(lead) + 1]
        flipped = lead + _capitalize_like(first, rest)
        removed = text[len(lead) : neg.end()].rstrip()
        return Flip("negation", "imperative", text, flipped, removed, "", len(lead), neg.end())
    word = _FIRST_WORD.match(text)
    if word is None or word.group(2).lower() not in IMPERATIVE_VERBS:
        return None
    lead, verb = word.group(1), word.group(2)
    capital = verb[:1].isupper()
    prefix = ("Do not" if capital else "do not") + " "
    if capital and not verb.isupper():
        verb = verb[:1].lower() + verb[1:]
    flipped = lead + prefix + verb + text[word.end() :]
    return Flip("negation", "imperative", text, flipped, "", prefix.strip(), len(lead), len(lead))


def _modal(text: str) -> Flip | None:
    for m in _MODAL_RE.finditer(text):
        always_never, can, modal = m.group(1), m.group(2), m.group(3)
        if always_never:
            return _always_never(text, always_never, m.start(), m.end())
        if can:
            lowered = can.lower()
            word = _match_case(can, "can" if lowered in ("cannot", "can't") else "cannot")
            flipped = text[: m.start()] + word + text[m.end() :]
            return Flip("negation", "can/cannot", text, flipped, can, word, m.start(), m.end())
        if modal:
            rule = f"{modal.lower()}/{modal.lower()} not"
            whole = m.group(0)
            if m.group(4):  # negated: drop the "not" / "n't"
                flipped = text[: m.start()] + modal + text[m.end() :]
                return Flip("negation", rule, text, flipped, whole, modal, m.start(), m.end())
            adverb = _ADVERB_AFTER.match(text, m.end())
            if adverb is not None:  # "should never": flip the adverb, not the modal
                return _always_never(text, adverb.group(1), adverb.start(1), adverb.end(1))
            word = modal + " not"
            flipped = text[: m.start()] + word + text[m.end() :]
            return Flip("negation", rule, text, flipped, modal, word, m.start(), m.end())
    return None


def _always_never(text: str, found: str, start: int, end: int) -> Flip:
    word = _match_case(found, "never" if found.lower() == "always" else "always")
    flipped = text[:start] + word + text[end:]
    return Flip("negation", "always/never", text, flipped, found, word, start, end)


def negate(text: str) -> Flip | None:
    """Flip the polarity of `text`, or None when it holds no negatable construction.

    The leftmost construction wins, with always/never and modals checked
    before a sentence-initial imperative at the same position, so applying
    `negate` twice restores a canonically written text exactly.
    """
    modal = _modal(text)
    imperative = _imperative(text)
    if modal is not None and (imperative is None or modal.start <= imperative.start):
        return modal
    return imperative


# -- number and identifier --------------------------------------------------------------


def _shift_leading(digits: str, variant: int) -> str:
    """Move the leading digit up by `variant` within 1..9 (a zero stays out of the lead)."""
    if digits[0] == "0":
        return (
            str(variant) + digits[1:]
            if len(digits) == 1
            else digits[:-1] + str((int(digits[-1]) + variant) % 10)
        )
    lead = (int(digits[0]) - 1 + variant) % 9 + 1
    return str(lead) + digits[1:]


def _tokens(text: str) -> Iterable[re.Match[str]]:
    return _TOKEN.finditer(text)


def _previous_word(text: str, start: int) -> str:
    words = re.findall(r"[A-Za-z]+", text[:start])
    return words[-1].lower() if words else ""


def _number_candidates(text: str, variant: int) -> Iterable[tuple[int, int, str, str, str]]:
    """(start, end, old, new, rule) for each number token, leftmost first."""
    for m in _tokens(text):
        token = m.group(0).rstrip(".")
        start, end = m.start(), m.start() + len(token)
        if _DATE.match(token) or _TIME.match(token):
            continue
        host_port = _HOST_PORT.match(token)
        if host_port:
            port = host_port.group(2)
            new = host_port.group(1) + ":" + _shift_leading(port, variant)
            yield start, end, token, new, "port"
            continue
        version = _VERSION.match(token)
        if version:
            parts = version.group(2).split(".")
            parts[-1] = str(int(parts[-1]) + variant)
            new = version.group(1) + ".".join(parts)
            word = _previous_word(text, start)
            rule = (
                "version"
                if version.group(1) or word in _VERSION_WORDS or len(parts) > 2
                else "number"
            )
            yield start, end, token, new, rule
            continue
        integer = _INTEGER.match(token)
        if integer:
            new = _shift_leading(integer.group(1), variant) + integer.group(2)
            rule = "port" if _previous_word(text, start) in _PORT_WORDS else "number"
            yield start, end, token, new, rule


def _replace_token(text: str, old: str, new: str) -> str:
    return re.sub(r"(?<![\w.\-])" + re.escape(old) + r"(?![\w\-]|\.\w)", new, text)


def _token_present(text: str, token: str) -> bool:
    return re.search(r"(?<![\w.\-])" + re.escape(token) + r"(?![\w\-]|\.\w)", text) is not None


def _token_flip(
    text: str, kind: str, candidates: Iterable[tuple[int, int, str, str, str]]
) -> Flip | None:
    for start, end, old, new, rule in candidates:
        if new == old or _token_present(text, new):
            continue  # the new value already appears: a revert could not tell them apart
        flipped = _replace_token(text, old, new)
        if flipped != text:
            return Flip(kind, rule, text, flipped, old, new, start, end)
    return None


def change_number(text: str, variant: int = 1) -> Flip | None:
    """Change the first free-standing number (port, version, count, duration) of `text`."""
    if not 1 <= variant <= 8:
        raise ValueError("variant is 1..8")
    return _token_flip(text, "number", _number_candidates(text, variant))


def _identifier_candidates(text: str, variant: int) -> Iterable[tuple[int, int, str, str, str]]:
    for m in _tokens(text):
        token = m.group(0).rstrip(".")
        ident = _IDENTIFIER.match(token)
        if ident is None or _DATE.match(token):
            continue
        digits = ident.group(2)
        new_digits = str(int(digits) + variant).zfill(len(digits))
        yield m.start(), m.start() + len(token), token, ident.group(1) + new_digits, "identifier"


def change_identifier(text: str, variant: int = 1) -> Flip | None:
    """Change the numbered suffix of the first identifier (db-03 -> db-04)."""
    if not 1 <= variant <= 8:
        raise ValueError("variant is 1..8")
    return _token_flip(text, "identifier", _identifier_candidates(text, variant))


# -- qualifier --------------------------------------------------------------------------


def _swap_pair(text: str, a: str, b: str) -> str:
    pattern = re.compile(rf"\b({re.escape(a)}|{re.escape(b)})\b", re.IGNORECASE)

    def swap(m: re.Match[str]) -> str:
        word = m.group(1)
        return _match_case(word, b if word.lower() == a else a)

    return pattern.sub(swap, text)


def swap_qualifier(text: str, pair: tuple[str, str] | None = None) -> Flip | None:
    """Swap the leftmost qualifier (or the given pair) with its opposite, everywhere in `text`."""
    if pair is None:
        m = _QUALIFIER_RE.search(text)
        if m is None:
            return None
        word = m.group(1)
        a, b = word.lower(), _OPPOSITE[word.lower()]
    else:
        a, b = pair
        m = re.search(rf"\b({re.escape(a)}|{re.escape(b)})\b", text, re.IGNORECASE)
        if m is None:
            return None
        word = m.group(1)
        if word.lower() == b:
            a, b = b, a
    flipped = _swap_pair(text, a, b)
    rule = "/".join(sorted((a, b), key=lambda w: (w not in dict(QUALIFIER_PAIRS), w)))
    return Flip("qualifier", rule, text, flipped, word, _match_case(word, b), m.start(), m.end())


# -- the public entry points --------------------------------------------------------------


def flip(text: str, kind: str, variant: int = 1) -> Flip | None:
    """One control of `kind` for `text`, or None when there is nothing of that kind to flip."""
    if kind == "negation":
        return negate(text)
    if kind == "number":
        return change_number(text, variant)
    if kind == "qualifier":
        return swap_qualifier(text)
    if kind == "identifier":
        return change_identifier(text, variant)
    raise ValueError(f"unknown flip kind {kind!r}; one of {', '.join(FLIP_KINDS)}")


def flip_like(model: Flip, text: str) -> str | None:
    """Apply the change `model` made to another text (a title, a query), or None when it
    does not apply: the same negation rule, the same number, the same qualifier pair."""
    if model.kind == "negation":
        again = negate(text)
        same = again is not None and again.rule == model.rule
        if not same or again is None or _adds_negation(again) != _adds_negation(model):
            return None
        return again.flipped
    if model.kind == "qualifier":
        pair = (model.removed.lower(), model.added.lower())
        swapped = swap_qualifier(text, pair)
        if swapped is None or swapped.removed.lower() != pair[0]:
            return None
        return swapped.flipped
    if not _token_present(text, model.removed) or _token_present(text, model.added):
        return None
    return _replace_token(text, model.removed, model.added)


def revert(model: Flip) -> str:
    """The original text back from the flipped one (the round trip every rule satisfies)."""
    if model.kind == "negation":
        again = negate(model.flipped)
        if again is None:  # pragma: no cover - every negation rule is an involution
            raise ValueError("negation did not round-trip")
        return again.flipped
    if model.kind == "qualifier":
        return _swap_pair(model.flipped, model.removed.lower(), model.added.lower())
    return _replace_token(model.flipped, model.added, model.removed)


def controls_for(
    text: str, kinds: Sequence[str] = ("negation", "number", "qualifier"), per_kind: int = 1
) -> list[Flip]:
    """Every control `text` admits: up to `per_kind` distinct flips of each kind, in order.

    Negation and qualifier flips have one outcome each; number and identifier
    flips take variants 1..per_kind.
    """
    out: list[Flip] = []
    seen = {text}
    for kind in kinds:
        variants = range(1, per_kind + 1) if kind in ("number", "identifier") else range(1, 2)
        for variant in variants:
            found = flip(text, kind, variant)
            if found is not None and found.flipped not in seen:
                seen.add(found.flipped)
                out.append(found)
    return out


def _adds_negation(model: Flip) -> bool:
    if model.rule == "always/never":
        return model.removed.lower() == "always"
    return len(model.added) > len(model.removed)


def is_negated(text: str) -> bool:
    """True when the leftmost negatable construction of `text` is in its negative form."""
    found = negate(text)
    return found is not None and not _adds_negation(found)


__all__ = [
    "FLIP_KINDS",
    "IMPERATIVE_VERBS",
    "QUALIFIER_PAIRS",
    "Flip",
    "FlipKind",
    "change_identifier",
    "change_number",
    "controls_for",
    "flip",
    "flip_like",
    "is_negated",
    "negate",
    "revert",
    "swap_qualifier",
]
