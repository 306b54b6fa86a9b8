"""Properties over generated memories: round-trips, one-line head edits, hash stability."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memhtml.contracts.vocab import EDGE_RELS, MEMORY_TYPES, TASK_STATUSES
from memhtml.html import (
    MemoryDocument,
    NewMemory,
    add_link,
    add_meta,
    parse_memory,
    remove_link,
    remove_meta,
    render_memory,
    set_meta,
)

ASCII_WS = " \t\n\r\f"


def collapse(text: str) -> str:
    """ASCII whitespace runs to one space, then any whitespace trimmed at the ends."""
    return re.sub(r"[ \t\n\r\f]+", " ", text).strip()


def hash_collapse(text: str) -> str:
    """The content hash's view of a paragraph: only ASCII whitespace is collapsed and trimmed."""
    return re.sub(r"[ \t\n\r\f]+", " ", text).strip(" ")


# Realistic text: letters of several scripts, digits, punctuation and symbols
# (so `&`, `<`, `>`, quotes), and spaces including U+00A0; no control characters.
CHARS = st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs"))
TEXT = st.text(CHARS | st.sampled_from("&<>\"' \n\u00a0"), min_size=1, max_size=40)
SOLID = TEXT.filter(lambda t: collapse(t) != "")
SLUG = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,2}", fullmatch=True)
PATH = st.builds(
    lambda bucket, folders, name: "/".join([bucket, *folders, name + ".html"]),
    st.sampled_from(["areas", "projects", "resources"]),
    st.lists(SLUG, min_size=1, max_size=2),
    SLUG,
)
DATE = st.dates(min_value=datetime(1990, 1, 1).date(), max_value=datetime(2090, 1, 1).date())
INSTANT = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1))
STRICT_DATETIME = DATE.map(lambda d: d.isoformat()) | INSTANT.map(
    lambda d: d.replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
)

SCALAR_VALUES: dict[str, st.SearchStrategy[str]] = {
    "memhtml-confidence": st.sampled_from(["0", "1", "0.5", "0.85", "1.0", "0.333"]),
    "memhtml-importance": st.integers(1, 10).map(str),
    "memhtml-author": SOLID.map(lambda t: t.strip(ASCII_WS)),
    "memhtml-session": SOLID.map(lambda t: t.strip(ASCII_WS)),
    "memhtml-prompt": SLUG,
    "memhtml-turn": st.uuids().map(str),
    "memhtml-valid-from": STRICT_DATETIME,
    "memhtml-valid-until": STRICT_DATETIME,
    "memhtml-reprieves": st.integers(0, 50).map(str),
    "memhtml-archived": STRICT_DATETIME,
    "memhtml-superseded-by": PATH.map(lambda p: "/" + p),
    "memhtml-needs-revision": st.sampled_from(["true", "false"]),
    "memhtml-due": STRICT_DATETIME,
}


@st.composite
def new_memories(draw: st.DrawFn) -> NewMemory:
    memory_type = draw(st.sampled_from(MEMORY_TYPES))
    names = draw(st.sets(st.sampled_from(sorted(SCALAR_VALUES))))
    metas = {name: draw(SCALAR_VALUES[name]) for name in sorted(names)}
    if memory_type == "task":
        metas["memhtml-task-status"] = draw(st.sampled_from(TASK_STATUSES))
    entity_type = SOLID.filter(lambda t: ":" not in t)
    return NewMemory(
        title=draw(SOLID),
        memory_type=memory_type,
        created=draw(STRICT_DATETIME),
        updated=draw(STRICT_DATETIME),
        status=draw(st.sampled_from(["active", "archived"])),
        claim=draw(SOLID),
        body=tuple(draw(st.lists(TEXT, max_size=3))),
        metas=metas,
        entities=tuple(draw(st.lists(st.tuples(entity_type, SOLID), max_size=3))),
        tags=tuple(draw(st.lists(SOLID, max_size=3))),
        aliases=tuple(draw(st.lists(SOLID, max_size=2))),
        links=tuple(draw(st.lists(st.tuples(st.sampled_from(EDGE_RELS), PATH), max_size=3))),
        event_at=draw(st.none() | STRICT_DATETIME),
    )


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


@settings(max_examples=150, deadline=None)
@given(new_memories())
def test_render_then_parse_round_trips(new: NewMemory) -> None:
    text = render_memory(new)
    doc = parse_memory(text)
    assert doc.ok, doc.violations
    assert doc.warnings == ()
    assert doc.title == collapse(new.title)
    assert (doc.memory_type, doc.status) == (new.memory_type, new.status)
    assert (doc.created, doc.updated) == (new.created, new.updated)
    for name, value in new.metas.items():
        assert doc.metas[name] == value
    assert doc.metas["memhtml-content-hash"] == doc.content_hash
    assert doc.entities == tuple(
        dict.fromkeys((k.strip(ASCII_WS), v.strip(ASCII_WS)) for k, v in new.entities)
    )
    assert doc.tags == _unique([t.strip(ASCII_WS) for t in new.tags])
    assert doc.aliases == _unique([a.strip(ASCII_WS) for a in new.aliases])
    assert sorted((link.rel, link.path) for link in doc.links) == sorted(set(new.links))
    assert all(link.href == "/" + link.path for link in doc.links)
    assert doc.gist == collapse(new.claim or "")
    assert doc.event_at == new.event_at
    observed = [f"Observed {new.event_at}."] if new.event_at else []
    paragraphs = [hash_collapse(p) for p in new.body if p.strip(ASCII_WS)]
    assert doc.body_text == " ".join([hash_collapse(new.claim or ""), *observed, *paragraphs])
    if "memhtml-superseded-by" in new.metas:
        assert doc.superseded_by == new.metas["memhtml-superseded-by"][1:]
    assert render_memory(new) == text


# ---------------------------------------------------------------- head editors

REPEATABLE = st.sampled_from(["memhtml-entity", "memhtml-tag", "memhtml-alias"])


@st.composite
def edits(draw: st.DrawFn, text: str, doc: MemoryDocument) -> tuple[str, str]:
    """One editor call that must change the file; returns (label, edited text)."""
    kind = draw(st.sampled_from(["set", "unset", "add", "remove", "link", "unlink"]))
    if kind == "set":
        name = draw(st.sampled_from([*sorted(SCALAR_VALUES), "memhtml-updated"]))
        strategy = SCALAR_VALUES.get(name, STRICT_DATETIME)
        value = draw(strategy.filter(lambda v: v != doc.metas.get(name)))
        edited = set_meta(text, name, value)
        # an updated earlier than created is stamped as created (a no-op when it already is)
        assume(name != "memhtml-updated" or edited != text)
        return kind, edited
    if kind == "unset":
        present = [n for n in doc.metas if n in SCALAR_VALUES]
        assume(present)
        return kind, set_meta(text, draw(st.sampled_from(sorted(present))), None)
    if kind == "add":
        name = draw(REPEATABLE)
        if name == "memhtml-entity":
            existing = {f"{k}:{v}" for k, v in doc.entities}
            value = draw(st.tuples(SLUG, SLUG).map(":".join).filter(lambda v: v not in existing))
        else:
            existing = set(doc.tags if name == "memhtml-tag" else doc.aliases)
            value = draw(SOLID.map(lambda t: t.strip(ASCII_WS)).filter(lambda v: v not in existing))
        return kind, add_meta(text, name, value)
    if kind == "remove":
        present = [("memhtml-entity", f"{k}:{v}") for k, v in doc.entities]
        present += [("memhtml-tag", t) for t in doc.tags]
        present += [("memhtml-alias", a) for a in doc.aliases]
        assume(present)
        name, value = draw(st.sampled_from(present))
        return kind, remove_meta(text, name, value)
    if kind == "link":
        existing = {(link.rel, link.path) for link in doc.links}
        rel, path = draw(
            st.tuples(st.sampled_from(EDGE_RELS), PATH).filter(lambda p: p not in existing)
        )
        return kind, add_link(text, rel, path)
    assume(doc.links)
    link = draw(st.sampled_from(doc.links))
    return kind, remove_link(text, link.rel, link.path)


def _changed_lines(before: list[str], after: list[str]) -> tuple[list[str], list[str]]:
    prefix = 0
    while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(before), len(after)) - prefix and before[-1 - suffix] == after[-1 - suffix]
    ):
        suffix += 1
    return before[prefix : len(before) - suffix], after[prefix : len(after) - suffix]


@settings(max_examples=200, deadline=None)
@given(new_memories(), st.data())
def test_each_head_edit_changes_exactly_one_line(new: NewMemory, data: st.DataObject) -> None:
    text = render_memory(new)
    doc = parse_memory(text)
    _, edited = data.draw(edits(text, doc))
    removed, added = _changed_lines(text.splitlines(), edited.splitlines())
    assert (len(removed), len(added)) in {(0, 1), (1, 0), (1, 1)}, (removed, added)
    body = text.index("<body>")
    assert edited[edited.index("<body>") :] == text[body:]
    after = parse_memory(edited)
    assert after.ok, after.violations
    assert after.content_hash == doc.content_hash
    assert after.article_html == doc.article_html


@settings(max_examples=50, deadline=None)
@given(new_memories(), st.data())
def test_edits_compose_and_keep_the_hash(new: NewMemory, data: st.DataObject) -> None:
    text = render_memory(new)
    original = parse_memory(text)
    for _ in range(4):
        _, text = data.draw(edits(text, parse_memory(text)))
    assert parse_memory(text).content_hash == original.content_hash
