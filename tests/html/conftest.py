"""Fuzzing seeds and mutators shared by the totality and differential tests.

The seeds are real memory files (tests/html/fixtures: the reference example,
two files of the committed eval corpus, and a tour of every allowed element
and attribute). A mutation is one to four edits of a seed's bytes: a flipped
or deleted byte range, a duplicated or spliced range, a changed letter case,
an inserted token from a dictionary of the markup that parsers disagree on
(comment edges, raw-text tags, `</html>`, URL obfuscations, event handlers),
and rarely a deep nest of one element over a bulk of content or one range
repeated up to 128 KiB (the shapes that expose superlinear work).
Everything is seeded, so a failure names the input that caused it.

MEMHTML_FUZZ_N sets how many inputs a fuzz test runs (by default 1,500 in the
default run, a few seconds; 100,000 in the slow variant, `pytest -m slow
tests/html`, which the default run skips).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

DICTIONARY: tuple[bytes, ...] = tuple(
    token.encode("utf-8")
    for token in (
        "<", ">", '"', "'", "=", "/", "&", ";", " ", "\n", "\t", "\r", "\x00", "\x0c",
        "<!--", "-->", "<!-->", "<!--->", "--!>", "<![CDATA[", "]]>", "<?", "<!x", "</",
        "</html>", "</body>", "</head>", "<html>", "<body>", "<head>", "</article>",
        "<article>", "<p>", "</p>", "/>", "<p/>", "<br/>",
        "<body onload=alert(1)>", "<html onmouseover=alert(1)>",
        "<noscript>", "</noscript>",
        "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
        "<script>", "</script>", "<style>", "<title>", "</title>", "<textarea>",
        "</textarea>", "<xmp>", "<iframe>", "<noembed>", "<noframes>", "<plaintext>",
        "<template>", "<svg>", "<math>", "<image src=x>", "<isindex>", "<select>",
        "<table>", "<form>", "<frameset>", "<base href=//evil>", "<img src=x onerror=alert(1)>",
        "<meta http-equiv=refresh content=0>", "<link rel=stylesheet href=//evil>",
        "<a href=javascript:alert(1)>", "<q cite=", " href=", " cite=", " onerror=",
        " onclick=x", " style=x", " class=x", " src=x", " title=", " id=x",
        "javascript:", "JaVaScRiPt:", "java&#x09;script:", "&#x6A;", "&#106", "&colon;",
        "data:", "vbscript:", "//evil", "/\\evil", "&amp;", "&lt;", "&#0;", "&#x0;",
        "&copy", "&nbsp;", "&#" + "9" * 30 + ";", "\u202e", "\u00a0", "\ufeff", "\ud7ff",
        "<mark>", "</mark>", "<time datetime=", "<data value=", "<code data-lang=",
        "<x-widget>", "<P>", "</P>", "<A HREF=",
    )
)  # fmt: skip


NESTING: tuple[bytes, ...] = tuple(
    f"<{tag}>".encode()
    for tag in (
        "aside", "details", "summary", "q", "cite", "dfn", "dl><dt>k</dt><dd", "section",
        "figure", "div", "span", "mark", "p", "li", "ul", "table", "td", "b", "code", "pre",
    )
)  # fmt: skip
CONTENT: tuple[bytes, ...] = (b"<p>x</p>", b"x ", b"<mark>m</mark>", b"<span>s</span>", b"<!---->")


def _seeds() -> list[bytes]:
    return [path.read_bytes() for path in sorted(FIXTURES.glob("*.html"))]


def mutate(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    """One to four random edits of `data` (see the module docstring)."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(out) + 1)
        kind = rng.randrange(100)
        if kind < 40:
            out[at:at] = rng.choice(DICTIONARY)
        elif kind < 55 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif kind < 65:
            del out[at : at + rng.randint(1, 16)]
        elif kind < 75:
            start = rng.randrange(len(out) + 1)
            out[at:at] = out[start : start + rng.randint(1, 64)]
        elif kind < 85:
            other = rng.choice(seeds)
            start = rng.randrange(len(other) + 1)
            out[at : at + rng.randint(0, 32)] = other[start : start + rng.randint(1, 128)]
        elif kind < 95 and out:
            i = min(at, len(out) - 1)
            out[i : i + 1] = bytes(out[i : i + 1]).swapcase()
        elif kind < 98:
            out[at:at] = out[at : at + rng.randint(1, 8)] * rng.randint(2, 64)
        elif kind < 99:  # deep nesting over a bulk of content: one level re-read per level?
            opener = rng.choice(NESTING)
            content = rng.choice(CONTENT)
            out[at:at] = opener * rng.randint(50, 300) + content * rng.randint(100, 5_000)
        else:  # rarely, a big input: one short range repeated up to ~128 KiB
            piece = out[at : at + rng.randint(1, 32)] or b"<p>"
            out[at:at] = piece * (rng.randint(1, 128 * 1024) // len(piece) + 1)
    return bytes(out)


def _fuzz_count(default: int) -> int:
    raw = os.environ.get("MEMHTML_FUZZ_N", "")
    return int(raw) if raw.strip().isdigit() else default


MutatedInputs = Callable[[int, int], Iterator[bytes]]
FuzzCount = Callable[[int], int]


@pytest.fixture(scope="session")
def fuzz_count() -> FuzzCount:
    """`fuzz_count(default)`: how many inputs a fuzz test runs (MEMHTML_FUZZ_N, else default)."""
    return _fuzz_count


@pytest.fixture(scope="session")
def seeds() -> list[bytes]:
    """The real memory files every mutation starts from."""
    return _seeds()


@pytest.fixture(scope="session")
def mutated_inputs(seeds: list[bytes]) -> MutatedInputs:
    """`mutated_inputs(n, seed)`: n mutated memory files, reproducible from `seed`."""

    def generate(n: int, seed: int) -> Iterator[bytes]:
        rng = random.Random(seed)
        for _ in range(n):
            yield mutate(rng, rng.choice(seeds), seeds)

    return generate


@pytest.fixture
def slow_only(request: pytest.FixtureRequest) -> None:
    """Skip unless the run selects slow tests (`pytest -m slow tests/html`)."""
    expression = request.config.option.markexpr or ""
    if "slow" not in expression or "not slow" in expression:
        pytest.skip("a slow fuzz run; select it with -m slow (MEMHTML_FUZZ_N sets its size)")
