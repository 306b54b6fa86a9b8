"""What a correction's replacement keeps of the version it replaces, and what it is called.

`correct` writes a new memory and archives the old one. The replacement is the
same memory restated, so it keeps everything the old version said *about the
fact* (how important and how sure, its tags, entities, aliases, author, task
state, when it stops holding, what it links to) and takes anew what belongs
to one version only (its birth and update stamps, its content hash, the
session that wrote it, the archive stamps). `HEAD_FIELDS` gives every head
meta of the format's vocabulary its rule; a test holds it to
`contracts.vocab.META_ORDER`, so a meta added to the format cannot be
forgotten here.

**The title.** A title often restates the claim ("Postgres pool size is
64"); then a correction that changes the claim ("... is 96") would leave a
title stating the old value, and a file name (the title's slug) saying it
too. A title can also name a topic ("Port", "VIP draining") that the
correction does not touch. So, without a given title: a correction that
keeps the claim keeps the title; one that takes back a word the title says
(a word of the old claim the new claim drops: "64", "not"; common function
words aside) takes its title from the new claim (`title_from_claim`); any
other keeps the title. A given title always wins, and the result says which
happened (`title_from`: `given`, `claim` or `original`). A title that says
the old value in other words ("sixty-four") is beyond any word rule: pass
`--title` then.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from memhtml.contracts.ops import MAX_TITLE_CHARS

if TYPE_CHECKING:
    from memhtml.html import MemoryDocument

Rule = Literal["carried", "restamped", "provenance", "version", "cleared", "conditional"]

# Every head meta of the vocabulary (contracts.vocab.META_ORDER) and what a correction does.
HEAD_FIELDS: Final[Mapping[str, tuple[Rule, str]]] = {
    "memhtml-type": ("carried", "unless --type gives another"),
    "memhtml-status": ("restamped", "active: the replacement is the live version"),
    "memhtml-created": ("restamped", "now; the archived version keeps its own birth"),
    "memhtml-updated": ("restamped", "now"),
    "memhtml-confidence": ("carried", "unless --confidence gives another"),
    "memhtml-importance": ("carried", "unless --importance gives another"),
    "memhtml-content-hash": ("restamped", "of the new article"),
    "memhtml-author": ("carried", "the fact's author"),
    "memhtml-session": ("provenance", "the correcting session's (--session-id), never the old"),
    "memhtml-prompt": ("provenance", "the correcting prompt's (--prompt-id)"),
    "memhtml-turn": ("provenance", "the correcting turn's (--turn-uuid)"),
    "memhtml-valid-from": (
        "restamped",
        "now, or the old valid-from when that is later (a fact corrected before it starts)",
    ),
    "memhtml-valid-until": (
        "conditional",
        "carried when it lies after the replacement's valid-from; an end already reached"
        " ended the old version only",
    ),
    "memhtml-reprieves": ("conditional", "carried with valid-until (the extensions it counts)"),
    "memhtml-archived": ("version", "the archive copy's stamp"),
    "memhtml-superseded-by": ("version", "the archive copy's pointer to the replacement"),
    "memhtml-needs-revision": ("cleared", "the correction is the revision"),
    "memhtml-task-status": ("carried", "on a task (a type change away from task drops it)"),
    "memhtml-due": ("carried", ""),
    "memhtml-entity": ("carried", "every one"),
    "memhtml-tag": ("carried", "every one"),
    "memhtml-alias": ("carried", "every one"),
}
# Authored links are carried too, except these, which were about the old version.
LINKS_NOT_CARRIED: Final[tuple[str, ...]] = ("supersedes", "from_session")
_TRAILING: Final = ".!?;:,… \t"


def title_from_claim(claim: str, *, limit: int = MAX_TITLE_CHARS) -> str:
    """A title restating `claim`: one line, no closing punctuation, at most `limit` characters
    (cut at a word, with an ellipsis, when longer)."""
    text = " ".join(claim.split()).rstrip(_TRAILING)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(_TRAILING) + "…"


def same_claim(a: str, b: str) -> bool:
    """Two gists say the same words (whitespace aside)."""
    return a.split() == b.split()


_WORD: Final = re.compile(r"[^\W_]+")
# Words whose loss from a claim takes back nothing a title could state (negations,
# numbers, names and modals are not among them).
_FILLER_WORDS: Final = (
    "a an the of in on at to for by with from into as and or is are was were be been"
    " being it its this that these those there here"
)
_FILLER: Final = frozenset(_FILLER_WORDS.split())


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


def stale_title(title: str, old_claim: str, new_claim: str) -> bool:
    """True when `title` says a word the correction took back: one of the old claim's
    words (function words aside) that the new claim no longer says."""
    taken_back = _words(old_claim) - _words(new_claim) - _FILLER
    return not _words(title).isdisjoint(taken_back)


def choose_title(
    given: str | None, original: MemoryDocument, new_gist: str
) -> tuple[str, Literal["given", "claim", "original"]]:
    """The replacement's title and where it came from (see the module doc)."""
    if given:
        return given, "given"
    if not same_claim(original.gist, new_gist) and stale_title(
        original.title, original.gist, new_gist
    ):
        return title_from_claim(new_gist), "claim"
    return original.title, "original"


@dataclass(frozen=True)
class Carried:
    """What the replacement takes from the old version, as write-op fields and extra metas."""

    fields: dict[str, object]  # WriteOp fields: importance, confidence, author, tag, ...
    metas: dict[str, str]  # scalar metas WriteOp has no field for
    aliases: tuple[str, ...]


def carried_head(
    original: MemoryDocument,
    *,
    memory_type: str,
    now: str,
    importance: int | None = None,
    confidence: float | None = None,
) -> Carried:
    """The old version's head as the replacement keeps it (see HEAD_FIELDS)."""
    valid_from = max(now, original.valid_from) if original.valid_from else now
    fields: dict[str, object] = {
        "importance": importance if importance is not None else original.importance,
        "confidence": confidence if confidence is not None else original.confidence,
        "author": original.author,
        "tag": list(original.tags),
        "entity": [f"{t}:{n}" for t, n in original.entities],
        "valid_from": valid_from,
        "due": original.due,
    }
    if memory_type == "task" and original.memory_type == "task":
        fields["task_status"] = original.task_status
    metas: dict[str, str] = {}
    if original.valid_until and original.valid_until > valid_from:
        metas["memhtml-valid-until"] = original.valid_until
        reprieves = original.metas.get("memhtml-reprieves")
        if reprieves is not None:
            metas["memhtml-reprieves"] = reprieves
    return Carried(fields=fields, metas=metas, aliases=tuple(original.aliases))
