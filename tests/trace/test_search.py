"""`trace search`: BM25 over turns, filters, the any-word fallback and the recency listing."""

from __future__ import annotations

from collections.abc import Callable

from memhtml.trace.scan import ScanReport
from memhtml.trace.search import match_terms, search_turns
from memhtml.trace.store import TraceStore
from memhtml.trace.synth import SynthSession, append_exchanges


def test_a_phrase_said_in_one_session_finds_that_session_only(
    sessions: list[SynthSession], plane: TraceStore, rescan: Callable[..., ScanReport]
) -> None:
    rescan()
    for s in sessions:
        found = search_turns(plane, f'"{s.phrase}"')
        assert found["match"] == "all" and not found["degraded"]
        assert {h["session_id"] for h in found["hits"]} == {s.session_id}
        hit = found["hits"][0]
        assert hit["role"] == "user" and hit["timestamp"] and f"«{s.phrase}»" in hit["snippet"]
        assert [x["session_id"] for x in found["sessions"]] == [s.session_id]
        assert found["sessions"][0]["first_prompt"]
        line = s.path.read_bytes()[hit["byte_at"] :].split(b"\n", 1)[0]
        assert s.phrase.encode() in line  # file_path + byte_at find the line itself


def test_filters_by_session_time_and_directory(
    sessions: list[SynthSession], plane: TraceStore, rescan: Callable[..., ScanReport]
) -> None:
    append_exchanges(sessions[0], exchanges=1, phrase="shared marker word")
    append_exchanges(sessions[1], exchanges=1, phrase="shared marker word")
    rescan()
    both = search_turns(plane, "shared marker word")
    assert {h["session_id"] for h in both["hits"]} == {
        sessions[0].session_id,
        sessions[1].session_id,
    }
    one = search_turns(plane, "shared marker word", session_id=sessions[1].session_id)
    assert {h["session_id"] for h in one["hits"]} == {sessions[1].session_id}
    stamps = sorted(h["timestamp"] for h in both["hits"])
    later = search_turns(plane, "shared marker word", since=stamps[-1])
    assert [h["timestamp"] for h in later["hits"]] == [stamps[-1]]
    here = search_turns(plane, "shared marker word", cwd=sessions[1].cwd)
    assert {h["session_id"] for h in here["hits"]} == {sessions[1].session_id}
    assert len(search_turns(plane, "the", limit=3)["hits"]) == 3


def test_no_turn_with_every_word_falls_back_to_any(
    sessions: list[SynthSession], plane: TraceStore, rescan: Callable[..., ScanReport]
) -> None:
    rescan()
    found = search_turns(plane, f"{sessions[2].phrase.split()[0]} nosuchwordanywhere")
    assert found["match"] == "any" and found["hits"]
    assert search_turns(plane, "nosuchwordanywhere")["hits"] == []


def test_a_query_without_words_lists_recent_sessions(
    sessions: list[SynthSession], plane: TraceStore, rescan: Callable[..., ScanReport]
) -> None:
    rescan()
    found = search_turns(plane, "  ?!  ", limit=3)
    assert found["degraded"] is True and found["hits"] == []
    starts = [s["started_at"] for s in found["sessions"]]
    assert len(starts) == 3 and starts == sorted(starts, reverse=True)


def test_match_terms_quote_every_word_and_keep_phrases() -> None:
    assert match_terms('fix "flaky test" AND NOT x*') == [
        '"flaky test"',
        '"fix"',
        '"and"',
        '"not"',
        '"x"',
    ]
    assert match_terms('"" -- ') == []
