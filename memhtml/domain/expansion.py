"""Query expansion from a first retrieval round: feedback terms and the fusion of two rounds.

Pure. `feedback_terms` reads the texts of the first round's top hits and
picks the words several of them share that the query does not already
have (pseudo-relevance feedback: a multi-hop question names one side of a
link, its first hits name the other). `entity_terms` picks the names of the
corpus's own entities that the first hits carry and the query does not.
`merge_rounds` fuses the first and the second round's rankings with
reciprocal-rank fusion, the first round at weight 1.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final

_TOKEN: Final = re.compile(r"[A-Za-z][A-Za-z0-9']+")
MIN_TERM_LENGTH: Final = 3


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of at least MIN_TERM_LENGTH characters, possessives dropped."""
    out = []
    for t in _TOKEN.findall(text):
        word = t.lower().removesuffix("'s").strip("'")
        if len(word) >= MIN_TERM_LENGTH:
            out.append(word)
    return out


def feedback_terms(
    query: str,
    texts: Sequence[str],
    *,
    stopwords: Collection[str] = frozenset(),
    max_terms: int = 5,
    min_docs: int = 2,
) -> list[str]:
    """Words in at least `min_docs` of `texts` that the query lacks: most shared first.

    Ties go to the word seen first (texts in rank order), so the result is
    deterministic and leans on the better-ranked hits.
    """
    if max_terms <= 0:
        return []
    have = set(tokens(query))
    df: dict[str, int] = {}
    first: dict[str, int] = {}
    position = 0
    for text in texts:
        for word in dict.fromkeys(tokens(text)):
            if word in have or word in stopwords:
                continue
            df[word] = df.get(word, 0) + 1
            first.setdefault(word, position)
            position += 1
    kept = [w for w, n in df.items() if n >= min_docs]
    kept.sort(key=lambda w: (-df[w], first[w]))
    return kept[:max_terms]


def entity_terms(
    query: str, hit_entities: Iterable[Iterable[str]], *, max_terms: int = 5
) -> list[str]:
    """Entity names (``type:name`` -> name) the hits carry and the query does not name.

    Names are counted over hits; the most carried first, then first seen.
    """
    have = set(tokens(query))
    count: dict[str, int] = {}
    order: dict[str, int] = {}
    for ents in hit_entities:
        for ent in dict.fromkeys(ents):
            name = ent.partition(":")[2] or ent
            words = tokens(name)
            if not words or all(w in have for w in words):
                continue
            key = " ".join(words)
            count[key] = count.get(key, 0) + 1
            order.setdefault(key, len(order))
    ranked = sorted(count, key=lambda n: (-count[n], order[n]))
    return ranked[: max(0, max_terms)]


def expanded_query(query: str, terms: Sequence[str]) -> str:
    """The query with the terms appended (the query itself when there are none)."""
    return query if not terms else f"{query} {' '.join(terms)}"


def merge_rounds(
    first: Sequence[str], second: Sequence[str], *, k: int, second_weight: float
) -> list[str]:
    """RRF of two rankings (first at weight 1); ties to the first round's order, then the id."""
    score: dict[str, float] = {}
    for rank, doc in enumerate(first, start=1):
        score[doc] = score.get(doc, 0.0) + 1.0 / (k + rank)
    for rank, doc in enumerate(second, start=1):
        score[doc] = score.get(doc, 0.0) + second_weight / (k + rank)
    first_rank: Mapping[str, int] = {d: i for i, d in enumerate(first)}
    big = len(first) + len(second)
    return sorted(score, key=lambda d: (-score[d], first_rank.get(d, big), d))
