"""A state sidecar read as hostile input: every line bounded, validated, refused by number.

A committed sidecar (`.memhtml/state/access.jsonl`, `corroboration.jsonl`)
arrives with every sync, so whoever can push to the shared remote writes it.
What a row may claim is therefore bounded here, before anything reaches the
state plane:

* size: a file over `MAX_SIDECAR_BYTES`, or a line over `MAX_LINE_BYTES`, is
  refused without being read whole;
* shape: a line is one flat JSON object; nesting past Python's recursion
  limit, `NaN` / `Infinity`, an integer of more digits than Python converts,
  a key given twice, invalid UTF-8: each is the line's refusal, never a
  stray exception;
* time: no timestamp may lie after `now` plus `FUTURE_SKEW_S` (another
  machine's clock may run a little ahead; a row from the future would win
  every later-wins merge and pin the outcome score and the cooldown);
* counts: a whole number >= 0 that fits SQLite's 64-bit integer, clamped to
  `MAX_COUNT` (salience takes the log of the count: the ceiling keeps one
  row from outweighing the recency and outcome terms by more than it can
  earn locally); the clamp is counted, the overflow refused.

Which paths are memories is the caller's question (it needs the tree): a row
naming anything else is skipped there, not refused here. Every refusal is an
InvalidSidecarError naming the file and the line, and nothing is imported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any, Final, NamedTuple

from memhtml.contracts.dates import as_datetime, format_instant, is_strict_datetime
from memhtml.contracts.errors import InvalidSidecarError
from memhtml.contracts.paths import refused_character
from memhtml.contracts.vocab import REL_CLASS

# A 100k-memory store's access sidecar is ~23 MB (about 230 bytes a row).
MAX_SIDECAR_BYTES: Final = 128 * 1024 * 1024
# A row is ~230 bytes; a memory path is at most 1,024 bytes.
MAX_LINE_BYTES: Final = 16 * 1024
# A read and a reinforce each count at most once per path per 15-minute cooldown:
# a million is two counted accesses every cooldown for fourteen years.
MAX_COUNT: Final = 1_000_000
INT64_MAX: Final = 2**63 - 1
FUTURE_SKEW_S: Final = 300  # how far ahead of the local clock a timestamp may be
MAX_NAME_CHARS: Final = 512  # an entity type, alias or canonical name, a rel


@dataclass(frozen=True, slots=True)
class AccessRow:
    """One validated access sidecar row (counts already clamped)."""

    path: str
    access_count: int
    reinforcement_count: int
    outcome_score: float
    last_accessed_at: str | None
    last_reinforced_at: str | None
    updated_at: str
    clamped: bool = False


class CorroborationRows(NamedTuple):
    """The validated rows of a corroboration sidecar."""

    entities: list[tuple[Any, ...]]  # (type, alias, canonical, count, first, last, promoted)
    edges: list[tuple[Any, ...]]  # (src, rel, dst, count, first, last)
    clamped: int


def bad_line(source: str, n: int, why: str) -> InvalidSidecarError:
    """The refusal of line `n` of `source`: nothing was imported."""
    return InvalidSidecarError(
        f"{source} line {n}: {why}; nothing was imported",
        suggestions=[f"fix or delete line {n}, then run memhtml state import again"],
        details={"file": source, "line": n},
    )


def show(value: Any) -> str:
    """A value for a message: its repr, cut to 60 characters (a hostile line is long)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def future_limit(now: str) -> str:
    """The latest timestamp a row may carry: `now` plus the allowed clock skew."""
    return format_instant(as_datetime(now) + timedelta(seconds=FUTURE_SKEW_S))


def now_instant() -> str:
    """The local clock as a stored instant."""
    return format_instant(datetime.now(UTC))


# -- lines ---------------------------------------------------------------------------------
def sidecar_lines(stream: IO[bytes], source: str) -> Iterator[tuple[int, str]]:
    """(number, text) of each non-blank line, each at most MAX_LINE_BYTES and valid UTF-8."""
    n = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 2)
        if not raw:
            return
        n += 1
        if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
            raise bad_line(source, n, f"longer than {MAX_LINE_BYTES} bytes")
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # a byte-order mark some editors add
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise bad_line(source, n, f"not UTF-8 text (byte {exc.start})") from exc
        if text.strip():
            yield n, text


def text_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number, text) of each non-blank line of a decoded sidecar."""
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield n, line


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {show(key)} is given twice")
        out[key] = value
    return out


def decode_object(line: str, source: str, n: int) -> dict[str, Any]:
    """Line `n` as one JSON object, or its refusal (never another exception)."""
    if len(line.encode("utf-8")) > MAX_LINE_BYTES:
        raise bad_line(source, n, f"longer than {MAX_LINE_BYTES} bytes")
    try:
        obj = json.loads(line, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise bad_line(source, n, f"not JSON ({exc.msg})") from exc
    except RecursionError as exc:
        raise bad_line(source, n, "nested too deeply to be a row") from exc
    except ValueError as exc:  # NaN/Infinity, a repeated key, an integer of too many digits
        raise bad_line(source, n, str(exc)) from exc
    if not isinstance(obj, dict):
        raise bad_line(source, n, "not a JSON object")
    return obj


# -- fields --------------------------------------------------------------------------------
Fail = Callable[[str], InvalidSidecarError]


def count_field(obj: Mapping[str, Any], key: str, fail: Fail) -> tuple[int, bool]:
    """(the count clamped to MAX_COUNT, whether it was clamped); a non-count is refused."""
    value = obj.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(f"{key} must be a whole number >= 0, not {show(value)}")
    if value > INT64_MAX:
        raise fail(f"{key} {show(value)} overflows a 64-bit count")
    return (MAX_COUNT, True) if value > MAX_COUNT else (value, False)


def instant_field(
    obj: Mapping[str, Any], key: str, limit: str, fail: Fail, *, required: bool = False
) -> str | None:
    """A stored-grammar timestamp no later than `limit`, or None when absent (if allowed)."""
    value = obj.get(key)
    if value is None or (value == "" and not required):
        if required:
            raise fail(f"{key} must be given")
        return None
    if not isinstance(value, str) or not is_strict_datetime(value):
        raise fail(f"{key} must be null or a date / YYYY-MM-DDThh:mm:ssZ, not {show(value)}")
    if value > limit:
        raise fail(
            f"{key} {value} is in the future (the local clock allows up to {limit}:"
            f" now plus {FUTURE_SKEW_S // 60} minutes of skew)"
        )
    return value


def name_field(obj: Mapping[str, Any], key: str, fail: Fail) -> str:
    """A non-empty name of at most MAX_NAME_CHARS with no control or invisible character."""
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise fail(f"{key} must be a non-empty string, not {show(value)}")
    if len(value) > MAX_NAME_CHARS:
        raise fail(f"{key} is longer than {MAX_NAME_CHARS} characters")
    bad = refused_character(value)
    if bad is not None:
        raise fail(f"{key} contains a control or invisible character (U+{ord(bad):04X})")
    return value


def _path_field(obj: Mapping[str, Any], key: str, fail: Fail) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise fail(f"{key} must be a path string, not {show(value)}")
    return value


def _score(value: float) -> float:
    rounded = round(float(value), 4)
    return 0.0 if rounded == 0 else rounded


# -- rows ----------------------------------------------------------------------------------
def access_rows(
    lines: Iterator[tuple[int, str]], source: str, now: str | None = None
) -> list[AccessRow]:
    """Every row of an access sidecar, validated; the first bad line raises."""
    limit = future_limit(now or now_instant())
    rows: list[AccessRow] = []
    for n, line in lines:
        obj = decode_object(line, source, n)

        def fail(why: str, n: int = n) -> InvalidSidecarError:
            return bad_line(source, n, why)

        path = _path_field(obj, "path", fail)
        score = obj.get("outcomeScore", 0)
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or (isinstance(score, float) and not math.isfinite(score))
            or not -1 <= score <= 1
        ):
            raise fail(f"outcomeScore must be a number in [-1, 1], not {show(score)}")
        updated = obj.get("updatedAt", "")
        if updated != "":
            updated = instant_field(obj, "updatedAt", limit, fail) or ""
        access, clamped_a = count_field(obj, "accessCount", fail)
        reinforced, clamped_r = count_field(obj, "reinforcementCount", fail)
        rows.append(
            AccessRow(
                path=path,
                access_count=access,
                reinforcement_count=reinforced,
                outcome_score=_score(score),
                last_accessed_at=instant_field(obj, "lastAccessedAt", limit, fail),
                last_reinforced_at=instant_field(obj, "lastReinforcedAt", limit, fail),
                updated_at=updated,
                clamped=clamped_a or clamped_r,
            )
        )
    return rows


def corroboration_rows(
    lines: Iterator[tuple[int, str]], source: str, now: str | None = None
) -> CorroborationRows:
    """(entity rows, edge rows, clamped) of a corroboration sidecar, validated likewise."""
    limit = future_limit(now or now_instant())
    out = CorroborationRows([], [], 0)
    clamped = 0
    for n, line in lines:
        obj = decode_object(line, source, n)

        def fail(why: str, n: int = n) -> InvalidSidecarError:
            return bad_line(source, n, why)

        kind = obj.get("kind")
        if kind not in ("entity", "edge"):
            raise fail(f"kind must be entity or edge, not {show(kind)}")
        count, was_clamped = count_field(obj, "count", fail)
        if count < 1:
            raise fail("count must be >= 1")
        clamped += was_clamped
        first = instant_field(obj, "firstSeen", limit, fail, required=True)
        last = instant_field(obj, "lastSeen", limit, fail, required=True)
        if kind == "entity":
            promoted = obj.get("promoted", False)
            if not isinstance(promoted, bool):
                raise fail(f"promoted must be true or false, not {show(promoted)}")
            names = [name_field(obj, k, fail) for k in ("entityType", "alias", "canonical")]
            out.entities.append((*names, count, first, last, int(promoted)))
        else:
            src, dst = _path_field(obj, "srcPath", fail), _path_field(obj, "dstPath", fail)
            rel = name_field(obj, "rel", fail)
            if rel not in REL_CLASS:
                raise fail(f"rel must be a relation of the link vocabulary, not {show(rel)}")
            out.edges.append((src, rel, dst, count, first, last))
    return out._replace(clamped=clamped)
