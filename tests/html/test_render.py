"""render_memory: the template, determinism, and refusals."""

from __future__ import annotations

import pytest

from memhtml.contracts.errors import InvalidMemoryError
from memhtml.html import NewMemory, content_hash_of_article_html, parse_memory, render_memory


def memory(**overrides: object) -> NewMemory:
    fields: dict[str, object] = {
        "title": "Drain the VIP before reverting",
        "memory_type": "procedural",
        "created": "2026-07-28",
        "updated": "2026-07-28T10:00:00Z",
        "claim": "Drain the VIP before reverting a deploy.",
        "body": ("The revert alone leaves connections pinned.",),
    }
    fields.update(overrides)
    return NewMemory(**fields)  # type: ignore[arg-type]


def violation_codes(exc: pytest.ExceptionInfo[InvalidMemoryError]) -> set[str]:
    return {v["code"] for v in exc.value.details["violations"]}


def test_template_shape() -> None:
    text = render_memory(memory(event_at="2026-07-27", tags=("ops",)))
    lines = text.splitlines()
    assert lines[:3] == ["<!doctype html>", '<html lang="en">', "<head>"]
    assert lines[3].strip() == '<meta charset="utf-8">'
    assert lines[4].strip() == "<title>Drain the VIP before reverting</title>"
    assert "<p><mark>Drain the VIP before reverting a deploy.</mark></p>" in text
    assert '<p>Observed <time datetime="2026-07-27">2026-07-27</time>.</p>' in text
    assert text.index("Observed") < text.index("The revert alone")
    head = text[text.index("<head>") : text.index("</head>")]
    assert all(line.count("<meta") + line.count("<link") <= 1 for line in head.splitlines())
    assert text.endswith("</html>\n")


def test_render_is_deterministic() -> None:
    new = memory(
        tags=("b", "a", "b"), links=(("supports", "areas/z.html"), ("caused_by", "areas/a.html"))
    )
    assert render_memory(new) == render_memory(new)
    doc = parse_memory(render_memory(new))
    assert doc.tags == ("b", "a")
    assert [link.rel for link in doc.links] == ["caused_by", "supports"]


def test_metas_follow_the_canonical_order() -> None:
    text = render_memory(
        memory(
            metas={"memhtml-due": "2026-09-01", "memhtml-importance": "7", "memhtml-author": "me"}
        )
    )
    order = [
        "memhtml-type",
        "memhtml-importance",
        "memhtml-content-hash",
        "memhtml-author",
        "memhtml-due",
    ]
    positions = [text.index(f'name="{name}"') for name in order]
    assert positions == sorted(positions)


def test_content_hash_meta_matches_and_is_optional() -> None:
    text = render_memory(memory())
    doc = parse_memory(text)
    assert doc.metas["memhtml-content-hash"] == doc.content_hash
    assert content_hash_of_article_html(doc.article_html) == doc.content_hash
    assert "memhtml-content-hash" not in render_memory(memory(include_content_hash=False))


def test_caller_owned_article_html_is_written_verbatim() -> None:
    inner = "<p><mark>Owned <em>markup</em>.</mark></p><dl><dt>k</dt><dd>v</dd></dl>"
    doc = parse_memory(render_memory(memory(claim=None, body=(), article_html=inner)))
    assert doc.ok
    assert doc.article_html == inner
    assert doc.facets[0].name == "k"


def test_event_at_with_article_html() -> None:
    inner = "<p><mark>Owned.</mark></p>"
    doc = parse_memory(
        render_memory(memory(claim=None, body=(), article_html=inner, event_at="2026-07-28"))
    )
    assert doc.event_at == "2026-07-28"
    timed = '<p><mark>Owned.</mark> on <time datetime="2026-07-28">then</time></p>'
    same = render_memory(memory(claim=None, body=(), article_html=timed, event_at="2026-07-28"))
    assert parse_memory(same).article_html == timed


def test_task_needs_a_task_status() -> None:
    with pytest.raises(InvalidMemoryError) as exc:
        render_memory(memory(memory_type="task"))
    assert "task-status" in violation_codes(exc)
    doc = parse_memory(
        render_memory(memory(memory_type="task", metas={"memhtml-task-status": "todo"}))
    )
    assert doc.task_status == "todo"
    with pytest.raises(InvalidMemoryError) as exc:
        render_memory(memory(metas={"memhtml-task-status": "todo"}))
    assert "task-status" in violation_codes(exc)


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"memory_type": "musing"}, "unknown-type"),
        ({"title": "  "}, "title"),
        ({"title": "x" * 301}, "title"),
        ({"claim": None}, "mark-count"),
        ({"created": "July 4"}, "bad-datetime"),
        ({"metas": {"memhtml-valid-until": "July 4"}}, "bad-datetime"),
        ({"metas": {"memhtml-importance": "11"}}, "dropped-meta"),
        ({"metas": {"memhtml-mood": "sunny"}}, "unknown-meta"),
        ({"metas": {"memhtml-type": "semantic"}}, "unknown-meta"),
        ({"links": (("likes", "areas/x.html"),)}, "bad-link"),
        ({"links": (("supports", "../x.html"),)}, "bad-link"),
        ({"entities": (("", "x"),)}, "bad-meta-value"),
        ({"event_at": "someday"}, "bad-datetime"),
        ({"article_html": "<p><mark>x</mark></p>"}, "template-conflict"),
        ({"claim": "a\x00b"}, "control-character"),
        ({"status": "dormant"}, "bad-meta-value"),
        (
            {"article_html": "<p><mark>x</mark></p><script>1</script>", "claim": None, "body": ()},
            "forbidden-element",
        ),
    ],
)
def test_refusals_list_violations(overrides: dict[str, object], code: str) -> None:
    with pytest.raises(InvalidMemoryError) as exc:
        render_memory(memory(**overrides))
    assert code in violation_codes(exc)


def test_every_refusal_is_reported_at_once() -> None:
    with pytest.raises(InvalidMemoryError) as exc:
        render_memory(
            memory(memory_type="musing", created="July 4", links=(("likes", "areas/x.html"),))
        )
    assert {"unknown-type", "bad-datetime", "bad-link"} <= violation_codes(exc)


def test_wrong_field_types_raise_the_typed_error() -> None:
    with pytest.raises(InvalidMemoryError):
        render_memory(memory(title=None))


def test_loose_inputs_are_normalized() -> None:
    doc = parse_memory(
        render_memory(
            memory(
                updated="2026-07-28T12:00:00+02:00",
                metas={"memhtml-superseded-by": "areas/new.html"},
                links=(("memhtml-caused-by", "/areas/a.html"), ("leads-to", "areas/b.html")),
                entities=((" person ", " Ada "),),
            )
        )
    )
    assert doc.updated == "2026-07-28T10:00:00Z"
    assert doc.metas["memhtml-superseded-by"] == "/areas/new.html"
    assert doc.superseded_by == "areas/new.html"
    assert {(link.rel, link.path) for link in doc.links} == {
        ("caused_by", "areas/a.html"),
        ("leads_to", "areas/b.html"),
    }
    assert doc.entities == (("person", "Ada"),)
