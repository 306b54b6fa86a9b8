"""The batch kernel the model phases share (SLEEP-FACTS 1.20).

A model phase offers members under opaque keys (`m1..`, `p1..`, `e1..`), each
framed as data, asks one question per batch through the run's
`ModelCaller` (the budget, the retries, refusals as values), and checks every
answer against the corpus before anything is staged:

* a key names only a member this batch offered (a path is never asked for or
  taken from a model);
* a quote appears verbatim in the file it cites (whitespace collapsed,
  case kept);
* a claim is one sentence, and a title is not blank.

A refused call (unreachable, schema-violating after the retries, budget
spent) skips its batch whole and is counted; the phase goes on, and its
other batches still land. Nothing a refused batch proposed is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from memhtml.sleep.phase import PhaseOutcome, SleepContext
from memhtml.sleep.phases._shared import NO_MODEL, BasePhase

if TYPE_CHECKING:
    from pydantic import BaseModel

T = TypeVar("T", bound="BaseModel")
S = TypeVar("S")

CLAIM_MAX: Final = 300  # characters in a model-written claim (the consolidator's cap)
TITLE_MAX: Final = 90
_SPACE: Final = re.compile(r"\s+")
# A sentence end: . ! ? (and their closing quotes or brackets) followed by space and more text.
_SENTENCE_END: Final = re.compile(r"(?<!\b[A-Z])(?<!\be\.g)(?<!\bi\.e)[.!?][\"')\]]*\s+(?=\S)")


def collapse(text: str) -> str:
    """Runs of whitespace as one space, ends trimmed."""
    return _SPACE.sub(" ", text).strip()


def verbatim(quote: str, text: str) -> bool:
    """`quote` occurs in `text`, whitespace collapsed on both sides, case kept (not blank)."""
    q = collapse(quote)
    return bool(q) and q in collapse(text)


def one_sentence(text: str, *, limit: int = CLAIM_MAX) -> bool:
    """A non-blank single sentence of at most `limit` characters."""
    t = collapse(text)
    return bool(t) and len(t) <= limit and _SENTENCE_END.search(t) is None


def clean_title(text: str, *, limit: int = TITLE_MAX) -> str:
    """A title on one line, trailing sentence punctuation dropped, cut to `limit` at a word
    (inside a word only when its first word is longer than the limit)."""
    t = collapse(text).rstrip(".!?;: ")
    if len(t) <= limit:
        return t
    cut = t[: limit + 1]
    space = cut.rfind(" ")
    head = cut[:space] if space > 0 else t[:limit]
    return head.rstrip(" ,;:-—")


def member_text(*parts: str, limit: int) -> str:
    """Non-blank parts joined by newlines, each text once, cut to `limit` characters: a
    part another part holds (the claim, which the body repeats; a title that is the
    claim) is left out, so a model reads each sentence once and the limit is spent on
    what is new."""
    kept = list(dict.fromkeys(collapse(p) for p in parts if p and p.strip()))
    once = [
        p
        for i, p in enumerate(kept)
        if not any(i != j and p in other for j, other in enumerate(kept))
    ]
    return "\n".join(once)[:limit]


def slices(items: Sequence[S], size: int, min_size: int = 1) -> list[list[S]]:
    """`items` cut on a fixed stride of `size`; slices shorter than `min_size` dropped."""
    out = [list(items[i : i + size]) for i in range(0, len(items), size)]
    return [s for s in out if len(s) >= min_size]


@dataclass
class Asked:
    """What one model question came back with: the value, or why there is none."""

    value: Any = None
    capped: bool = False  # the run's call budget was spent
    refused: str | None = None  # ERR_MODEL_UNAVAILABLE / ERR_LLM_CONTRACT and the reason

    @property
    def ok(self) -> bool:
        """True when the answer validated."""
        return self.value is not None


def ask(
    ctx: SleepContext,
    label: str,
    prompt: str,
    *,
    system: str,
    schema: type[T],
    tool_name: str,
    tool_description: str,
) -> Asked:
    """One question through the run's caller; never raises the seam's typed errors."""
    caller = ctx.llm
    if caller is None:
        return Asked(refused=NO_MODEL)
    out = caller.call(
        prompt,
        system=system,
        schema=schema,
        tool_name=tool_name,
        tool_description=tool_description,
        label=f"{label}",
    )
    if out.ok:
        return Asked(value=out.value)
    if getattr(out, "code", None) is None:
        return Asked(capped=True, refused=out.reason)
    return Asked(refused=f"{out.code}: {out.reason}")


def keyed_blocks(label: str, offered: dict[str, str]) -> list[str]:
    """Each offered member's text framed as data under `<label>_<key>`."""
    from memhtml.llm import frame_as_data

    return [frame_as_data(label, key, text) for key, text in offered.items()]


def offer(members: Sequence[S], prefix: str = "m") -> dict[str, S]:
    """Members under opaque keys `<prefix>1..`, in the order given."""
    from memhtml.llm import offer_keys

    return offer_keys(members, prefix)


def resolve(keys: Iterable[str], offered: dict[str, S]) -> list[S]:
    """The offered members a model's keys name (unknown keys drop, repeats collapse)."""
    from memhtml.llm import resolve_keys

    return resolve_keys(keys, offered)


def refusal_detail(refused: list[str], capped: int) -> str | None:
    """The phase's detail line for refused and capped batches (None when there were none)."""
    parts = []
    if refused:
        parts.append(f"{len(refused)} batch(es) refused ({refused[0]})")
    if capped:
        parts.append(f"{capped} batch(es) not asked: the model-call budget is spent")
    return "; ".join(parts) or None


class ModelPhase(BasePhase):
    """A phase that needs the model: an honest skip without one."""

    needs_model = True

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Skipped with the reason when no model is bound; else the phase's own work."""
        if ctx.llm is None:
            return PhaseOutcome(status="skipped", detail=NO_MODEL)
        return self.judge(ctx)

    def judge(self, ctx: SleepContext) -> PhaseOutcome:  # pragma: no cover - abstract
        """The work, with a model bound (on a dry run: the candidates, no call made)."""
        raise NotImplementedError

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """The dry run's candidate counts (no call is made); the verdicts are unknown."""
        if ctx.llm is None:
            return {"counts": {}, "unknown": {"work": NO_MODEL}}
        found = super().plan(ctx)
        found["unknown"] = {"verdicts": "the model's answers are the work itself"}
        return found
