"""The streaming reader and the per-line fold: offsets, limits, and totality on any bytes."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.trace.parser import LineReader, read_folded, read_line_at
from memhtml.trace.records import (
    TOOL_TEXT_LIMIT,
    FileFacts,
    Problem,
    Skipped,
    Turn,
    canonical_timestamp,
    fold_line,
    line_text,
    merge_facts,
)


def _lines(data: bytes, *, chunk: int = 7, max_line: int = 1 << 20, start: int = 0) -> list:
    reader = LineReader(io.BytesIO(data[start:]), start, chunk=chunk, max_line=max_line)
    return [*reader], reader


def test_lines_carry_their_offsets_and_a_fragment_is_left_pending() -> None:
    got, reader = _lines(b"ab\n\ncde\nfg")
    assert got == [(0, 0, b"ab", 2), (1, 3, b"", 0), (2, 4, b"cde", 3)]
    assert (reader.consumed, reader.lines, reader.pending) == (8, 3, 2)


def test_a_line_over_the_limit_is_yielded_as_none_and_never_held() -> None:
    data = b"ok\n" + b"x" * 50 + b"\nafter\n"
    got, reader = _lines(data, chunk=4, max_line=10)
    assert got == [(0, 0, b"ok", 2), (1, 3, None, 50), (2, 54, b"after", 5)]
    assert reader.consumed == len(data)


def test_stop_reads_nothing_past_the_stat_size() -> None:
    data = b"one\ntwo\nthree\n"
    reader = LineReader(io.BytesIO(data), 0, chunk=3, stop=8)
    assert [line for _, _, line, _ in reader] == [b"one", b"two"]
    assert reader.consumed == 8 and reader.bytes_read == 8


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(1, 64), st.integers(1, 40))
def test_lines_equal_a_split_on_newline_for_any_chunking(data: bytes, chunk: int, limit: int):
    got, reader = _lines(data, chunk=chunk, max_line=limit)
    *complete, rest = data.split(b"\n")
    expected, at = [], 0
    for n, line in enumerate(complete):
        expected.append((n, at, line if len(line) <= limit else None, len(line)))
        at += len(line) + 1
    assert got == expected
    assert reader.consumed == at and reader.pending == len(rest)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_fold_is_total_on_any_bytes(line: bytes) -> None:
    out = fold_line(line.replace(b"\n", b" "), 3, 99)
    assert out is None or isinstance(out, (Problem, Skipped, tuple))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["user", "assistant", "system", "summary", "attachment", "ai-title", "zzz"]),
    st.dictionaries(
        st.sampled_from(["message", "content", "summary", "uuid", "timestamp", "cwd", "agentId"]),
        json_values,
        max_size=6,
    ),
)
def test_fold_never_raises_on_records_of_any_shape(kind: str, fields: dict) -> None:
    line = json.dumps({"type": kind, **fields}).encode()
    out = fold_line(line, 0, 0)
    assert isinstance(out, (tuple, Skipped, Problem)) or out is None


def _fold(record: dict, **kw) -> Turn:
    out = fold_line(json.dumps(record).encode(), 4, 40, **kw)
    assert isinstance(out, tuple) and out[0] is not None, out
    return out[0]


def test_user_text_tool_calls_results_and_thinking_get_their_roles() -> None:
    base = {"uuid": "u1", "sessionId": "s", "timestamp": "2026-01-05T09:00:01.250Z"}
    user = _fold({**base, "type": "user", "message": {"content": "Fix the flaky test"}})
    assert (user.role, user.text, user.timestamp) == (
        "user",
        "Fix the flaky test",
        "2026-01-05T09:00:01Z",
    )
    call = _fold(
        {
            **base,
            "type": "assistant",
            "message": {
                "model": "m1",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
                ],
            },
        }
    )
    assert (call.role, call.tool_names, call.tool_ids, call.model) == (
        "tool_use",
        "Bash",
        "t1",
        "m1",
    )
    assert call.text == 'Bash: {"command":"ls"}'
    result = _fold(
        {
            **base,
            "type": "user",
            "message": {
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 5000}]
            },
        }
    )
    assert result.role == "tool_result" and result.tool_ids == "t1"
    assert len(result.text) == TOOL_TEXT_LIMIT and result.text_chars == 5000
    thought = _fold(
        {
            **base,
            "type": "assistant",
            "message": {"content": [{"type": "thinking", "thinking": "hmm"}]},
        }
    )
    assert thought.role == "thinking"


def test_sidechains_summaries_and_unknown_kinds() -> None:
    side = _fold(
        {"type": "user", "isSidechain": True, "agentId": "a1", "message": {"content": "sub"}}
    )
    assert side.sidechain and side.agent_id == "a1"
    sidecar = _fold(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "x"}]}},
        agent_id="a2",
    )
    assert sidecar.sidechain and sidecar.agent_id == "a2"
    summary = _fold({"type": "summary", "summary": "Fixing the parser", "leafUuid": "l1"})
    assert (summary.role, summary.text, summary.uuid) == ("summary", "Fixing the parser", None)
    raw = _fold({"type": "progress", "data": {"step": 1}})
    assert raw.role == "raw" and raw.kind == "progress" and '"step":1' in (raw.raw or "")
    assert fold_line(b'{"type":"file-history-snapshot","snapshot":{}}', 0, 0) == Skipped(
        "file-history-snapshot"
    )
    assert fold_line(b'{"type":"permission-mode"}', 0, 0) == Skipped("permission-mode")
    title = fold_line(b'{"type":"ai-title","aiTitle":"Parser work"}', 0, 0)
    assert title == (None, FileFacts(ai_title="Parser work"))


def test_bad_lines_are_problems_with_reasons() -> None:
    assert fold_line(b"{not json", 1, 10).reason == "invalid_json"  # type: ignore[union-attr]
    assert fold_line(b'{"type":"user","x":"\xff\xfe"}', 1, 10).reason == "invalid_utf8"  # type: ignore[union-attr]
    assert fold_line(b"[1, 2]", 1, 10).reason == "not_an_object"  # type: ignore[union-attr]
    assert fold_line(b'{"no":"type"}', 1, 10).reason == "not_an_object"  # type: ignore[union-attr]
    assert fold_line(b"   ", 1, 10) is None
    deep = b"[" * 100_000 + b"]" * 100_000
    assert fold_line(deep, 1, 10).reason in ("invalid_json", "not_an_object")  # type: ignore[union-attr]


def test_lone_surrogates_are_replaced_so_sqlite_can_store_them() -> None:
    turn = _fold({"type": "user", "uuid": "\ud800x", "message": {"content": "a \udc00 b"}})
    turn.text.encode("utf-8")
    assert turn.uuid is not None
    turn.uuid.encode("utf-8")


def test_timestamps_are_canonical_seconds_or_none() -> None:
    assert canonical_timestamp("2026-01-05T09:00:01.999Z") == "2026-01-05T09:00:01Z"
    assert canonical_timestamp("2026-01-05T10:00:01+01:00") == "2026-01-05T09:00:01Z"
    assert canonical_timestamp("2026-13-05T09:00:01.999Z") is None
    assert canonical_timestamp("yesterday") is None and canonical_timestamp(12) is None


def test_facts_keep_the_first_identity_and_the_latest_state() -> None:
    a = FileFacts(cwd="/a", git_branch="main", version="1")
    b = FileFacts(cwd="/b", git_branch="dev", version="2", ai_title="T")
    assert merge_facts(a, b) == FileFacts(cwd="/a", git_branch="dev", version="2", ai_title="T")
    assert merge_facts(a, None) == a


def test_a_100_mb_line_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as fh:
        fh.write(b'{"type":"user","message":{"content":"before"}}\n')
        fh.write(b'{"type":"user","message":{"content":"')
        block = b"x" * (1 << 20)
        for _ in range(100):
            fh.write(block)
        fh.write(b'"}}\n{"type":"user","message":{"content":"after"}}\n')
    tracemalloc.start()
    with path.open("rb") as fh:
        reader, folded = read_folded(fh)
        out = list(folded)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [o.reason if isinstance(o, Problem) else o[0].text for o in out] == [  # type: ignore[union-attr,index]
        "before",
        "line_too_long",
        "after",
    ]
    assert reader.consumed == path.stat().st_size
    assert peak < 40 * (1 << 20)


def test_read_line_at_and_line_text_give_the_uncapped_text(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    long = "word " * 10_000
    first = b'{"type":"user","message":{"content":"short"}}\n'
    path.write_bytes(
        first + json.dumps({"type": "user", "message": {"content": long}}).encode() + b"\n"
    )
    line = read_line_at(path, len(first))
    assert line is not None and line_text(line) == long
    assert read_line_at(tmp_path / "gone.jsonl", 0) is None
