"""The tags of an HTML source, as a browser's HTML5 tokenizer reads them.

libxml2 (2.14) tokenizes like HTML5 but builds its tree its own way, and the
differences hide markup from a check of the tree alone: it stops at the first
`</html>` end tag and drops everything after it, and it drops a second
`<body>` or `<html>` start tag whose attributes a browser copies onto the
page's own. So the allow-lists are applied to every start tag of the source,
wherever a tree builder would put it, and the tree is only asked about
placement. (`scan` leaves out the start tags that cannot draw a finding: an
allowed name with only attributes `allowlist.QUIET_ATTRIBUTES` lists for it.)

The scan follows the WHATWG tokenizer where it decides what is a tag:
comments (including `<!-->`, `<!--->` and `--!>`), doctypes, bogus comments
(`<?…>`, `<!…>`, `<![CDATA[…]]>` outside SVG), quoted and unquoted attribute
values, `/` between attributes, and the raw text after `<script>`, `<style>`,
`<title>`, `<textarea>` and the like, in which a tag is not a tag. Once the
file holds one of those raw-text elements (other than the head's title) it is
refused anyway, so the scan does not model every state a browser's tree
builder could put the tokenizer in afterwards.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from html import entities
from typing import Final, NamedTuple

from memhtml.html.allowlist import (
    ALLOWED_ELEMENTS,
    ASCII_LOWER,
    QUIET_ATTRIBUTES,
    RAW_TEXT_ELEMENTS,
)

_TAG_NAME: Final = re.compile(r"[^\t\n\f\r />]*")
_BEFORE_ATTRIBUTE: Final = re.compile(r"[\t\n\f\r /]*")
_ATTRIBUTE_NAME: Final = re.compile(r"[^\t\n\f\r />][^\t\n\f\r />=]*")
_SPACE: Final = re.compile(r"[\t\n\f\r ]*")
_UNQUOTED: Final = re.compile(r"[^\t\n\f\r >]*")
_NOT_SPACE: Final = re.compile(r"[^\t\n\f\r ]")
_COMMENT_END: Final = re.compile(r"--!?>")
# The shape nearly every real tag has (ASCII names, spaced attributes, values
# quoted or plainly unquoted) is read in one match (groups 1-4), and so is a
# closed comment (group 5); any other place where markup begins (group 6: "<"
# and one of ! ? / or a letter) goes through the state-by-state reading below.
# Any other "<" is text.
_UNQUOTED_VALUE: Final = r"[^\t\n\f\r \"'=<>`/]+(?=[\t\n\f\r >])"  # "/" would belong to it
_ATTRIBUTES: Final = (
    r"(?:[\t\n\f\r ]+[A-Za-z][A-Za-z0-9_.:-]*"
    rf"(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:\"[^\"]*\"|'[^']*'|{_UNQUOTED_VALUE}))?)*"
)
_NEXT_TOKEN: Final = (
    rf"<(?:(/?)([A-Za-z][A-Za-z0-9-]*)({_ATTRIBUTES})[\t\n\f\r ]*(/?)>"
    r"|(!--(?:>|->|(?s:.*?)--!?>))"  # a closed comment, including <!--> and <!--->
    r"|([!?/A-Za-z]))"
)
_FAST_ATTRIBUTE: Final = (
    r"([A-Za-z][A-Za-z0-9_.:-]*)"
    r"(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:\"([^\"]*)\"|'([^']*)'|([^\t\n\f\r \"'=<>`/]+)))?"
)
# After these start tags a browser reads raw text up to the matching end tag
# (after <plaintext>, to the end of the input).
_RAW_TEXT_END: Final[dict[str, str]] = {
    name: rf"(?i:</{name}[\t\n\f\r />])"
    for name in (
        "script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea",
        "title",
    )
}  # fmt: skip
_RAW_TEXT_NAMES: Final = frozenset(_RAW_TEXT_END) | {"plaintext"}
_CHARREF: Final = r"&(?:#([0-9]+);?|#[xX]([0-9a-fA-F]+);?|([A-Za-z0-9]{1,32})(;?))"


@functools.cache
def _regex(source: str) -> re.Pattern[str]:
    """`source` compiled on its first use: most imports parse little or nothing,
    and compiling the scan's large expressions is a good part of the import."""
    return re.compile(source)


_MAX_CODE_POINT: Final = 0x10FFFF
_NAMED_REFERENCES: Final[dict[str, str]] = entities.html5

_Trie = dict[str, "_Trie"]


# Branches are tried in order: the letters memory markup starts its tags with
# most often come first (p, mark and meta, li, time, code, name, em...).
_FREQUENT: Final = "pmltcnedsahbq"


def _alternation(words: Iterable[str]) -> str:
    """A regular expression matching exactly `words`, as a trie (one branch per letter)."""
    trie: _Trie = {}
    for word in words:
        node = trie
        for letter in word:
            node = node.setdefault(letter, {})
        node[""] = {}

    def branch(node: _Trie) -> str:
        keys = sorted(node, key=lambda key: (_FREQUENT.find(key) % 99, key))  # missing: -1
        arms = [re.escape(key) + branch(node[key]) for key in keys if key]
        if not arms:
            return ""
        if len(arms) == 1 and "" not in node:
            return arms[0]
        group = "(?:" + "|".join(arms) + ")"
        return group + "?" if "" in node else group

    return branch(trie)


def _quiet_tags() -> str:
    """Start tags no check needs to see, as alternatives of a regular expression.

    Tags of names the allow-list takes, other than a raw-text element and the
    article whose place the parse needs, with no attributes or with up to 16
    double-quoted ones that draw no finding on that element whatever their
    values (a `<meta name content>`, a `<time datetime>`, `<html lang>`).
    """
    names = ALLOWED_ELEMENTS - RAW_TEXT_ELEMENTS - {"article"}
    everywhere = frozenset.intersection(*(QUIET_ATTRIBUTES[name] for name in names))

    def arm(group: Iterable[str], quiet: Iterable[str]) -> str:
        attribute = rf"[\t\n\f\r ]++{_alternation(quiet)}=\"[^\"]*+\""
        return rf"(?i:{_alternation(group)})(?:{attribute}){{0,16}}+[\t\n\f\r ]*+>"

    # Arms are tried in order: the rendered head's metas and the <time> of its
    # first paragraph, then any name with the attributes quiet everywhere (the
    # global ones) or none, then the elements whose own quiet attributes are
    # common in memories. (A tag of any other shape is read token by token;
    # each arm costs compile time at import.)
    by_attributes: dict[frozenset[str], list[str]] = {}
    for name in ("meta", "time", "html", "code", "data"):
        by_attributes.setdefault(QUIET_ATTRIBUTES[name], []).append(name)
    arms = [arm(group, quiet) for quiet, group in by_attributes.items()]
    arms.insert(2, arm(names, everywhere))
    return "|".join(arms)


@functools.cache
def _step() -> str:
    """What the scan skips in one match, then the next token as _NEXT_TOKEN reads it.

    Skipped: text (and a "<" that starts no markup), closed comments, doctypes
    and other bogus comments, a plain `<title>` with its raw text (which
    `_skip_raw_text` would skip), the quiet start tags, and end tags other
    than `</article>` and `</html>` (no check reads an end tag's attributes).
    The alternatives never match at the same place; the common ones come first.
    """
    plain_run = (
        r"(?:[^<]++"
        r"|<(?=[A-Za-z])(?!(?i:article|title)[\t\n\f\r />])(?:" + _quiet_tags() + ")"
        r"|</(?!(?i:article|html)[\t\n\f\r />])[A-Za-z][A-Za-z0-9-]*+[\t\n\f\r ]*+>"
        r"|<(?i:title)[\t\n\f\r ]*+>(?:[^<]++|<(?!/(?i:title)[\t\n\f\r />]))*+"
        r"|<!--(?:>|->|(?s:.*?)--!?>)|<!(?!--)[^>]*+>|<\?[^>]*+>"
        r"|<(?![!?/A-Za-z]))*+"
    )
    return plain_run + "(?:" + _NEXT_TOKEN + ")?"


# The tags a rendered file has besides the quiet ones, read once per process.
_TAG_CACHE: Final[dict[str, tuple[str, tuple[tuple[str, str], ...], bool, bool]]] = {}
_TAG_CACHE_SIZE: Final = 256


class Tag(NamedTuple):
    """One start or end tag token."""

    name: str  # ASCII-lowercased, NUL read as U+FFFD
    attrs: tuple[tuple[str, str], ...]  # names lowercased, values decoded; first of a name
    start: int  # offset of its "<"
    end: int  # offset after its ">" (the text's length when the input ends inside it)
    closing: bool  # an end tag
    complete: bool  # False when the input ends inside the tag (a browser drops it)
    self_closing: bool  # written `<x/>`; HTML5 ignores the "/" except on void elements


@dataclass(frozen=True)
class Scan:
    """The tag tokens of a source, and whether a browser renders anything after `</html>`."""

    tags: tuple[Tag, ...]
    after_html: bool


def scan(text: str, *, every_tag: bool = False) -> Scan:
    """The tag tokens of `text`, in order; linear in its length.

    Unless `every_tag`, runs of text and of tokens no check needs to see are
    skipped in one regular-expression match (see `_step`): comments and
    doctypes, end tags other than `</article>` and `</html>`, a plain
    `<title>` with its raw text, and the start tags of allowed names other
    than article with no attributes or only ones that draw no finding on
    them (`<p>`, `<meta name content>`). That keeps a megabyte of markup well
    under a second, and a rendered file down to a few tokens.
    """
    tags: list[Tag] = []
    n = len(text)
    pos = 0
    html_closed = False  # an </html> end tag has been read
    after_html = False  # ...and a start tag or text follows it
    step = None if every_tag else _regex(_step())
    while pos < n:
        found: re.Match[str] | None
        if step is None or html_closed:
            if html_closed and not after_html and _NOT_SPACE.search(text, pos) is None:
                break  # only whitespace follows </html>
            found = _regex(_NEXT_TOKEN).search(text, pos)
            lt = n if found is None else found.start()
            if html_closed and not after_html:
                after_html = _NOT_SPACE.search(text, pos, lt) is not None
        else:
            found = step.match(text, pos)
            assert found is not None  # the pattern matches the empty string
            # Each of the token's alternatives opens a group right after its "<".
            after_lt = max(found.start(1), found.start(5), found.start(6))
            if after_lt > 0:
                lt = after_lt - 1
            elif found.end() < n:  # not expected: the run stops only at a token
                found = _regex(_NEXT_TOKEN).search(text, found.end())
                lt = n if found is None else found.start()
            else:
                break
        if found is None:
            break
        tag: Tag | None
        if found.group(2) is not None:
            tag = _fast_tag(found, text, lt)
        elif found.group(5) is not None:
            tag, pos = None, found.end()
        elif (mark := found.group(6)) == "!":
            tag, pos = None, _markup_declaration(text, lt)
        elif mark == "?":
            tag, pos = None, _bogus_comment(text, lt + 1)
        elif mark == "/":
            tag, pos = _end_tag(text, lt)
        else:  # an ASCII letter
            tag = _tag(text, lt, closing=False)
        if tag is None:
            continue
        tags.append(tag)
        if tag.closing:
            html_closed = html_closed or tag.name == "html"
            pos = tag.end
        else:
            after_html = after_html or html_closed
            pos = _skip_raw_text(text, tag) if tag.name in _RAW_TEXT_NAMES else tag.end
    return Scan(tuple(tags), after_html)


def _fast_tag(match: re.Match[str], text: str, lt: int) -> Tag:
    """A tag in the plain shape most tags have, read by one regular expression."""
    source = text[lt : match.end()]
    known = _TAG_CACHE.get(source)
    if known is None:
        known = _read_fast_tag(match)
        if len(_TAG_CACHE) >= _TAG_CACHE_SIZE:
            _TAG_CACHE.clear()
        _TAG_CACHE[source] = known
    name, attrs, closes, self_closing = known
    return Tag(name, attrs, lt, match.end(), closes, True, self_closing)


def _read_fast_tag(
    match: re.Match[str],
) -> tuple[str, tuple[tuple[str, str], ...], bool, bool]:
    closing, raw_name, raw_attrs, slash = match.group(1, 2, 3, 4)
    closes = bool(closing)
    if not raw_attrs or closes:  # attributes of an end tag never reach the page
        return raw_name.lower(), (), closes, bool(slash) and not closes
    attrs: dict[str, str] = {}
    for attr in _regex(_FAST_ATTRIBUTE).finditer(raw_attrs):
        key = attr.group(1).lower()
        if key not in attrs:  # HTML5 keeps the first of a repeated attribute
            double, single, unquoted = attr.group(2, 3, 4)
            value = (
                double if double is not None else single if single is not None else unquoted or ""
            )
            attrs[key] = decode_attribute(value)
    return raw_name.lower(), tuple(attrs.items()), False, bool(slash)


def _markup_declaration(text: str, lt: int) -> int:
    """Past a comment, a doctype or a bogus comment starting at `<!`."""
    if text.startswith("<!--", lt):
        body = lt + 4
        if text.startswith(">", body):
            return body + 1  # <!-->
        if text.startswith("->", body):
            return body + 2  # <!--->
        end = _COMMENT_END.search(text, body)
        return len(text) if end is None else end.end()
    # A doctype, and outside SVG and MathML also <![CDATA[, ends at the first ">".
    return _bogus_comment(text, lt + 2)


def _bogus_comment(text: str, pos: int) -> int:
    gt = text.find(">", pos)
    return len(text) if gt < 0 else gt + 1


def _end_tag(text: str, lt: int) -> tuple[Tag | None, int]:
    """What `</` at `lt` starts: an end tag, nothing, or a bogus comment."""
    first = text[lt + 2 : lt + 3]
    if first.isascii() and first.isalpha():
        tag = _tag(text, lt, closing=True)
        return tag, tag.end
    if first == ">":
        return None, lt + 3  # "</>" is nothing
    if not first:
        return None, len(text)  # "</" at the end is text
    return None, _bogus_comment(text, lt + 2)


def _tag(text: str, lt: int, *, closing: bool) -> Tag:
    name_at = lt + (2 if closing else 1)
    match = _TAG_NAME.match(text, name_at)
    assert match is not None  # the pattern matches the empty string
    name = _name(match.group())
    attrs, end, complete, self_closing = _attributes(text, match.end())
    if closing:  # an end tag's attributes never reach the page
        return Tag(name, (), lt, end, True, complete, False)
    return Tag(name, attrs, lt, end, False, complete, self_closing)


def read_tag(text: str, lt: int) -> Tag:
    """The tag that starts at `text[lt]` (a "<" followed by a letter or "/" and a letter)."""
    closing = text.startswith("</", lt)
    return _tag(text, lt, closing=closing)


def _name(raw: str) -> str:
    return raw.translate(ASCII_LOWER).replace("\x00", "\ufffd")


def _attributes(text: str, pos: int) -> tuple[tuple[tuple[str, str], ...], int, bool, bool]:
    """The attributes from `pos` to the tag's ">": (attrs, end, complete, self-closing)."""
    n = len(text)
    attrs: dict[str, str] = {}
    while True:
        before = pos
        pos = _match_end(_BEFORE_ATTRIBUTE, text, pos)
        if pos >= n:
            return tuple(attrs.items()), n, False, False
        if text[pos] == ">":
            # "/>" only when the "/" was read between attributes, not in a value.
            closes = pos > before and text[pos - 1] == "/"
            return tuple(attrs.items()), pos + 1, True, closes
        name_match = _ATTRIBUTE_NAME.match(text, pos)
        assert name_match is not None  # text[pos] is none of the excluded characters
        name = _name(name_match.group())
        pos = _match_end(_SPACE, text, name_match.end())
        value = ""
        if text.startswith("=", pos):
            pos = _match_end(_SPACE, text, pos + 1)
            quote = text[pos : pos + 1]
            if quote in ('"', "'"):
                close = text.find(quote, pos + 1)
                if close < 0:
                    attrs.setdefault(name, decode_attribute(text[pos + 1 :]))
                    return tuple(attrs.items()), n, False, False
                value = text[pos + 1 : close]
                pos = close + 1
            else:
                pos_end = _match_end(_UNQUOTED, text, pos)
                value, pos = text[pos:pos_end], pos_end
        if name not in attrs:  # HTML5 keeps the first of a repeated attribute
            attrs[name] = decode_attribute(value)


def _match_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    match = pattern.match(text, pos)
    return pos if match is None else match.end()


def _skip_raw_text(text: str, tag: Tag) -> int:
    """Where tokenizing resumes after a start tag: past its raw text, if it has any."""
    if tag.name == "plaintext":
        return len(text)
    end = _RAW_TEXT_END.get(tag.name)
    if end is None or not tag.complete:
        return tag.end
    found = _regex(end).search(text, tag.end)
    return len(text) if found is None else found.start()


def decode_attribute(value: str) -> str:
    """An attribute value with its character references decoded as HTML5 does.

    Total (no exception for any input, unlike `html.unescape` on a reference of
    thousands of digits). In an attribute a named reference without `;`
    followed by `=` or a letter or digit stays as written (`&copy=2`).
    """
    if "&" not in value:
        return value.replace("\x00", "\ufffd")
    return _regex(_CHARREF).sub(_reference, value).replace("\x00", "\ufffd")


def _reference(match: re.Match[str]) -> str:
    decimal, hexadecimal, name, semicolon = match.groups()
    if decimal is not None:
        return _code_point(decimal, 10)
    if hexadecimal is not None:
        return _code_point(hexadecimal, 16)
    if semicolon and name + ";" in _NAMED_REFERENCES:
        return _NAMED_REFERENCES[name + ";"]
    if name in _NAMED_REFERENCES:  # a legacy reference written without ";"
        following = match.string[match.end(3) : match.end(3) + 1]
        if following == "=" or (following.isascii() and following.isalnum()):
            return match.group()
        return _NAMED_REFERENCES[name] + semicolon
    return match.group()


def _code_point(digits: str, base: int) -> str:
    significant = digits.lstrip("0")
    if len(significant) > 8:  # far beyond U+10FFFF; int() of it could be refused
        return "\ufffd"
    number = int(significant or "0", base)
    if number == 0 or number > _MAX_CODE_POINT or 0xD800 <= number <= 0xDFFF:
        return "\ufffd"
    if 0x80 <= number <= 0x9F:  # the windows-1252 remapping
        return html.unescape(f"&#{number};")
    return chr(number)


__all__ = ["Scan", "Tag", "decode_attribute", "read_tag", "scan"]
