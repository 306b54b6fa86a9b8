"""The sidecar validator over generated hostile lines: rows within bounds, or its refusal.

Whatever a line holds, `access_rows` / `corroboration_rows` either return rows
whose counts are in [0, MAX_COUNT], whose timestamps are no later than now
plus the skew and whose score is finite in [-1, 1], or raise
InvalidSidecarError naming the line; no other exception ever escapes.
"""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.contracts.dates import is_strict_datetime
from memhtml.contracts.errors import InvalidSidecarError
from memhtml.contracts.vocab import REL_CLASS
from memhtml.domain.salience import REINFORCE_COOLDOWN_S, cooled_down
from memhtml.ops.sidecar_rows import (
    INT64_MAX,
    MAX_COUNT,
    MAX_LINE_BYTES,
    access_rows,
    corroboration_rows,
    future_limit,
    sidecar_lines,
    text_lines,
)

NOW = "2026-06-01T12:00:00Z"
LIMIT = future_limit(NOW)

_instants = st.sampled_from(
    [
        "2026-06-01T12:04:59Z",  # within the skew
        "2026-06-01T12:05:01Z",  # just past it
        "2026-06-01",
        "2026-06-02",
        "9999-12-31T23:59:59Z",
        "0001-01-01",
        "2026-02-30",
        "2026-06-01T12:00:00+01:00",
        "",
    ]
)
_numbers = st.one_of(
    st.integers(),
    st.integers(INT64_MAX - 2, INT64_MAX + 2),
    st.integers(MAX_COUNT - 2, MAX_COUNT + 2),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
_scalars = st.one_of(st.none(), _numbers, st.text(max_size=20), _instants)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner),
    max_leaves=6,
)
_paths = st.one_of(
    st.sampled_from(["areas/a.html", "../x.html", ".memhtml/state.db", "areas/i/index.html"]),
    st.text(max_size=30),
    _numbers,
)
# Each field mostly well-formed and sometimes hostile, so whole rows get through often
# enough for the bounds on what is returned to be tested, not only the refusals.
_counts = st.one_of(
    st.integers(0, 10),
    st.integers(MAX_COUNT - 2, MAX_COUNT + 2),
    st.integers(INT64_MAX - 1, INT64_MAX + 2),
    st.integers(-3, -1),
    _values,
)
_stamps = st.one_of(_instants, st.none(), _values)
_scores = st.one_of(st.floats(-1, 1), st.floats(allow_nan=True, allow_infinity=True), _values)
_access = st.fixed_dictionaries(
    {"path": _paths},
    optional={
        "accessCount": _counts,
        "reinforcementCount": _counts,
        "outcomeScore": _scores,
        "lastAccessedAt": _stamps,
        "lastReinforcedAt": _stamps,
        "updatedAt": _stamps,
        "extra": _values,
    },
)


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, allow_nan=True)  # NaN/Infinity literals, as a hostile writer may


def _check_access(text: str) -> None:
    try:
        rows = access_rows(text_lines(text), "s.jsonl", NOW)
    except InvalidSidecarError as err:
        assert err.code == "ERR_INVALID_SIDECAR" and err.details["file"] == "s.jsonl"
        assert isinstance(err.details["line"], int) and len(err.message) < 500
        return
    for r in rows:
        assert 0 <= r.access_count <= MAX_COUNT and 0 <= r.reinforcement_count <= MAX_COUNT
        assert -1 <= r.outcome_score <= 1
        for stamp in (r.last_accessed_at, r.last_reinforced_at, r.updated_at):
            assert stamp is None or stamp <= LIMIT


@settings(max_examples=400, deadline=None)
@given(st.lists(_access, min_size=1, max_size=4))
def test_access_rows_are_bounded_or_refused(objs: list[dict[str, Any]]) -> None:
    _check_access("\n".join(_line(o) for o in objs))


_BASE = {
    "path": "areas/a.html",
    "accessCount": 3,
    "reinforcementCount": 1,
    "outcomeScore": 0.5,
    "lastAccessedAt": "2026-05-01T00:00:00Z",
    "lastReinforcedAt": None,
    "updatedAt": "2026-05-01",
}
_FIELDS = {
    "accessCount": _counts,
    "reinforcementCount": _counts,
    "outcomeScore": _scores,
    "lastAccessedAt": _stamps,
    "lastReinforcedAt": _stamps,
    "updatedAt": _stamps,
    "path": _paths,
}


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(_FIELDS)).flatmap(lambda k: st.tuples(st.just(k), _FIELDS[k])))
def test_one_hostile_field_in_a_good_row(field: tuple[str, Any]) -> None:
    key, value = field
    text = _line({**_BASE, key: value})
    overflow = key.endswith("Count") and type(value) is int and value > INT64_MAX
    future = key.endswith("At") and isinstance(value, str) and is_strict_datetime(value)
    future = future and value > LIMIT
    if overflow or future:
        try:
            access_rows(text_lines(text), "s.jsonl", NOW)
        except InvalidSidecarError as err:
            assert ("overflows" if overflow else "future") in err.message
        else:
            raise AssertionError(f"{key}={value!r} was accepted")
    _check_access(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_rows_or_a_refusal(text: str) -> None:
    _check_access(text)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3000), st.sampled_from(["[", '{"a":']))
def test_nesting_of_any_depth_is_a_refusal(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    line = opener * depth + "1" + closer * depth
    _check_access(f'{{"path":"areas/a.html"}}\n{line}')


_names = st.one_of(st.sampled_from(["person", "bob", "Robert", "x" * 600, "a\x07b"]), _values)
_corroboration = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["entity", "edge", "vertex"]) | _scalars,
        "count": _counts,
        "firstSeen": _stamps,
        "lastSeen": _stamps,
    },
    optional={
        "entityType": _names,
        "alias": _names,
        "canonical": _names,
        "srcPath": _paths,
        "dstPath": _paths,
        "rel": st.sampled_from(["contradicts", "supports", "pwns"]) | _scalars,
        "promoted": st.booleans() | _values,
    },
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_corroboration, min_size=1, max_size=4))
def test_corroboration_rows_are_bounded_or_refused(objs: list[dict[str, Any]]) -> None:
    text = "\n".join(_line(o) for o in objs)
    try:
        rows = corroboration_rows(text_lines(text), "c.jsonl", NOW)
    except InvalidSidecarError as err:
        assert err.details["file"] == "c.jsonl"
        return
    for *_, count, first, last, promoted in rows.entities:
        assert 1 <= count <= MAX_COUNT and first <= LIMIT and last <= LIMIT
        assert promoted in (0, 1)
    for _src, rel, _dst, count, first, last in rows.edges:
        assert 1 <= count <= MAX_COUNT and first <= LIMIT and last <= LIMIT
        assert rel in REL_CLASS


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=MAX_LINE_BYTES * 2 + 100))
def test_any_bytes_stream_is_lines_or_a_refusal(data: bytes) -> None:
    try:
        rows = access_rows(sidecar_lines(io.BytesIO(data), "b.jsonl"), "b.jsonl", NOW)
    except InvalidSidecarError:
        return
    assert all(0 <= r.access_count <= MAX_COUNT for r in rows)


@given(st.one_of(st.none(), st.floats(allow_nan=False), st.integers(-(10**9), 10**9)))
def test_a_cooldown_never_reaches_past_now_plus_its_length(elapsed: float | None) -> None:
    # The row's stamp is now - elapsed: cooled only while it lies in [now - cooldown, now].
    held = not cooled_down(elapsed)
    assert held == (elapsed is not None and 0 <= elapsed < REINFORCE_COOLDOWN_S)


_EDGE = {
    "kind": "edge",
    "srcPath": "areas/a.html",
    "rel": "contradicts",
    "dstPath": "areas/b.html",
    "count": 2,
    "firstSeen": "2026-01-01",
    "lastSeen": "2026-05-01",
}
_EDGE_FIELDS = {
    "rel": st.sampled_from(["contradicts", "supports", "pwns", ""]) | _scalars,
    "count": _counts,
    "firstSeen": _stamps,
    "lastSeen": _stamps,
    "srcPath": _paths,
}


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(_EDGE_FIELDS)).flatmap(lambda k: st.tuples(st.just(k), _EDGE_FIELDS[k]))
)
def test_one_hostile_field_in_a_good_edge(field: tuple[str, Any]) -> None:
    key, value = field
    try:
        rows = corroboration_rows(text_lines(_line({**_EDGE, key: value})), "c.jsonl", NOW)
    except InvalidSidecarError:
        return
    ((_, rel, _, count, first, last),) = rows.edges
    assert rel in REL_CLASS and 1 <= count <= MAX_COUNT and first <= LIMIT and last <= LIMIT
