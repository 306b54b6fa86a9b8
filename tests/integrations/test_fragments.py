"""The merge primitives: JSONC splices, fenced blocks and TOML tables touch only what is ours.

Property tests: for any document, inserting our fragment and reversing the splice gives back
the same bytes; removing it by structure gives back the same value; the user's values are
never changed by either.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.integrations import fence, jsonc, tomltable
from memhtml.integrations.splice import Splice, undo

OURS = {"command": "/opt/memhtml/bin/memhtml-mcp", "env": {"MEMHTML_ROOT": "/home/u/memhtml"}}

keys = st.text(st.characters(codec="utf-8", exclude_characters='"\\'), min_size=1, max_size=8)
scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
documents = st.dictionaries(keys.filter(lambda k: k != "mcpServers"), values, max_size=5)


def spellings(doc: dict[str, Any]) -> list[str]:
    return [
        json.dumps(doc),
        json.dumps(doc, indent=2) + "\n",
        json.dumps(doc, indent=4),
        json.dumps(doc, indent="\t") + "\n",
    ]


@settings(max_examples=150, deadline=None)
@given(documents, st.integers(0, 3))
def test_a_json_member_goes_in_and_comes_out_exactly(doc: dict[str, Any], style: int) -> None:
    text = spellings(doc)[style]
    new, splice, created = jsonc.set_value(text, ["mcpServers", "memhtml"], OURS)
    parsed = json.loads(new)
    assert parsed["mcpServers"]["memhtml"] == OURS
    assert {k: v for k, v in parsed.items() if k != "mcpServers"} == doc
    assert undo(new, [splice]) == text
    stripped = jsonc.remove_member(new, ["mcpServers", "memhtml"], created)
    assert json.loads(stripped) == doc


@settings(max_examples=100, deadline=None)
@given(st.lists(values, max_size=4), st.integers(0, 3))
def test_array_items_go_in_and_come_out(items: list[Any], style: int) -> None:
    doc = {"hooks": {"Stop": items}}
    text = spellings(doc)[style]
    entry = {"hooks": [{"type": "command", "command": "memhtml hook session-start --host claude"}]}
    new, s1, _ = jsonc.append_items(text, ["hooks", "Stop"], [entry])
    new, s2, created = jsonc.append_items(new, ["hooks", "SessionStart"], [entry])
    assert json.loads(new)["hooks"]["Stop"] == [*items, entry]
    assert undo(new, [s1, s2]) == text
    out = jsonc.remove_items(new, ["hooks", "Stop"], lambda e: e == entry)
    out = jsonc.remove_items(out, ["hooks", "SessionStart"], lambda e: e == entry, created)
    assert json.loads(out) == doc


def test_jsonc_comments_and_trailing_commas_survive() -> None:
    text = '// top\n{\n  "a": 1, // one\n  /* block */ "b": [1, 2,],\n}\n'
    new, splice, _ = jsonc.set_value(text, ["mcp", "memhtml"], {"x": 1})
    assert "// top" in new and "// one" in new and "/* block */" in new
    assert jsonc.parse(new).python() == {"a": 1, "b": [1, 2], "mcp": {"memhtml": {"x": 1}}}
    assert undo(new, [splice]) == text


@pytest.mark.parametrize(
    "bad",
    ['{"a": 1', '{"a": }', "{'a': 1}", '{"a": 1} x', "/* open", '{"a": tru}', '{"a" 1}'],
)
def test_jsonc_refuses_what_is_not_json(bad: str) -> None:
    with pytest.raises(jsonc.JsoncError) as err:
        jsonc.parse(bad)
    assert "line 1" in str(err.value)


def test_a_scalar_on_the_way_is_not_replaced() -> None:
    with pytest.raises(jsonc.NotAContainerError):
        jsonc.set_value('{"mcpServers": 3}', ["mcpServers", "memhtml"], OURS)
    with pytest.raises(jsonc.NotAContainerError):
        jsonc.append_items('{"hooks": {"Stop": {}}}', ["hooks", "Stop"], [1])


def test_undo_refuses_when_the_text_was_rewritten() -> None:
    assert undo("abc", [Splice("", "zz")]) is None
    assert undo("zz zz", [Splice("", "zz")]) is None
    assert undo("a zz b", [Splice("y", "zz")]) == "a y b"


lines = st.lists(
    st.text(
        st.characters(codec="utf-8", exclude_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
    ).filter(lambda t: "MEMHTML:" not in t),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(lines, st.booleans())
def test_a_fenced_block_goes_in_and_comes_out_exactly(content: list[str], newline: bool) -> None:
    text = "\n".join(content) + ("\n" if newline and content else "")
    new, splice = fence.append(text, fence.MARKDOWN, "## memhtml\n\nrules\n")
    assert new.startswith(text)
    assert fence.body(new, fence.MARKDOWN) == "## memhtml\n\nrules"
    assert undo(new, [splice]) == text
    kept = fence.remove(new, fence.MARKDOWN)  # by structure: every line of the user's stays
    assert [x for x in kept.split("\n") if x.strip()] == [x for x in text.split("\n") if x.strip()]


@pytest.mark.parametrize(
    "broken",
    [
        "<!-- MEMHTML:START -->\nx\n",
        "x\n<!-- MEMHTML:END -->\n",
        "<!-- MEMHTML:END -->\n<!-- MEMHTML:START -->\n",
        "<!-- MEMHTML:START -->\n<!-- MEMHTML:START -->\n<!-- MEMHTML:END -->\n",
    ],
)
def test_broken_markers_are_refused_never_repaired(broken: str) -> None:
    with pytest.raises(fence.FenceError):
        fence.body(broken, fence.MARKDOWN)
    with pytest.raises(fence.FenceError):
        fence.remove(broken, fence.MARKDOWN)


toml_docs = st.dictionaries(
    st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda k: k != "mcp_servers"),
    st.integers(-5, 5) | st.text(max_size=6) | st.booleans(),
    max_size=4,
)


@settings(max_examples=100, deadline=None)
@given(toml_docs, st.booleans())
def test_a_toml_table_goes_in_and_comes_out(root: dict[str, Any], with_table: bool) -> None:
    lines = [f"{k} = {tomltable._scalar(v)}" for k, v in root.items()]
    if with_table:
        lines += ["", "[profiles.fast]", 'model = "o4-mini"  # fast']
    text = "# mine\n" + "\n".join(lines) + "\n"
    before = tomllib.loads(text)
    new, splice, created = tomltable.add(text, ["mcp_servers", "memhtml"], OURS)
    after = tomllib.loads(new)
    assert after.pop("mcp_servers") == {"memhtml": OURS}
    assert after == before
    assert undo(new, [splice]) == text
    assert tomllib.loads(tomltable.remove(new, ["mcp_servers", "memhtml"], created)) == before


def test_a_toml_inline_table_is_handled_by_structure() -> None:
    text = 'mcp_servers = { other = { command = "x" } }\n'
    new, splice, created = tomltable.add(text, ["mcp_servers", "memhtml"], OURS)
    assert not created and splice.old == text
    assert tomllib.loads(new)["mcp_servers"]["other"] == {"command": "x"}
    assert tomllib.loads(tomltable.remove(new, ["mcp_servers", "memhtml"], False)) == tomllib.loads(
        text
    )


def test_codex_rewriting_its_tables_leaves_ours_removable() -> None:
    """`codex mcp add` rewrites the [mcp_servers.*] tables (seen with codex-cli 0.171):
    the splice no longer reverses, and removal by key keeps the other server."""
    text = '# mine\nmodel = "gpt-5"\n'
    new, splice, created = tomltable.add(text, ["mcp_servers", "memhtml"], OURS)
    rewritten = new.replace("\n\n[mcp_servers.memhtml.env]", "\n[mcp_servers.memhtml.env]") + (
        '\n[mcp_servers.other]\ncommand = "/bin/echo"\n'
    )
    assert undo(rewritten, [splice]) is None
    out = tomltable.remove(rewritten, ["mcp_servers", "memhtml"], created)
    assert tomllib.loads(out) == {
        "model": "gpt-5",
        "mcp_servers": {"other": {"command": "/bin/echo"}},
    }
