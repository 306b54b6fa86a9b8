"""JSON and JSONC edited in place: parse with offsets, splice in or out only what is ours.

A host's JSON config is the user's file too (their theme, their own hooks,
their comments in `opencode.jsonc`), so an edit is one splice: the bytes it
inserts or replaces, and nothing else moves. `json.loads` + `json.dumps`
would reformat the whole file and drop every comment. New members are shaped
to the container they land in: appended after its last member at that
member's indent (pretty-printed from there) when it spans lines, inline
when it does not; an empty container opens up over lines.

Each edit returns the `Splice` it made (the text it replaced and the text it
wrote), so an uninstall can put back exactly what was there while the
inserted text is still intact, and falls back to removing the member by
structure (`remove_member`, `remove_items`) when the host rewrote the file.

Accepted input: RFC 8259 JSON plus `//` and `/* */` comments and trailing
commas (JSONC, as VS Code, Cursor and OpenCode read it). Anything else is
`JsoncError` with a line and column, and the caller leaves the file alone.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from memhtml.integrations.splice import Splice

Path_ = Sequence[str | int]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]+|\\.)*"', re.S)
_LITERALS = {"true": True, "false": False, "null": None}
_SPACE = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*.*?\*/)+", re.S)
_WORD = re.compile(r"[a-z]+")


class JsoncError(ValueError):
    """The text is not JSON/JSONC; `line` and `column` are 1-based."""

    def __init__(self, message: str, text: str, offset: int) -> None:
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        super().__init__(f"{message} at line {line}, column {column}")
        self.line = line
        self.column = column


class Node:
    """A parsed value with its span; objects keep (key, key offset, value) members in order."""

    __slots__ = ("end", "items", "kind", "members", "start", "value")

    def __init__(self, kind: str, start: int) -> None:
        self.kind = kind
        self.start = start
        self.end = start
        self.members: list[tuple[str, int, Node]] = []
        self.items: list[Node] = []
        self.value: Any = None

    def get(self, key: str | int) -> Node | None:
        """The member value for a key (the last of duplicates, as JSON.parse), or an item."""
        if isinstance(key, int):
            return self.items[key] if self.kind == "array" and 0 <= key < len(self.items) else None
        if self.kind != "object":
            return None
        found = None
        for k, _, v in self.members:
            if k == key:
                found = v
        return found

    def python(self) -> Any:
        """This node as a Python value."""
        if self.kind == "object":
            return {k: v.python() for k, _, v in self.members}
        if self.kind == "array":
            return [v.python() for v in self.items]
        return self.value


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 1 if text.startswith("\ufeff") else 0

    def fail(self, message: str) -> JsoncError:
        return JsoncError(message, self.text, self.i)

    def ws(self) -> None:
        m = _SPACE.match(self.text, self.i)
        if m is not None:
            self.i = m.end()
        if self.text.startswith("/*", self.i):
            raise self.fail("unterminated /* comment")

    def value(self, depth: int = 0) -> Node:
        if depth > 200:
            raise self.fail("nesting deeper than 200 levels")
        self.ws()
        if self.i >= len(self.text):
            raise self.fail("unexpected end of text")
        c = self.text[self.i]
        if c == "{":
            return self.container("object", "}", depth)
        if c == "[":
            return self.container("array", "]", depth)
        node = Node("scalar", self.i)
        if c == '"':
            node.value = self.string()
        else:
            m = _NUMBER.match(self.text, self.i)
            word = _WORD.match(self.text, self.i)
            if m and m.end() > self.i:
                digits = m.group()
                node.value = int(digits) if digits.lstrip("-").isdigit() else float(digits)
                self.i = m.end()
            elif word and word.group() in _LITERALS:
                node.value = _LITERALS[word.group()]
                self.i += len(word.group())
            else:
                raise self.fail(f"unexpected {c!r}")
        node.end = self.i
        return node

    def string(self) -> str:
        m = _STRING.match(self.text, self.i)
        if not m:
            raise self.fail("unterminated or invalid string")
        raw = m.group()
        if "\\" in raw:
            try:
                value = str(json.loads(raw))
            except ValueError as exc:
                raise self.fail("invalid escape in string") from exc
        else:
            value = raw[1:-1]  # no escape: the text is the value
        self.i = m.end()
        return value

    def container(self, kind: str, close: str, depth: int) -> Node:
        node = Node(kind, self.i)
        self.i += 1
        first = True
        while True:
            self.ws()
            if self.i >= len(self.text):
                raise self.fail(f"unterminated {kind}")
            if self.text[self.i] == close:
                self.i += 1
                node.end = self.i
                return node
            if not first:
                if self.text[self.i] != ",":
                    raise self.fail(f"expected ',' or '{close}'")
                self.i += 1
                self.ws()
                if self.i < len(self.text) and self.text[self.i] == close:
                    continue  # a trailing comma
            first = False
            if kind == "object":
                if self.i >= len(self.text) or self.text[self.i] != '"':
                    raise self.fail("expected a quoted key")
                key_at = self.i
                key = self.string()
                self.ws()
                if self.i >= len(self.text) or self.text[self.i] != ":":
                    raise self.fail("expected ':'")
                self.i += 1
                node.members.append((key, key_at, self.value(depth + 1)))
            else:
                node.items.append(self.value(depth + 1))


@functools.lru_cache(maxsize=8)
def parse(text: str) -> Node:
    """The tree of `text` (blank text is `{}`), or `JsoncError`.

    Cached: an install reads one config several times (its claim, what else is
    there, the edit, the check), and a `~/.claude.json` runs to megabytes.
    Nodes are never changed after parsing.
    """
    if not text.strip():
        text = "{}"
    p = _Parser(text)
    node = p.value()
    p.ws()
    if p.i != len(text):
        raise p.fail("unexpected text after the value")
    return node


def node_at(root: Node, path: Path_) -> Node | None:
    """The node at `path`, or None."""
    node: Node | None = root
    for key in path:
        node = node.get(key) if node is not None else None
    return node


def value_at(text: str | None, path: Path_) -> Any:
    """The value at `path` in `text` (None when absent, blank or unparseable)."""
    try:
        value: Any = json.loads(text or "{}")  # plain JSON (the usual case): C speed
    except ValueError:
        try:
            node = node_at(parse(text or ""), path)
        except JsoncError:
            return None
        return None if node is None else node.python()
    for key in path:
        found = (isinstance(value, dict) and isinstance(key, str) and key in value) or (
            isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value)
        )
        if not found:
            return None
        value = value[key]
    return value


def canonical(value: Any) -> str:
    """One spelling per value: what a claim hashes, so reformatting is not a change."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# -- shaping new text -----------------------------------------------------------


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _own_indent(text: str, node: Node) -> str:
    line = text[_line_start(text, node.start) :]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_before(text: str, offset: int) -> str | None:
    run = text[_line_start(text, offset) : offset]
    return run if run.strip(" \t") == "" else None


def _children(node: Node) -> list[tuple[int, Node]]:
    if node.kind == "object":
        return [(k_at, v) for _, k_at, v in node.members]
    return [(v.start, v) for v in node.items]


def _step(text: str, container: Node) -> str:
    own = _own_indent(text, container)
    for start, _ in _children(container):
        ind = _indent_before(text, start)
        if ind is not None and len(ind) > len(own) and ind.startswith(own):
            return ind[len(own) :]
    return "  "


def _render(value: Any, indent: str, step: str, pretty: bool) -> str:
    if not pretty:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    lines = json.dumps(value, ensure_ascii=False, indent=step).split("\n")
    return "\n".join([lines[0], *(indent + line for line in lines[1:])])


def _wrap(path: Path_, value: Any) -> Any:
    for key in reversed(path):
        value = {key: value} if isinstance(key, str) else [value]
    return value


def _splice(text: str, start: int, end: int, new: str) -> tuple[str, Splice]:
    return text[:start] + new + text[end:], Splice(text[start:end], new)


def _add(text: str, container: Node, entries: list[tuple[str | None, Any]]) -> tuple[str, Splice]:
    """Append members (key, value) or items (None, value) to `container`."""
    children = _children(container)
    own = _own_indent(text, container)
    step = _step(text, container)

    def member(key: str | None, value: Any, indent: str, pretty: bool) -> str:
        body = _render(value, indent, step, pretty)
        return body if key is None else f"{json.dumps(key, ensure_ascii=False)}: {body}"

    if children:
        last_start, last = children[-1]
        indent = _indent_before(text, last_start)
        pretty = "\n" in text[container.start : container.end]
        if indent is None:
            indent = own + step
        if pretty:
            new = "".join(f",\n{indent}{member(k, v, indent, True)}" for k, v in entries)
        else:
            new = "".join(f", {member(k, v, indent, False)}" for k, v in entries)
        return _splice(text, last.end, last.end, new)
    indent = own + step
    body = ",\n".join(f"{indent}{member(k, v, indent, True)}" for k, v in entries)
    inside = text[container.start + 1 : container.end - 1]
    if inside.strip():  # only comments inside: keep them, put ours in front
        return _splice(text, container.start + 1, container.start + 1, f"\n{body}")
    open_, close = ("{", "}") if container.kind == "object" else ("[", "]")
    return _splice(text, container.start, container.end, f"{open_}\n{body}\n{own}{close}")


class NotAContainerError(ValueError):
    """A key on the way holds a value of another kind (memhtml will not replace it)."""

    def __init__(self, path: Path_, kind: str) -> None:
        super().__init__(f"{'.'.join(map(str, path))} is {kind}, not an object")
        self.path = list(path)


def _kind(node: Node) -> str:
    if node.kind != "scalar":
        return "an array" if node.kind == "array" else "an object"
    v = node.value
    return "a string" if isinstance(v, str) else "null" if v is None else "a scalar"


def set_value(text: str | None, path: Path_, value: Any) -> tuple[str, Splice, Path_ | None]:
    """Set `path` to `value`, creating missing objects; the new text, the splice, and the
    outermost key path it created (None when the key existed and only its value changed)."""
    base = text if text is not None and text.strip() else None
    if base is None:
        new = json.dumps(_wrap(path, value), ensure_ascii=False, indent=2) + "\n"
        return new, Splice(text or "", new), list(path[:1])
    root = parse(base)
    if root.kind != "object":
        raise NotAContainerError([], _kind(root))
    node = root
    for depth, key in enumerate(path):
        child = node.get(key)
        if child is None:
            rest = _wrap(path[depth + 1 :], value)
            new_text, splice = _add(base, node, [(str(key), rest)])
            return new_text, splice, list(path[: depth + 1])
        if depth == len(path) - 1:
            member = node  # replace the value, keep the key where it is
            pretty = "\n" in base[member.start : member.end]
            indent = _own_indent(base, child) if pretty else ""
            rendered = _render(value, indent, _step(base, node), pretty)
            new_text, splice = _splice(base, child.start, child.end, rendered)
            return new_text, splice, None
        if child.kind != "object":
            raise NotAContainerError(path[: depth + 1], _kind(child))
        node = child
    raise AssertionError("unreachable")


def append_items(
    text: str | None, path: Path_, items: list[Any]
) -> tuple[str, Splice, Path_ | None]:
    """Append `items` to the array at `path` (created when missing, with its parents)."""
    base = text if text is not None and text.strip() else None
    node = node_at(parse(base), path) if base is not None else None
    if node is None:
        return set_value(text, path, items)
    if node.kind != "array":
        raise NotAContainerError(path, _kind(node))
    assert base is not None
    new_text, splice = _add(base, node, [(None, v) for v in items])
    return new_text, splice, None


def _cut(text: str, parent: Node, index: int) -> str:
    """`text` without the parent's child at `index` and one comma next to it."""
    children = _children(parent)
    start, node = children[index]
    if index > 0:
        return text[: children[index - 1][1].end] + text[node.end :]
    if len(children) > 1:
        return text[:start] + text[children[1][0] :]
    return text[: parent.start + 1] + text[parent.end - 1 :]


def _remove_one(text: str, path: Path_) -> str:
    parent = node_at(parse(text), path[:-1])
    key = path[-1]
    if parent is None:
        return text
    if parent.kind == "object" and isinstance(key, str):
        keys = [k for k, _, _ in parent.members]
        if key not in keys:
            return text
        return _cut(text, parent, len(keys) - 1 - keys[::-1].index(key))
    if parent.kind == "array" and isinstance(key, int) and 0 <= key < len(parent.items):
        return _cut(text, parent, key)
    return text


def _prune(text: str, up: list[str | int], prune: Path_ | None) -> str:
    """Remove each emptied container from `up` upwards while it lies within `prune`."""
    if prune is None:
        return text
    bound = list(prune)
    while up and len(up) >= len(bound) and up[: len(bound)] == bound:
        holder = node_at(parse(text), up)
        if holder is None or holder.kind == "scalar" or _children(holder):
            break
        text = _remove_one(text, up)
        up = up[:-1]
    return text


def remove_member(text: str, path: Path_, prune: Path_ | None = None) -> str:
    """`text` without the member at `path`; each container it leaves empty goes too, up to
    and including `prune` (the outermost one the install created)."""
    return _prune(_remove_one(text, path), list(path[:-1]), prune)


def remove_items(
    text: str, path: Path_, match: Callable[[Any], bool], prune: Path_ | None = None
) -> str:
    """`text` without the items of the array at `path` that `match`; an emptied array (and
    the containers above it) up to `prune` go too."""
    array = node_at(parse(text), path)
    if array is None or array.kind != "array":
        return text
    for index in reversed(range(len(array.items))):
        if match(array.items[index].python()):
            text = _cut(text, array, index)
            array = node_at(parse(text), path)
            assert array is not None
    return _prune(text, list(path), prune)
