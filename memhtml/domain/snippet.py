"""Snippets: where in a memory's body a query first shows, found in time linear in the body.

Pure text code, shared by search (memhtml.index.retrieval) and anything else
that shows a hit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

TOKEN: Final = re.compile(r"\w+", re.UNICODE)
SNIPPET_WIDTH: Final = 160
# A snippet tries this many query terms one str.find each (a fast C scan), then
# the rest in one pass, so its cost never grows as terms x body.
SNIPPET_FIND_TERMS: Final = 8


class _TermAutomaton:
    """Aho-Corasick over terms: one pass over a text gives the smallest rank that occurs in it.

    Linear in the text whatever the terms (no per-term rescan, no backtracking
    on long terms); each state carries the smallest rank among the terms that
    end there or at any of its suffix states.
    """

    def __init__(self, terms: Sequence[str]) -> None:
        goto: list[dict[str, int]] = [{}]
        low: list[int] = [len(terms)]
        for rank, term in enumerate(terms):
            state = 0
            for ch in term:
                nxt = goto[state].get(ch)
                if nxt is None:
                    nxt = len(goto)
                    goto[state][ch] = nxt
                    goto.append({})
                    low.append(len(terms))
                state = nxt
            low[state] = min(low[state], rank)
        fail = [0] * len(goto)
        queue = list(goto[0].values())
        for state in queue:  # breadth first: a state's fail link is settled before its children
            for ch, child in goto[state].items():
                f = fail[state]
                while f and ch not in goto[f]:
                    f = fail[f]
                target = goto[f].get(ch, 0)
                fail[child] = target if target != child else 0
                low[child] = min(low[child], low[fail[child]])
                queue.append(child)
        self.goto, self.fail, self.low, self.none = goto, fail, low, len(terms)

    def smallest_rank(self, text: str, below: int) -> int:
        """The smallest rank under `below` of a term occurring in `text` (`below` when none)."""
        goto, fail, low = self.goto, self.fail, self.low
        best, state = min(below, low[0]), 0  # low[0] < below only for the empty term
        for ch in text:
            while state and ch not in goto[state]:
                state = fail[state]
            state = goto[state].get(ch, 0)
            if low[state] < best:
                best = low[state]
                if best == 0:
                    break
        return best


class SnippetFinder:
    """Where a hit's snippet starts: the first query term, in query order, found in the body.

    Equal to trying ``body.lower().find(term)`` term by term (the original
    definition, kept as the oracle of a property test), but never terms x
    body: the first SNIPPET_FIND_TERMS terms are one str.find each (a typical
    query never needs more), and the rest are settled in ONE pass. That pass
    runs over the body's distinct words (a word-character term can only occur
    inside a word) with an Aho-Corasick automaton built once per query, so a
    long query costs O(body) per hit, not O(terms x body).
    """

    def __init__(self, terms: Sequence[str]) -> None:
        order = list(dict.fromkeys(terms))
        if "" in order:  # the empty term is found at 0: no later term can win
            order = order[: order.index("") + 1]
        self.head = order[:SNIPPET_FIND_TERMS]
        self.rest = order[SNIPPET_FIND_TERMS:]
        self.rank = {t: i for i, t in enumerate(self.rest)}
        # Words are runs of word characters: only a term made of them lies inside one.
        self.words_only = all(TOKEN.fullmatch(t) for t in self.rest)
        self.automaton = _TermAutomaton(self.rest) if self.rest else None

    def position(self, lowered: str) -> int:
        """The index in `lowered` where the snippet's term first occurs, or -1."""
        for term in self.head:
            i = lowered.find(term)
            if i >= 0:
                return i
        if self.automaton is None:
            return -1
        if self.words_only:
            words = dict.fromkeys(TOKEN.findall(lowered))
            best = min((self.rank[t] for t in self.rest if t in words), default=len(self.rest))
            if best > 0:
                best = self.automaton.smallest_rank("\n".join(words), best)
        else:
            best = self.automaton.smallest_rank(lowered, len(self.rest))
        return lowered.find(self.rest[best]) if best < len(self.rest) else -1

    def snippet(self, body: str, width: int = SNIPPET_WIDTH) -> str:
        """About `width` characters of the body around the first term, with ellipses."""
        i = self.position(body.lower())
        if i >= 0:
            start = max(0, i - width // 3)
            text = body[start : start + width].strip()
            return ("…" if start > 0 else "") + text + ("…" if start + width < len(body) else "")
        return body[:width] + ("…" if len(body) > width else "")
