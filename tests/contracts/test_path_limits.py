"""Path limits refused at validation time: long names, invisible characters, escapes.

Each of these used to get past `memory_path` and fail later: a name over 255
bytes as `OSError: File name too long` (ERR_UNKNOWN) at the first open, a
bidirectional override as a spoofed name in listings and diffs, `%2e%2e` as a
memory no `memhtml://file/` reader could ever read back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.contracts.errors import InvalidPathError
from memhtml.contracts.paths import (
    MAX_LIVE_PATH_BYTES,
    MAX_PATH_BYTES,
    MAX_SEGMENT_BYTES,
    archive_path,
    filesystem_path,
    href_to_path,
    is_memory_path,
    memory_path,
    percent_decode,
    slugify,
    with_ordinal,
)

LONG_NAME = "areas/" + "a" * 300 + ".html"


def test_a_name_over_255_bytes_is_refused() -> None:
    fits = "areas/" + "a" * (MAX_SEGMENT_BYTES - len(".html")) + ".html"
    assert memory_path(fits) == fits
    with pytest.raises(InvalidPathError, match="255"):
        memory_path("areas/" + "a" * (MAX_SEGMENT_BYTES - len(".html") + 1) + ".html")
    with pytest.raises(InvalidPathError, match="255"):
        memory_path(LONG_NAME)
    # Bytes, not characters: 100 x 'é' is 200 bytes, 130 are 260.
    assert is_memory_path("areas/" + "é" * 100 + ".html")
    assert not is_memory_path("areas/" + "é" * 130 + ".html")
    with pytest.raises(InvalidPathError, match="255"):
        memory_path("projects/" + "b" * 256 + "/x.html")


def test_the_whole_path_is_capped_and_archiving_a_valid_path_stays_valid() -> None:
    segments = ["é" * 120] * 5  # 600 characters, 1,200 bytes
    path = "areas/" + "/".join(segments) + "/x.html"
    assert len(path) < MAX_PATH_BYTES < len(path.encode())
    with pytest.raises(InvalidPathError, match=str(MAX_PATH_BYTES)):
        memory_path(path)
    # The longest live path still archives to a valid path.
    folders = "areas/" + ("e" * 200 + "/") * 4
    live = folders + "f" * (MAX_LIVE_PATH_BYTES - len(folders) - len(".html")) + ".html"
    assert len(live.encode()) == MAX_LIVE_PATH_BYTES
    assert memory_path(live) == live
    assert is_memory_path(archive_path(live, 2026))
    with pytest.raises(InvalidPathError, match="live path"):
        memory_path(live[:-5] + "f.html")
    # A 10 MB path is refused without echoing it back.
    with pytest.raises(InvalidPathError) as exc:
        memory_path("areas/" + "x" * 10_000_000 + ".html")
    assert len(exc.value.message) < 300


@pytest.mark.parametrize(
    "char",
    [
        *("\u202e", "\u202d", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2066"),
        *("\u2069", "\ufeff", "\u00ad", "\u2028", "\u2029", "\x85", "\x9b", "\x1b", "\x7f"),
        "\ud800",
    ],
)
def test_invisible_format_and_control_characters_are_refused(char: str) -> None:
    with pytest.raises(InvalidPathError, match=f"U\\+{ord(char):04X}"):
        memory_path(f"areas/inbox/invoice{char}lmth.html")


@pytest.mark.parametrize(
    "bad",
    [
        "areas/%2e%2e/x.html",
        "areas/%2E%2E/x.html",
        "areas/%2e/x.html",
        "areas/a%2fb.html",
        "areas/a%2Fb.html",
        "areas/a%5cb.html",
        "areas/%2ehidden.html",
        "areas/x%00.html",
        "areas/x%e2%80%ae.html",
        "areas/%252e%252e/x.html",  # escaped twice: a reader that decodes once sees %2e%2e
    ],
)
def test_percent_escapes_that_decode_to_traversal_or_spoofing_are_refused(bad: str) -> None:
    with pytest.raises(InvalidPathError, match="percent-escape"):
        memory_path(bad)
    with pytest.raises(InvalidPathError):
        href_to_path("/" + bad)


def test_harmless_percent_signs_and_escapes_stay_valid() -> None:
    for ok in ("areas/100%-sure.html", "areas/50%25.html", "areas/caf%C3%A9.html"):
        assert memory_path(ok) == ok
    assert percent_decode("caf%C3%A9%20x") == "café x"
    assert percent_decode("%ff") == "\ufffd"


@given(
    st.text(
        alphabet=st.sampled_from(
            [
                *("a", "B", "é", " ", "-", "/", ".", "%", "\u202e", "\u200b", "\u2066"),
                *("\ufeff", "\u00ad", "\x00", "\x1b", "\u0645", "\u05d0", "\U0001f600"),
                "\u200d",
            ]
        ),
        max_size=400,
    )
)
def test_slugs_never_carry_refused_characters(title: str) -> None:
    slug = slugify(title)
    assert slug.isascii()
    assert is_memory_path(f"areas/{slug}.html")
    assert is_memory_path(with_ordinal(f"areas/{slug}.html", 12))


def test_slugs_of_titles_with_rtl_marks() -> None:
    assert slugify("\u202eInvoice\u202c \u200bfor \u2066ACME\u2069") == "invoice-for-acme"
    assert slugify("\u200f\u200e") == "untitled"


def test_ordinal_keeps_a_multibyte_name_within_255_bytes() -> None:
    name = "\U0001f600" * 62  # 248 bytes: a valid name
    path = f"areas/{name}.html"
    assert is_memory_path(path)
    for ordinal in (2, 10, 1000, 100000):
        bumped = with_ordinal(path, ordinal)
        assert bumped.endswith(f"-{ordinal}.html")
        assert is_memory_path(bumped), (ordinal, len(bumped.split("/")[-1].encode()))


def test_filesystem_path_refuses_what_the_os_would() -> None:
    assert filesystem_path("/tmp/x/areas/a.html") == "/tmp/x/areas/a.html"
    for bad in ("", "a\x00b", "/tmp/" + "n" * 256, "/" + "d/" * 2100):
        with pytest.raises(InvalidPathError):
            filesystem_path(bad)


def _cli(root: Path, *args: str) -> tuple[int, dict[str, object]]:
    env = {**os.environ, "MEMHTML_EMBED": "off"}
    out = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *args, "--repo", str(root), "--dense"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return out.returncode, json.loads(out.stdout)


@pytest.mark.parametrize(
    "args",
    [
        ("read", LONG_NAME),
        ("archive", LONG_NAME),
        ("correct", LONG_NAME, "--title", "t", "--reason", "r", "--claim", "A claim."),
        ("link", LONG_NAME, "supports", "areas/inbox/x.html"),
        ("write", "--title", "t", "--type", "semantic", "--claim", "c.", "--path", LONG_NAME),
        ("read", "areas/inbox/x\u202elmth.html"),
        ("read", "areas/%2e%2e/inbox/x.html"),
    ],
    ids=["read", "archive", "correct", "link", "write-path", "read-rlo", "read-escape"],
)
def test_cli_refuses_bad_paths_as_invalid_path(repo: Path, args: tuple[str, ...]) -> None:
    code, env = _cli(repo, *args)
    assert env["ok"] is False, env
    assert env["code"] == "ERR_INVALID_PATH", env
    assert code == InvalidPathError.exit_code == 1
