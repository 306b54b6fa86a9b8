"""The progress line: silent off a TTY, a rate-limited ``\\r`` line on one."""

from __future__ import annotations

import io

from memhtml.progress import Progress, format_duration, track


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nothing_is_written_off_a_tty():
    stream = io.StringIO()
    with Progress(10, "embedding", stream) as progress:
        for _ in range(10):
            progress.advance()
    assert stream.getvalue() == ""
    assert progress.done == 10


def test_a_tty_gets_a_live_line_with_count_rate_and_eta():
    stream, clock = FakeTty(), Clock()
    progress = Progress(10, "embedding", stream, clock=clock)
    clock.now += 2.0
    progress.advance(4)
    first = stream.getvalue()
    assert first.startswith("\r")
    assert "embedding 4/10" in first
    assert "2.0/s" in first
    assert "ETA 0:03" in first
    progress.close()
    assert "embedding 4/10" in stream.getvalue().split("\r")[-1]
    assert stream.getvalue().endswith("\n")


def test_redraws_are_rate_limited():
    stream, clock = FakeTty(), Clock()
    progress = Progress(1000, "x", stream, clock=clock, min_interval=0.1)
    for _ in range(50):
        progress.advance()  # no time passes: only the first draw happens
    assert stream.getvalue().count("\r") == 1
    clock.now += 0.2
    progress.advance()
    assert stream.getvalue().count("\r") == 2
    assert "x 51/1000" in stream.getvalue()


def test_the_last_unit_is_always_drawn():
    stream, clock = FakeTty(), Clock()
    progress = Progress(3, "x", stream, clock=clock)
    progress.advance()
    progress.advance()
    progress.advance()
    assert "x 3/3" in stream.getvalue()


def test_close_is_idempotent():
    stream = FakeTty()
    progress = Progress(1, "x", stream)
    progress.close()
    progress.close()
    assert stream.getvalue().count("\n") == 1


def test_unknown_total_shows_count_and_rate():
    stream, clock = FakeTty(), Clock()
    progress = Progress(None, "scanning", stream, clock=clock)
    clock.now += 1.0
    progress.advance(5)
    line = progress.line()
    assert line.startswith("scanning 5 ·")
    assert "ETA" not in line


def test_shorter_line_erases_the_longer_one():
    stream, clock = FakeTty(), Clock()
    progress = Progress(None, "x", stream, clock=clock)
    clock.now += 1.0
    progress.advance(100000)
    clock.now += 1000.0
    progress.advance(1)
    draws = stream.getvalue().split("\r")[1:]
    assert len(draws[1]) >= len(draws[0])


def test_wrapping_an_iterable():
    stream = FakeTty()
    assert list(track(["a", "b", "c"], "items", stream=stream)) == ["a", "b", "c"]
    out = stream.getvalue()
    assert "items 3/3" in out
    assert out.endswith("\n")


def test_wrapping_off_a_tty_is_silent():
    stream = io.StringIO()
    assert list(track(iter(range(5)), "items", stream=stream)) == [0, 1, 2, 3, 4]
    assert stream.getvalue() == ""


def test_closed_stream_counts_as_not_a_tty():
    stream = io.StringIO()
    stream.close()
    progress = Progress(1, "x", stream)
    progress.advance()
    progress.close()
    assert not progress.enabled


def test_format_duration():
    assert format_duration(0) == "0:00"
    assert format_duration(75) == "1:15"
    assert format_duration(3725) == "1:02:05"
