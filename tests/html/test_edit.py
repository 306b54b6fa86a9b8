"""The surgical head editors on files other tools wrote, and head_items."""

from __future__ import annotations

import pytest

from memhtml.contracts.errors import InvalidMemoryError
from memhtml.html import (
    HeadItem,
    add_link,
    add_meta,
    head_items,
    parse_memory,
    remove_link,
    remove_meta,
    set_meta,
)

FOREIGN = (
    "<!DOCTYPE html>\r\n"
    "<html>\r\n"
    "<HEAD>\r\n"
    "    <meta charset=utf-8 />\r\n"
    '    <title>Written elsewhere, about &lt;meta name="memhtml-tag"&gt; <meta> tags</title>\r\n'
    "    <meta content='semantic' name='memhtml-type' />\r\n"
    '    <META NAME="memhtml-status"   CONTENT="active">\r\n'
    "    <meta content=2026-07-28 name=memhtml-created>\r\n"
    '    <meta name="memhtml-updated" content="2026-07-28"/>\r\n'
    '    <!-- <meta name="memhtml-tag" content="commented out"> -->\r\n'
    "    <meta name='memhtml-tag' content='ops'>\r\n"
    "    <link href='/areas/b.html' rel='memhtml-supports' />\r\n"
    "</HEAD>\r\n"
    "<body><article><p><mark>Hand-written.</mark></p></article></body>\r\n"
    "</html>\r\n"
)


def diff(before: str, after: str) -> tuple[list[str], list[str]]:
    a, b = before.splitlines(), after.splitlines()
    removed = [line for line in a if line not in b]
    added = [line for line in b if line not in a]
    return removed, added


def test_foreign_file_is_valid_to_begin_with() -> None:
    doc = parse_memory(FOREIGN)
    assert doc.ok, doc.violations
    assert doc.tags == ("ops",)


def test_set_meta_replaces_only_the_content_attribute() -> None:
    out = set_meta(FOREIGN, "memhtml-type", "procedural")
    assert diff(FOREIGN, out) == (
        ["    <meta content='semantic' name='memhtml-type' />"],
        ["    <meta content=\"procedural\" name='memhtml-type' />"],
    )
    out = set_meta(FOREIGN, "memhtml-created", "2026-07-01")
    assert '    <meta content="2026-07-01" name=memhtml-created>\r\n' in out
    out = set_meta(FOREIGN, "MEMHTML-STATUS", "archived")
    assert '    <META NAME="memhtml-status"   content="archived">\r\n' in out
    assert parse_memory(out).status == "archived"


def test_set_meta_inserts_at_the_canonical_position_with_crlf() -> None:
    out = set_meta(FOREIGN, "memhtml-importance", "9")
    lines = out.split("\r\n")
    index = lines.index('    <meta name="memhtml-importance" content="9">')
    assert lines[index - 1] == '    <meta name="memhtml-updated" content="2026-07-28"/>'
    assert "\n" not in out.replace("\r\n", "")
    assert parse_memory(out).importance == 9


def test_set_meta_normalizes_and_refuses() -> None:
    out = set_meta(FOREIGN, "memhtml-valid-until", "2026-08-01T12:00:00+02:00")
    assert parse_memory(out).valid_until == "2026-08-01T10:00:00Z"
    with pytest.raises(InvalidMemoryError):
        set_meta(FOREIGN, "memhtml-valid-until", "July 4")
    with pytest.raises(InvalidMemoryError):
        set_meta(FOREIGN, "memhtml-importance", "11")
    with pytest.raises(InvalidMemoryError):
        set_meta(FOREIGN, "memhtml-tag", "x")  # repeatable: use add_meta
    with pytest.raises(InvalidMemoryError):
        set_meta(FOREIGN, "memhtml-type", None)  # required


def test_set_meta_none_removes_and_same_value_is_a_no_op() -> None:
    with_importance = set_meta(FOREIGN, "memhtml-importance", "4")
    assert set_meta(with_importance, "memhtml-importance", None) == FOREIGN
    assert set_meta(FOREIGN, "memhtml-importance", None) == FOREIGN
    assert set_meta(FOREIGN, "memhtml-type", "semantic") == FOREIGN


def test_values_are_attribute_escaped() -> None:
    out = set_meta(FOREIGN, "memhtml-author", 'Ada "A&B" <x>\nLovelace')
    assert 'content="Ada &quot;A&amp;B&quot; &lt;x&gt;&#10;Lovelace"' in out
    assert parse_memory(out).author == 'Ada "A&B" <x>\nLovelace'


def test_add_meta_is_idempotent_and_goes_after_its_kind() -> None:
    out = add_meta(FOREIGN, "memhtml-tag", "rollback")
    lines = out.split("\r\n")
    assert lines[lines.index("    <meta name='memhtml-tag' content='ops'>") + 1] == (
        '    <meta name="memhtml-tag" content="rollback">'
    )
    assert add_meta(out, "memhtml-tag", "rollback") == out
    assert add_meta(FOREIGN, "memhtml-tag", "ops") == FOREIGN
    out = add_meta(FOREIGN, "memhtml-entity", "service: checkout-api")
    assert parse_memory(out).entities == (("service", "checkout-api"),)
    assert add_meta(out, "memhtml-entity", "service:checkout-api") == out
    with pytest.raises(InvalidMemoryError):
        add_meta(FOREIGN, "memhtml-entity", "no colon")
    with pytest.raises(InvalidMemoryError):
        add_meta(FOREIGN, "memhtml-importance", "3")


def test_remove_meta() -> None:
    out = remove_meta(FOREIGN, "memhtml-tag", "ops")
    assert parse_memory(out).tags == ()
    assert "commented out" in out  # comments are not metas
    assert remove_meta(FOREIGN, "memhtml-tag", "absent") == FOREIGN
    assert remove_meta(FOREIGN, "memhtml-tag") == out


def test_links_sorted_idempotent_and_removable() -> None:
    out = add_link(FOREIGN, "caused_by", "areas/a.html")
    lines = out.split("\r\n")
    new = '    <link rel="memhtml-caused-by" href="/areas/a.html">'
    assert lines[lines.index(new) + 1] == "    <link href='/areas/b.html' rel='memhtml-supports' />"
    assert add_link(out, "caused-by", "/areas/a.html") == out
    assert remove_link(out, "caused_by", "areas/a.html") == FOREIGN
    assert remove_link(FOREIGN, "supports", "areas/b.html").count("<link") == 0
    with pytest.raises(InvalidMemoryError):
        add_link(FOREIGN, "likes", "areas/a.html")
    with pytest.raises(InvalidMemoryError):
        add_link(FOREIGN, "supports", "areas/../x.html")


def test_first_link_goes_after_the_metas() -> None:
    text = remove_link(FOREIGN, "supports", "areas/b.html")
    out = add_link(text, "part_of", "areas/arcs/x.html")
    lines = out.split("\r\n")
    index = lines.index('    <link rel="memhtml-part-of" href="/areas/arcs/x.html">')
    assert lines[index - 1] == "    <meta name='memhtml-tag' content='ops'>"


def test_a_head_on_one_line() -> None:
    packed = (
        "<!doctype html><html><head><title>t</title>"
        '<meta name="memhtml-type" content="semantic"><meta name="memhtml-status" content="active">'
        '<meta name="memhtml-created" content="2026-01-01">'
        '<meta name="memhtml-updated" content="2026-01-01">'
        "</head><body><article><p><mark>x</mark></p></article></body></html>"
    )
    out = add_meta(set_meta(packed, "memhtml-importance", "2"), "memhtml-tag", "t")
    out = add_link(out, "supports", "areas/x.html")
    doc = parse_memory(out)
    assert doc.ok and doc.importance == 2 and doc.tags == ("t",) and len(doc.links) == 1
    assert out.count("\n") == 0
    assert out.index("memhtml-importance") < out.index("memhtml-tag") < out.index("<link")


def test_a_head_without_memhtml_metas() -> None:
    bare = "<html>\n<head>\n<title>t</title>\n</head>\n<body></body>\n</html>\n"
    out = set_meta(bare, "memhtml-importance", "5")
    assert (
        out.splitlines()[3] == '<meta name="memhtml-importance" content="5">'
    )  # indent of its neighbour
    empty = "<html><head></head><body></body></html>"
    assert 'content="5"' in set_meta(empty, "memhtml-importance", "5")


def test_no_head_is_refused() -> None:
    for editor in (
        lambda t: set_meta(t, "memhtml-importance", "3"),
        lambda t: add_meta(t, "memhtml-tag", "x"),
        lambda t: remove_meta(t, "memhtml-tag", "x"),
        lambda t: add_link(t, "supports", "areas/x.html"),
        lambda t: remove_link(t, "supports", "areas/x.html"),
        head_items,
    ):
        with pytest.raises(InvalidMemoryError):
            editor("<p>no head here</p>")


def test_head_items() -> None:
    items = head_items(FOREIGN)
    assert items[0] == HeadItem("meta", "charset", "utf-8", "    <meta charset=utf-8 />")
    keys = [item.key for item in items]
    assert keys[1:] == [
        "memhtml-type",
        "memhtml-status",
        "memhtml-created",
        "memhtml-updated",
        "memhtml-tag=ops",
        "memhtml-supports /areas/b.html",
    ]
    assert items[2].line == '    <META NAME="memhtml-status"   CONTENT="active">'
    assert items[-1].kind == "link" and items[-1].value == "/areas/b.html"


def test_a_huge_numeric_reference_in_a_head_value_is_not_a_crash() -> None:
    # html.unescape raised ValueError on a decimal reference of over 4300
    # digits (Python's int limit), which the merge driver would not catch.
    huge = "&#" + "9" * 5000 + ";"
    text = render_memory_for_edit().replace('content="me"', f'content="{huge}"')
    items = head_items(text)
    assert any(i.key == "memhtml-author" and i.value == "\ufffd" for i in items)
    edited = set_meta(text, "memhtml-importance", "3")
    assert parse_memory(edited).importance == 3


def render_memory_for_edit() -> str:
    from memhtml.html import NewMemory, render_memory

    new = NewMemory(
        title="t",
        memory_type="semantic",
        created="2026-07-28",
        updated="2026-07-28",
        claim="A claim.",
        metas={"memhtml-author": "me"},
    )
    return render_memory(new)
