"""The path algebra: validity, refusals, and archive paths that are injective and reversible."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.contracts.errors import InvalidPathError
from memhtml.contracts.paths import (
    archive_path,
    href_to_path,
    is_memory_path,
    live_path_of,
    memory_path,
    placement_for,
    slugify,
    unarchive_path,
    with_ordinal,
    workspace_of,
)

segment = st.text(
    alphabet=st.characters(
        min_codepoint=45, max_codepoint=122, blacklist_characters="/\\.:;<>?@[]^`"
    ),
    min_size=1,
    max_size=12,
)
live_paths = st.builds(
    lambda bucket, segs, name: "/".join([bucket, *segs, name + ".html"]),
    st.sampled_from(["projects", "areas", "resources"]),
    st.lists(segment, min_size=0, max_size=3),
    segment.filter(lambda s: s not in ("index",)),
)


@given(live_paths, st.integers(min_value=1, max_value=9999))
def test_archive_is_reversible(path: str, year: int) -> None:
    archived = archive_path(path, year)
    assert archived.startswith(f"archive/{year:04d}/")
    assert unarchive_path(archived) == (year, path)
    assert live_path_of(archived) == path
    assert is_memory_path(archived)


@given(live_paths, live_paths, st.integers(1, 9999), st.integers(1, 9999))
def test_archive_is_injective(a: str, b: str, ya: int, yb: int) -> None:
    if (a, ya) != (b, yb):
        assert archive_path(a, ya) != archive_path(b, yb)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "/areas/x.html",
        "../areas/x.html",
        "areas/../x.html",
        "areas/./x.html",
        "areas\\x.html",
        "areas/x\x00.html",
        "areas//x.html",
        "areas/x.txt",
        "elsewhere/x.html",
        "areas/.hidden.html",
        "x.html",
        "C:/areas/x.html",
        "archive/20x6/areas/x.html",
        "archive/2026/archive/2025/areas/x.html",
        "areas/index.html",
        "areas/x.html/",
    ],
)
def test_refused_paths(bad: str) -> None:
    with pytest.raises(InvalidPathError):
        memory_path(bad)


def test_archive_refuses_archived_path() -> None:
    with pytest.raises(InvalidPathError):
        archive_path("archive/2026/areas/x.html", 2027)


def test_href_round_trip() -> None:
    assert href_to_path("/areas/x.html") == "areas/x.html"
    for bad in (
        "areas/x.html",
        "//host/areas/x.html",
        "/areas/x.html?q=1",
        "http://x/areas/a.html",
    ):
        with pytest.raises(InvalidPathError):
            href_to_path(bad)


def test_workspace_and_placement() -> None:
    assert workspace_of("projects/checkout/a.html") == "checkout"
    assert workspace_of("archive/2026/projects/checkout/a.html") == "checkout"
    assert workspace_of("areas/a.html") is None
    assert placement_for("semantic", "Hello World", workspace="Check Out") == (
        "projects/check-out/hello-world.html"
    )
    assert placement_for("semantic", "X") == "areas/inbox/x.html"
    assert placement_for("semantic", "X", tags=["Postgres"]) == "resources/postgres/x.html"
    assert placement_for("procedural", "X") == "areas/procedures/x.html"
    assert placement_for("task", "X") == "areas/inbox/tasks/x.html"
    assert placement_for("task", "X", workspace="w", tags=["t"]) == "projects/w/tasks/x.html"
    assert placement_for("arc", "X", tags=["t"]) == "areas/arcs/x.html"
    assert placement_for("semantic", "X", tags=["inbox"]) == "areas/inbox/x.html"


@given(st.text(max_size=200))
def test_slug_is_safe(text: str) -> None:
    slug = slugify(text)
    assert 1 <= len(slug) <= 80
    assert all(c.isascii() and (c.isalnum() or c == "-") for c in slug)
    assert is_memory_path(f"areas/{slug}.html")


def test_ordinal_keeps_budget() -> None:
    long = "areas/" + "a" * 80 + ".html"
    assert with_ordinal(long, 1) == long
    two = with_ordinal(long, 2)
    assert two.endswith("-2.html") and len(two.split("/")[-1]) <= 80 + len(".html")
