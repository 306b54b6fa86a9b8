"""The anti-merge guards: when two near-identical texts must not become one memory.

Sleep's dedup-merge folds memories whose vectors are nearly equal. Embeddings
are weakest exactly where that is dangerous: "drain the VIP" and "do not drain
the VIP", port 8080 and port 9090, the replica before the primary and the
primary before the replica all sit above 0.92 cosine for MiniLM. Merging such
a pair archives a true fact under its opposite. So a merge the vectors propose
is vetoed when any of four symmetric predicates fires:

* **negation** -- the texts carry different numbers of negation markers
  (``not``, ``never``, ``without``, ``fail``, ... after contractions are
  expanded, so ``don't`` counts as ``do not``);
* **number** -- the sets of number-bearing tokens differ (``8080``, ``1.4.2``,
  the ``03`` of ``db-03``), spelled-out cardinals included;
* **qualifier** -- the multisets of qualifier words differ: product variants
  (``pro``, ``beta``, ``legacy``), opposed pairs (``before``/``after``,
  ``primary``/``replica``, ``read``/``write``, ...) and quantifiers
  (``always``, ``usually``, ``only``, ``all``, ``some``, ...);
* **role** -- who or what the fact is about changed: the identifiers and
  names differ (``checkout-api`` vs ``payments-api``, ``Alice`` vs ``Bob``),
  or the same fact-bearing tokens appear in another order that is not a
  rotation of the text (``the replica before the primary`` vs ``the primary
  before the replica``; moving a whole clause to the front is a rotation and
  passes), or both memories declare entities of one type with no name in
  common.

What this implements: the original memhtml's divergence veto (SLEEP-FACTS
2.2: ``negationDivergent``, ``numericTokenDivergent``,
``variantQualifierDivergent`` of its ``domain/merge.ts``). Where we differ:
negation compares marker counts (the original: exactly one side carries one,
which lets "not A and not B" merge with "not A and B"); the qualifier
vocabulary adds the opposed pairs and quantifiers the merge-safety probes flip
(the original's nine variant words catch none of them); spelled numbers count;
and the role guard is ours -- the original's "role guard" only kept one file
from being both keeper and drop, which `dedup_merge` still does.

Every function here is pure and total over strings; the guards err towards
vetoing, since a vetoed true duplicate costs one redundant file while a false
merge loses a fact.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

# The original's markers, plus the indefinite negatives a contraction-free text uses.
NEGATION_MARKERS: Final = frozenset(
    """not no never none nothing nobody nowhere cannot without neither nor avoid
    disallow disallowed forbidden unsafe invalid false fail fails failed deny denied
    reject rejected""".split()  # noqa: SIM905 - a word list reads better as text
)

# The original's product variants.
VARIANT_QUALIFIERS: Final = frozenset(
    "pro max beta alpha rc preview legacy deprecated experimental".split()  # noqa: SIM905 - a word list reads better as text
)
# The opposed pairs the gate's flips swap (memhtml.eval.flips builds its probes from
# these; each word appears in one pair only). Inflected forms
# are listed as their own pairs so a swap never needs morphology.
SWAPPED_QUALIFIERS: Final[tuple[tuple[str, str], ...]] = (
    ("before", "after"),
    ("primary", "replica"),
    ("primaries", "replicas"),
    ("staging", "production"),
    ("read", "write"),
    ("reads", "writes"),
    ("enable", "disable"),
    ("enabled", "disabled"),
    ("enabling", "disabling"),
    ("minimum", "maximum"),
    ("inbound", "outbound"),
    ("ingress", "egress"),
    ("upstream", "downstream"),
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("leader", "follower"),
    ("synchronous", "asynchronous"),
    ("internal", "external"),
    ("public", "private"),
    ("encrypted", "plaintext"),
    ("allow", "deny"),
    ("allowed", "denied"),
    ("weekday", "weekend"),
    ("oldest", "newest"),
    ("highest", "lowest"),
    ("above", "below"),
    ("soft", "hard"),
    ("first", "last"),
    ("blue", "green"),
    ("ascending", "descending"),
    ("hourly", "nightly"),
)
# More pairs a fact turns on, which the guards also watch. Each word alone is a qualifier.
OPPOSED_QUALIFIERS: Final[tuple[tuple[str, str], ...]] = (
    *SWAPPED_QUALIFIERS,
    ("min", "max"),
    ("sync", "async"),
    ("older", "newer"),
    ("higher", "lower"),
    ("daily", "weekly"),
    ("monthly", "yearly"),
    ("online", "offline"),
    ("local", "remote"),
    ("manual", "automatic"),
    ("success", "failure"),
    ("succeeded", "failed"),
    ("start", "stop"),
    ("open", "closed"),
    ("more", "less"),
    ("earlier", "later"),
    ("larger", "smaller"),
    ("faster", "slower"),
)
QUANTIFIERS: Final = frozenset(
    """always usually often sometimes rarely seldom occasionally all every each
    some most few many several only optional required mandatory""".split()  # noqa: SIM905 - a word list reads better as text
)
QUALIFIERS: Final = (
    VARIANT_QUALIFIERS | {w for pair in OPPOSED_QUALIFIERS for w in pair} | QUANTIFIERS
)
# Cardinals spelled out ("one" is left out: it is as often a pronoun).
NUMBER_WORDS: Final = frozenset(
    """zero two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty
    sixty seventy eighty ninety hundred thousand million billion once twice thrice
    half double triple dozen""".split()  # noqa: SIM905 - a word list reads better as text
)
# Words a sentence may start with that name nobody (used to tell a sentence-initial
# name, "Alice approved it", from an ordinary capitalised first word).
FUNCTION_WORDS: Final = frozenset(
    """a an the this that these those it its we they our you your he she his her
    their there here if when whenever while before after once then so and or but
    because since until unless as at by for from in into of on onto to with within
    without over under do does did don't is are was were be been being has have had
    can could will would should shall may might must not no never always every each
    all any some most many few only also just even still yet again please note
    what which who whom whose why how where""".split()  # noqa: SIM905 - a word list reads better as text
)

_CONTRACTIONS: Final = (
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"\bcan't\b"), "can not"),
    (re.compile(r"\bcannot\b"), "can not"),
    (re.compile(r"\bain't\b"), "is not"),
    (re.compile(r"n't\b"), " not"),
)
_WORD: Final = re.compile(r"[^\W_]+(?:\.[0-9]+)*")
# Identifier-shaped runs: words joined by - _ / : . (checkout-api, db-03, us-east-1, v1.4.2)
_NAME: Final = re.compile(r"[^\W_]+(?:[-_/:.][^\W_]+)*")
_ID_SEPARATOR: Final = re.compile(r"[^\W_][-_/:][^\W_]")
_SENTENCE_OPENERS: Final = frozenset(".!?:;\n\"'(")
_DIGIT: Final = re.compile(r"\d")


def _fold(text: str) -> str:
    """NFKC, case-folded, curly apostrophes straightened, contractions expanded."""
    out = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        out = pattern.sub(replacement, out)
    return out


def words(text: str) -> list[str]:
    """The folded word sequence the guards compare (numbers keep their dots: 1.4.2)."""
    return list(_profile(text).tokens)


def negation_count(tokens: Iterable[str]) -> int:
    """How many negation markers a word sequence carries."""
    return sum(1 for t in tokens if t in NEGATION_MARKERS)


def is_number(token: str) -> bool:
    """A token that states a quantity: it holds a digit, or is a spelled-out cardinal."""
    return token in NUMBER_WORDS or _DIGIT.search(token) is not None


def _opens_sentence(text: str, start: int) -> bool:
    """True when nothing but whitespace, or a sentence end, comes before `start`."""
    i = start - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return i < 0 or text[i] in _SENTENCE_OPENERS


def _names(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(strong, weak) names: identifiers, acronyms and capitalised words; then names that
    are only capitalised because they open a sentence."""
    text = unicodedata.normalize("NFKC", text)
    strong: set[str] = set()
    weak: set[str] = set()
    for m in _NAME.finditer(text):
        token = m.group()
        if not any(c.isalpha() for c in token):
            continue  # a bare number belongs to the number guard
        folded = token.casefold()
        if _ID_SEPARATOR.search(token) or _DIGIT.search(token):
            strong.add(folded)
            continue
        if not token[0].isupper():
            continue
        letters = [c for c in token if c.isalpha()]
        acronym = len(letters) > 1 and all(c.isupper() for c in letters)
        if acronym or not _opens_sentence(text, m.start()):
            strong.add(folded)
        elif folded not in FUNCTION_WORDS:
            weak.add(folded)
    return frozenset(strong), frozenset(weak)


@dataclass(frozen=True)
class _Profile:
    """What the guards read from one text, computed once per text."""

    tokens: tuple[str, ...]
    negations: int
    numbers: frozenset[str]
    qualifiers: tuple[tuple[str, int], ...]  # a multiset, sorted
    strong: frozenset[str]
    weak: frozenset[str]
    marked: tuple[str, ...]  # the fact-bearing tokens in order


@lru_cache(maxsize=4096)
def _profile(text: str) -> _Profile:
    tokens = tuple(_WORD.findall(_fold(text)))
    strong, weak = _names(text)
    parts = {p for name in strong for p in _name_words(name)}
    return _Profile(
        tokens=tokens,
        negations=negation_count(tokens),
        numbers=frozenset(t for t in tokens if is_number(t)),
        qualifiers=tuple(sorted(Counter(t for t in tokens if t in QUALIFIERS).items())),
        strong=strong,
        weak=weak,
        marked=tuple(
            t
            for t in tokens
            if t in NEGATION_MARKERS or t in QUALIFIERS or t in parts or is_number(t)
        ),
    )


@lru_cache(maxsize=4096)
def _name_words(name: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(_fold(name)))


def is_rotation(a: Sequence[str], b: Sequence[str]) -> bool:
    """True when `b` is `a` with a prefix moved to the end ("X before Y" -> "before Y, X")."""
    if len(a) != len(b):
        return False
    if not a:
        return True
    doubled = "\x00" + "\x00".join([*a, *a]) + "\x00"
    return ("\x00" + "\x00".join(b) + "\x00") in doubled


def negation_divergent(a: str, b: str) -> bool:
    """The texts carry different numbers of negation markers."""
    return _profile(a).negations != _profile(b).negations


def number_divergent(a: str, b: str) -> bool:
    """The sets of number-bearing tokens differ (both empty: not divergent)."""
    return _profile(a).numbers != _profile(b).numbers


def qualifier_divergent(a: str, b: str) -> bool:
    """The multisets of qualifier words (variants, opposed pairs, quantifiers) differ."""
    return _profile(a).qualifiers != _profile(b).qualifiers


def _absent(name: str, other: tuple[str, ...]) -> bool:
    """True when `name`'s words do not occur, in order and adjacent, in `other`."""
    parts = _name_words(name)
    n = len(parts)
    if n == 1:
        return parts[0] not in other
    return not any(other[i : i + n] == parts for i in range(len(other) - n + 1))


def role_divergent(a: str, b: str) -> bool:
    """Who or what the fact is about changed, or the same parts play other roles.

    Fires when an identifier-like name of one side is absent from the other
    (``checkout-api`` vs ``payments-api``); when each side names someone the
    other never mentions (a sentence-initial name counts here: ``Alice`` vs
    ``Bob``); or when the fact-bearing tokens are the same but in another
    order, unless the whole text is a rotation of the other (a clause moved to
    the front).
    """
    pa, pb = _profile(a), _profile(b)
    ta, tb = pa.tokens, pb.tokens
    if any(_absent(n, tb) for n in pa.strong - pb.strong) or any(
        _absent(n, ta) for n in pb.strong - pa.strong
    ):
        return True
    names_a, names_b = pa.strong | pa.weak, pb.strong | pb.weak
    only_a = [n for n in names_a - names_b if _absent(n, tb)]
    only_b = [n for n in names_b - names_a if _absent(n, ta)]
    if only_a and only_b:
        return True
    ma, mb = pa.marked, pb.marked
    return ma != mb and Counter(ma) == Counter(mb) and not is_rotation(ta, tb)


def normalize_name(name: str) -> str:
    """An entity name's comparison key: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def entity_divergent(
    a_entities: Iterable[tuple[str, str]], b_entities: Iterable[tuple[str, str]]
) -> bool:
    """Both declare entities of one type, and no name of that type is shared."""
    by_type_a: dict[str, set[str]] = {}
    by_type_b: dict[str, set[str]] = {}
    for kind, name in a_entities:
        by_type_a.setdefault(normalize_name(kind), set()).add(normalize_name(name))
    for kind, name in b_entities:
        by_type_b.setdefault(normalize_name(kind), set()).add(normalize_name(name))
    return any(
        kind in by_type_b and not (names & by_type_b[kind]) for kind, names in by_type_a.items()
    )


GUARDS: Final = ("negation", "number", "qualifier", "role")


def divergence(
    a: str,
    b: str,
    a_entities: Iterable[tuple[str, str]] = (),
    b_entities: Iterable[tuple[str, str]] = (),
) -> tuple[str, ...]:
    """The guards that veto merging `a` and `b`, in GUARDS order; empty when none does."""
    fired = []
    if negation_divergent(a, b):
        fired.append("negation")
    if number_divergent(a, b):
        fired.append("number")
    if qualifier_divergent(a, b):
        fired.append("qualifier")
    if role_divergent(a, b) or entity_divergent(a_entities, b_entities):
        fired.append("role")
    return tuple(fired)


def merge_vetoed(
    a: str,
    b: str,
    a_entities: Iterable[tuple[str, str]] = (),
    b_entities: Iterable[tuple[str, str]] = (),
) -> bool:
    """True when any guard fires: the two texts must stay two memories."""
    return bool(divergence(a, b, a_entities, b_entities))


def missing_facts(source: str, summary: str) -> tuple[str, ...]:
    """The fact-bearing parts of `source` that `summary` drops, in `source`'s order.

    A summary that folds `source` must keep its numbers, its identifier-like
    and proper names (as words, in order), and its negation (one is enough: a
    summary may phrase several prohibitions as one). Empty when nothing is
    dropped.
    """
    ps, pt = _profile(source), _profile(summary)
    dropped: list[str] = [n for n in sorted(ps.numbers) if n not in pt.numbers]
    dropped += [name for name in sorted(ps.strong) if _absent(name, pt.tokens)]
    if ps.negations and not pt.negations:
        dropped.append("negation")
    return tuple(dropped)
