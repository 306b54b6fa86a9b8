"""Surgical head editors: change one meta or link line and leave every other byte alone.

They work on the file's text, not on a parsed tree, so that re-serializing
never reformats a file someone wrote by hand: a head edit is a one-line diff
and the article (hence the content hash) is untouched. They tolerate markup
other tools write: attributes in any order, single or no quotes, `/>`, extra
whitespace, upper-case names, CRLF line ends, a head on one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from memhtml.contracts.dates import normalize_datetime
from memhtml.contracts.errors import InvalidMemoryError
from memhtml.contracts.paths import is_memory_path
from memhtml.contracts.vocab import (
    DATETIME_METAS,
    LINK_REL_PREFIX,
    META_ORDER,
    REPEATABLE_METAS,
    REQUIRED_METAS,
    SCALAR_METAS,
    normalize_rel,
    rel_from_token,
)
from memhtml.html.document import HeadItem
from memhtml.html.serialize import INDENT, escape_attr, link_line, meta_line
from memhtml.html.tokens import decode_attribute, read_tag, scan
from memhtml.html.validate import ASCII_WS, parse_link_href, scalar_problem, split_entity

# Where the head's start tag may begin; the tag itself is read by the tokenizer.
_HEAD_START: Final = re.compile(r"<head(?=[\t\n\f\r />])", re.IGNORECASE)
_HEAD_END: Final = re.compile(r"</head\s*>|<body[\s>]", re.IGNORECASE)
_ATTR: Final = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_ORDER: Final = {name: i for i, name in enumerate(META_ORDER)}


@dataclass(frozen=True)
class _Tag:
    """A meta or link tag found in the head, with the spans an edit needs."""

    kind: str  # "meta" or "link"
    start: int
    end: int
    attrs: dict[str, tuple[str, int, int]]  # name -> (decoded value, attr start, attr end)

    def get(self, name: str) -> str | None:
        found = self.attrs.get(name)
        return found[0] if found is not None else None

    @property
    def meta_name(self) -> str:
        return (self.get("name") or "").strip(ASCII_WS).lower()

    @property
    def content(self) -> str:
        return (self.get("content") or "").strip(ASCII_WS)

    @property
    def rel(self) -> str | None:
        """The underscore name of the first memhtml rel token, if any."""
        for token in (self.get("rel") or "").lower().split():
            if token.startswith(LINK_REL_PREFIX):
                return rel_from_token(token)
        return None


@dataclass(frozen=True)
class _Head:
    start: int  # end of the <head> open tag
    end: int  # start of </head> (or <body>, or the end of the text)
    tags: tuple[_Tag, ...]
    title: tuple[int, int] | None  # span of <title>…</title>


def _refuse(message: str, code: str = "bad-meta-value") -> InvalidMemoryError:
    return InvalidMemoryError(message, details={"violations": [{"code": code, "message": message}]})


def _scan(text: str) -> _Head:
    """The head's metas, links and title, found by the HTML5 tokenizer.

    The tokenizer skips comments and raw text (a `<meta>` in a comment is not
    a meta) and reads each tag once, so a hostile head costs linear time.
    """
    found = _HEAD_START.search(text)
    head_tag = read_tag(text, found.start()) if found is not None else None
    if head_tag is None or not head_tag.complete:
        raise _refuse("the text has no <head>", "not-html")
    start = head_tag.end
    closed = _HEAD_END.search(text, start)
    end = closed.start() if closed else len(text)
    region = text[start:end]
    tags: list[_Tag] = []
    title_open: int | None = None
    title_span: tuple[int, int] | None = None
    for tag in scan(region, every_tag=True).tags:
        if not tag.complete:
            continue  # cut off by the end of the head: not a tag
        if tag.name == "title" and title_span is None:
            if not tag.closing and title_open is None:
                title_open = tag.start
            elif tag.closing and title_open is not None:
                title_span = (start + title_open, start + tag.end)
        if tag.closing or tag.name not in ("meta", "link"):
            continue
        inner = start + tag.start + 1 + len(tag.name)  # just after "<meta" or "<link"
        attrs: dict[str, tuple[str, int, int]] = {}
        for a in _ATTR.finditer(text, inner, start + tag.end - 1):
            raw = next((g for g in a.groups()[1:] if g is not None), "")
            attrs.setdefault(a.group(1).lower(), (decode_attribute(raw), a.start(), a.end()))
        tags.append(_Tag(tag.name, start + tag.start, start + tag.end, attrs))
    return _Head(start, end, tuple(tags), title_span)


def _eol(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_bounds(text: str, pos: int) -> tuple[int, int, int]:
    """(line start, line end before its terminator, start of the next line)."""
    start = text.rfind("\n", 0, pos) + 1
    nl = text.find("\n", pos)
    if nl == -1:
        return start, len(text), len(text)
    end = nl - 1 if nl > start and text[nl - 1] == "\r" else nl
    return start, end, nl + 1


def _alone(text: str, start: int, end: int) -> bool:
    """The span [start, end) is the only non-blank content on its line(s)."""
    line_start, _, _ = _line_bounds(text, start)
    _, line_end, _ = _line_bounds(text, max(start, end - 1))
    return not text[line_start:start].strip(ASCII_WS) and not text[end:line_end].strip(ASCII_WS)


def _indent_of(text: str, pos: int) -> str:
    line_start, _, _ = _line_bounds(text, pos)
    prefix = text[line_start:pos]
    return prefix if not prefix.strip(ASCII_WS) else INDENT


def _insert_after(text: str, anchor_start: int, anchor_end: int, tag: str) -> str:
    """Put `tag` on its own line after the anchor's line (or right after it on a packed line)."""
    _, line_end, next_start = _line_bounds(text, max(anchor_start, anchor_end - 1))
    if text[anchor_end:line_end].strip(ASCII_WS):
        return text[:anchor_end] + tag + text[anchor_end:]
    indent = _indent_of(text, anchor_start)
    if next_start == line_end:  # the anchor is on the last line, which has no terminator
        return text[:line_end] + _eol(text) + indent + tag + text[line_end:]
    return text[:next_start] + indent + tag + _eol(text) + text[next_start:]


def _insert_before(text: str, anchor: _Tag, tag: str) -> str:
    line_start, _, _ = _line_bounds(text, anchor.start)
    if text[line_start : anchor.start].strip(ASCII_WS):
        return text[: anchor.start] + tag + text[anchor.start :]
    indent = text[line_start : anchor.start]
    return text[:line_start] + indent + tag + _eol(text) + text[line_start:]


def _after_head_open(text: str, head: _Head, tag: str) -> str:
    _, line_end, next_start = _line_bounds(text, head.start - 1)
    if text[head.start : line_end].strip(ASCII_WS) or next_start == line_end:
        return text[: head.start] + tag + text[head.start :]
    return text[:next_start] + INDENT + tag + _eol(text) + text[next_start:]


def _remove(text: str, tag: _Tag) -> str:
    if _alone(text, tag.start, tag.end):
        line_start, _, _ = _line_bounds(text, tag.start)
        _, _, next_start = _line_bounds(text, max(tag.start, tag.end - 1))
        return text[:line_start] + text[next_start:]
    return text[: tag.start] + text[tag.end :]


def _remove_all(text: str, doomed: list[_Tag]) -> str:
    for tag in sorted(doomed, key=lambda t: t.start, reverse=True):
        text = _remove(text, tag)
    return text


def _memhtml_metas(head: _Head) -> list[_Tag]:
    return [t for t in head.tags if t.kind == "meta" and t.meta_name in _ORDER]


def _memhtml_links(head: _Head) -> list[_Tag]:
    return [t for t in head.tags if t.kind == "link" and t.rel is not None]


def _insert_meta(text: str, head: _Head, name: str, line: str) -> str:
    """Insert at the canonical position: after the last meta that sorts at or before `name`."""
    rank = _ORDER[name]
    metas = _memhtml_metas(head)
    before = [t for t in metas if _ORDER[t.meta_name] <= rank]
    if before:
        anchor = before[-1]
        return _insert_after(text, anchor.start, anchor.end, line)
    if metas:
        return _insert_before(text, metas[0], line)
    others = [t for t in head.tags if t.kind == "meta"]
    if others:
        anchor = others[-1]
        if head.title is None or anchor.end > head.title[1]:
            return _insert_after(text, anchor.start, anchor.end, line)
    if head.title is not None:
        return _insert_after(text, *head.title, line)
    links = _memhtml_links(head)
    if links:
        return _insert_before(text, links[0], line)
    return _after_head_open(text, head, line)


def _checked_scalar(name: str, value: str) -> str:
    value = value.strip(ASCII_WS)
    if name in DATETIME_METAS:
        value = normalize_datetime(value) or value
    if name == "memhtml-superseded-by" and is_memory_path(value):
        value = "/" + value
    problem = scalar_problem(name, value)
    if problem is not None:
        raise InvalidMemoryError(problem.message, details={"violations": [problem.as_dict()]})
    return value


def set_meta(text: str, name: str, value: str | None) -> str:
    """Set (or with None remove) a scalar meta, changing exactly one line.

    An existing line keeps everything but its content attribute; a new line
    goes at the canonical META_ORDER position. Datetimes are normalized; a
    value the parser would refuse or drop raises InvalidMemoryError.
    """
    name = name.strip(ASCII_WS).lower()
    if name not in SCALAR_METAS:
        raise _refuse(f"{name} is not a scalar memhtml meta", "unknown-meta")
    head = _scan(text)
    existing = [t for t in head.tags if t.kind == "meta" and t.meta_name == name]
    if value is None:
        if name in REQUIRED_METAS:
            raise _refuse(f"{name} is required and cannot be removed", "missing-meta")
        return _remove_all(text, existing)
    value = _checked_scalar(name, value)
    if name == "memhtml-updated":
        value = _not_before_created(head, value)
    if not existing:
        return _insert_meta(text, head, name, meta_line(name, value))
    tag = existing[0]
    if tag.get("content") is not None and tag.content == value:
        return text
    new_attr = f'content="{escape_attr(value)}"'
    found = tag.attrs.get("content")
    if found is not None:
        return text[: found[1]] + new_attr + text[found[2] :]
    after_name = tag.attrs["name"][2]
    return text[:after_name] + " " + new_attr + text[after_name:]


def _not_before_created(head: _Head, updated: str) -> str:
    """`updated`, or the memory's `memhtml-created` when that is later: a memory is never
    updated before it was made (a sleep run stamps its run instant, the start of its
    day, on memories written later that day)."""
    from memhtml.contracts.dates import as_datetime

    created = [
        t.content for t in head.tags if t.kind == "meta" and t.meta_name == "memhtml-created"
    ]
    if not created:
        return updated
    try:
        if as_datetime(created[0]) > as_datetime(updated):
            return _checked_scalar("memhtml-updated", created[0])
    except ValueError:
        pass  # a created the parser refuses is reported by validation, not here
    return updated


def _same_value(name: str, a: str, b: str) -> bool:
    if name == "memhtml-entity":
        return split_entity(a) == split_entity(b) and split_entity(a) is not None
    return a == b


def add_meta(text: str, name: str, value: str) -> str:
    """Add one value of a repeatable meta (entity, tag, alias); a no-op when present."""
    name = name.strip(ASCII_WS).lower()
    if name not in REPEATABLE_METAS:
        raise _refuse(f"{name} is not a repeatable memhtml meta", "unknown-meta")
    value = value.strip(ASCII_WS)
    if name == "memhtml-entity":
        pair = split_entity(value)
        if pair is None:
            raise _refuse(f"memhtml-entity {value!r} is not type:name")
        value = f"{pair[0]}:{pair[1]}"
    if not value:
        raise _refuse(f"{name} needs a non-empty value")
    head = _scan(text)
    same = [t for t in head.tags if t.kind == "meta" and t.meta_name == name]
    if any(_same_value(name, t.content, value) for t in same):
        return text
    line = meta_line(name, value)
    if same:
        return _insert_after(text, same[-1].start, same[-1].end, line)
    return _insert_meta(text, head, name, line)


def remove_meta(text: str, name: str, value: str | None = None) -> str:
    """Remove the lines of a meta (only those with `value`, when given)."""
    name = name.strip(ASCII_WS).lower()
    if name in REQUIRED_METAS:
        raise _refuse(f"{name} is required and cannot be removed", "missing-meta")
    head = _scan(text)
    doomed = [
        t
        for t in head.tags
        if t.kind == "meta"
        and t.meta_name == name
        and (value is None or _same_value(name, t.content, value.strip(ASCII_WS)))
    ]
    return _remove_all(text, doomed)


def _checked_link(rel: str, path: str) -> tuple[str, str]:
    name = normalize_rel(rel)
    if name is None:
        raise _refuse(f"unknown link rel {rel!r}", "bad-link")
    clean = parse_link_href(path) if path.startswith("/") else path
    if clean is None or not is_memory_path(clean):
        raise _refuse(f"{path!r} is not a root-relative memory path", "bad-link")
    return name, clean


def _link_key(tag: _Tag) -> tuple[str, str]:
    return tag.rel or "", tag.get("href") or ""


def add_link(text: str, rel: str, path: str) -> str:
    """Add an authored edge line, sorted among the links after the metas; a no-op when present."""
    rel, path = _checked_link(rel, path)
    head = _scan(text)
    links = _memhtml_links(head)
    if any(t.rel == rel and parse_link_href(t.get("href")) == path for t in links):
        return text
    line = link_line(rel, path)
    key = (rel, "/" + path)
    later = [t for t in links if _link_key(t) > key]
    if later:
        return _insert_before(text, later[0], line)
    if links:
        return _insert_after(text, links[-1].start, links[-1].end, line)
    metas = [t for t in head.tags if t.kind == "meta"]
    if metas:
        return _insert_after(text, metas[-1].start, metas[-1].end, line)
    if head.title is not None:
        return _insert_after(text, *head.title, line)
    return _after_head_open(text, head, line)


def remove_link(text: str, rel: str, path: str) -> str:
    """Remove an authored edge line; a no-op when absent."""
    rel, path = _checked_link(rel, path)
    head = _scan(text)
    doomed = [
        t for t in _memhtml_links(head) if t.rel == rel and parse_link_href(t.get("href")) == path
    ]
    return _remove_all(text, doomed)


def head_items(text: str) -> list[HeadItem]:
    """Every meta and link of the head, in order, with the raw line each sits on.

    Raises InvalidMemoryError when the text has no `<head>`.
    """
    items: list[HeadItem] = []
    for tag in _scan(text).tags:
        line_start, _, _ = _line_bounds(text, tag.start)
        _, line_end, _ = _line_bounds(text, max(tag.start, tag.end - 1))
        line = text[line_start:line_end]
        if tag.kind == "link":
            rel = " ".join((tag.get("rel") or "").lower().split())
            href = tag.get("href") or ""
            items.append(HeadItem("link", f"{rel} {href}", href, line))
            continue
        name = tag.meta_name
        if name:
            key = f"{name}={tag.content}" if name in REPEATABLE_METAS else name
            items.append(HeadItem("meta", key, tag.content, line))
        elif tag.get("charset") is not None:
            charset = (tag.get("charset") or "").strip(ASCII_WS)
            items.append(HeadItem("meta", "charset", charset, line))
        else:
            other = tag.get("http-equiv") or tag.get("property") or ""
            items.append(HeadItem("meta", other.strip(ASCII_WS).lower(), tag.content, line))
    return items
