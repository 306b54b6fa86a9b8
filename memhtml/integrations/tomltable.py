"""A TOML table in a file the user owns: Codex's `[mcp_servers.memhtml]` in `config.toml`.

The table is appended as text after a blank line, so every byte of the user's
file stays where it was, and the result is checked with `tomllib`: it must
parse to exactly the user's document plus our table (a user's inline
`mcp_servers = {...}` would make an appended header invalid; then tomlkit
places the table structurally and the same check runs). No comment fence:
Codex rewrites its `[mcp_servers.*]` tables when `codex mcp add` runs and
drops the comment lines around them (seen with codex-cli 0.171), which
would orphan a fence; a table found by its key survives that. Removal is the
splice reversed while our text is intact, else tomlkit deletes the key and
`tomllib` checks that nothing else moved.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Sequence
from typing import Any

from memhtml.integrations.splice import Splice

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


class TomlError(ValueError):
    """The text is not TOML, or an edit would change more than our table."""


def load(text: str | None) -> dict[str, Any]:
    """The parsed document (blank is `{}`), or `TomlError`."""
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(str(exc)) from exc


def value_at(text: str | None, path: Sequence[str]) -> Any:
    """The value at `path`, or None when absent or unparseable."""
    try:
        node: Any = load(text)
    except TomlError:
        return None
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k, ensure_ascii=False)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    # A TOML basic string takes JSON's escapes (\" \\ \n \t \uXXXX); JSON leaves DEL raw.
    return json.dumps(str(v), ensure_ascii=False).replace("\x7f", "\\u007f")


def render(path: Sequence[str], value: dict[str, Any]) -> str:
    """`value` as a table at `path`: scalars and arrays under its header, each sub-table
    (one level: `env`) under a header of its own after them."""
    name = ".".join(_key(k) for k in path)
    lines = [f"[{name}]"]
    subs = []
    for k, v in value.items():
        if isinstance(v, dict):
            subs.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_scalar(v)}")
    for k, v in subs:
        lines += ["", f"[{name}.{_key(k)}]", *(f"{_key(a)} = {_scalar(b)}" for a, b in v.items())]
    return "\n".join(lines) + "\n"


def _with(doc: dict[str, Any], path: Sequence[str], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return out


def _without(doc: dict[str, Any], path: Sequence[str], prune: bool) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    chain = [out]
    for key in path[:-1]:
        chain.append(chain[-1].get(key, {}))
    chain[-1].pop(path[-1], None)
    if prune:
        for depth in range(len(path) - 2, -1, -1):
            if not chain[depth + 1]:
                chain[depth].pop(path[depth], None)
    return out


def add(text: str | None, path: Sequence[str], value: dict[str, Any]) -> tuple[str, Splice, bool]:
    """`text` with the table `value` at `path` (absent before); the new text, its splice, and
    whether the containing table was created by it."""
    base = text or ""
    before = load(base)
    created = value_at(base, path[:-1]) is None
    expected = _with(before, path, value)
    sep = "" if not base or base.endswith("\n\n") else "\n" if base.endswith("\n") else "\n\n"
    new = sep + render(path, value)
    candidate = base + new
    try:
        if load(candidate) == expected:
            return candidate, Splice("", new), created
    except TomlError:
        pass
    import tomlkit

    doc = tomlkit.parse(base)
    node: Any = doc
    for key in path[:-1]:
        if key not in node:
            node[key] = tomlkit.table(is_super_table=True)
        node = node[key]
    node[path[-1]] = value
    candidate = tomlkit.dumps(doc)
    if load(candidate) != expected:
        raise TomlError(f"could not add [{'.'.join(path)}] without changing the rest of the file")
    return candidate, Splice(base, candidate), created


def remove(text: str, path: Sequence[str], prune: bool) -> str:
    """`text` without the table at `path` (and its emptied container when `prune`)."""
    import tomlkit

    before = load(text)
    expected = _without(before, path, prune)
    doc = tomlkit.parse(text)
    chain: list[Any] = [doc]
    for key in path[:-1]:
        if key not in chain[-1]:
            return text
        chain.append(chain[-1][key])
    if path[-1] not in chain[-1]:
        return text
    del chain[-1][path[-1]]
    if prune:
        for depth in range(len(path) - 2, -1, -1):
            if len(chain[depth + 1]) == 0:
                del chain[depth][path[depth]]
    out = tomlkit.dumps(doc)
    if load(out) != expected:
        raise TomlError(f"removing [{'.'.join(path)}] would change more than that table")
    return out
