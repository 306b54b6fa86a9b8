"""The article's closed vocabulary as three allow-lists: elements, attributes, URLs.

A memory file is data: opened in a browser, or embedded by a tool that shows
`read`'s `article_html`, nothing in it may execute, load or navigate anywhere
but an ordinary link. So the format says what IS allowed, not what is not:

* an element is in the vocabulary, or on a short list of harmless HTML
  elements that are tolerated with a warning; anything else (script, style,
  every element that loads or embeds, forms, SVG and MathML, the raw-text
  elements libxml2 and browsers read differently, custom and unknown names)
  is refused;
* an attribute is one of a few global ones or belongs to its element;
* a URL (`href`, `cite`) is http, https, mailto, root-relative or a fragment,
  decided after the value is HTML-decoded and stripped the way a browser's URL
  parser strips it.

These tables are the single source for both the validator and the
differential test that compares them against an HTML5 parser (html5lib).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

from memhtml.contracts.vocab import LINK_REL_PREFIX

# The vocabulary (docs/format.md "Body vocabulary"); div and span only inside a figure.
BODY_ELEMENTS: Final[frozenset[str]] = frozenset(
    {
        "article", "p", "mark", "time", "dl", "dt", "dd", "data", "cite", "q", "dfn",
        "code", "details", "summary", "aside", "section", "table", "caption", "colgroup",
        "col", "thead", "tbody", "tfoot", "tr", "th", "td", "ul", "ol", "li", "a", "strong",
        "em", "abbr", "pre", "kbd", "samp", "var", "figure", "figcaption", "address",
    }
)  # fmt: skip
FIGURE_ONLY_ELEMENTS: Final[frozenset[str]] = frozenset({"div", "span"})
# The document's own elements, and what the head may hold (its direct children only).
DOCUMENT_ELEMENTS: Final[frozenset[str]] = frozenset({"html", "head", "body"})
HEAD_ELEMENTS: Final[frozenset[str]] = frozenset({"title", "meta", "link"})
# Outside the vocabulary but harmless: ordinary HTML5 parsing (no raw text, no
# foreign content, no form or replaced element), and nothing they do loads,
# runs or navigates. Pasted prose brings them; they cost a warning, not a write.
TOLERATED_ELEMENTS: Final[frozenset[str]] = frozenset(
    {
        "h1", "h2", "h3", "h4", "h5", "h6", "hgroup", "header", "footer", "main", "nav",
        "search", "blockquote", "hr", "br", "wbr", "b", "i", "u", "s", "small", "sub",
        "sup", "ins", "del", "bdi", "bdo", "ruby", "rt", "rp", "div", "span",
    }
)  # fmt: skip
# Elements whose content a browser tokenizes as raw text while libxml2 may
# read markup in it (or the reverse): a payload hides in an attribute for one
# parser and is a tag for the other. Never allowed in the body; the head's one
# <title> is the format's own.
RAW_TEXT_ELEMENTS: Final[frozenset[str]] = frozenset(
    {
        "script", "style", "noscript", "xmp", "plaintext", "iframe", "noembed",
        "noframes", "textarea", "title",
    }
)  # fmt: skip
# HTML5 honours "/>" only on these; libxml2 honours it on any element.
VOID_ELEMENTS: Final[frozenset[str]] = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr", "basefont", "bgsound", "frame", "keygen", "param",
    }
)  # fmt: skip
ALLOWED_ELEMENTS: Final[frozenset[str]] = (
    BODY_ELEMENTS | FIGURE_ONLY_ELEMENTS | DOCUMENT_ELEMENTS | HEAD_ELEMENTS | TOLERATED_ELEMENTS
)

GLOBAL_ATTRIBUTES: Final[frozenset[str]] = frozenset({"id", "lang", "dir", "title"})
ELEMENT_ATTRIBUTES: Final[dict[str, frozenset[str]]] = {
    "html": frozenset({"xmlns"}),
    "meta": frozenset({"name", "content", "charset", "http-equiv"}),
    "link": frozenset({"rel", "href"}),
    "time": frozenset({"datetime"}),
    "data": frozenset({"value"}),
    "q": frozenset({"cite"}),
    "blockquote": frozenset({"cite"}),
    "ins": frozenset({"cite", "datetime"}),
    "del": frozenset({"cite", "datetime"}),
    "a": frozenset({"href"}),
    "code": frozenset({"data-lang"}),
    "td": frozenset({"colspan", "rowspan", "headers"}),
    "th": frozenset({"colspan", "rowspan", "headers", "scope", "abbr"}),
    "col": frozenset({"span"}),
    "colgroup": frozenset({"span"}),
    "ol": frozenset({"start", "reversed", "type"}),
    "li": frozenset({"value"}),
    "details": frozenset({"open"}),
}
# Attributes holding a URL a reader may follow. A head <link href> is stricter
# still (a root-relative memory path, `bad-link`) and is checked there.
URL_ATTRIBUTES: Final[frozenset[str]] = frozenset({"href", "cite"})
# The attributes whose value (not only whose name) a rule reads.
VALUED_ATTRIBUTES: Final[frozenset[str]] = URL_ATTRIBUTES | {"http-equiv", "rel"}


def _quiet_attributes(tag: str) -> frozenset[str]:
    allowed = GLOBAL_ATTRIBUTES | ELEMENT_ATTRIBUTES.get(tag, frozenset())
    # A head <link href> is checked by the head's reader, not as a URL here.
    valued = {"rel"} if tag == "link" else URL_ATTRIBUTES
    return allowed - valued - {"http-equiv"}


# Per allowed element, the attributes `attribute_problems` never refuses on it,
# whatever their values: a start tag with only these draws no finding at all.
QUIET_ATTRIBUTES: Final[dict[str, frozenset[str]]] = {
    tag: _quiet_attributes(tag) for tag in sorted(ALLOWED_ELEMENTS)
}
URL_SCHEMES: Final[frozenset[str]] = frozenset({"http", "https", "mailto"})
# The one http-equiv that only restates what the file is.
HTTP_EQUIV_VALUES: Final[frozenset[str]] = frozenset({"content-type"})

# What a browser's URL parser strips before it reads a scheme: C0 controls and
# space at either end, and tab, LF and CR anywhere.
_URL_EDGE: Final = "".join(chr(c) for c in range(0x21))
_URL_TAB_NEWLINE: Final = str.maketrans("", "", "\t\n\r")
_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "")


class Finding(NamedTuple):
    """One allow-list refusal: the violation code, its message and its dedup key."""

    code: str
    message: str
    key: str


def tag_problems(tag: str, attrs: Iterable[tuple[str, str]]) -> Iterator[Finding]:
    """Everything the allow-lists refuse about one start tag (name lowercased).

    Placement (a <title> outside the head, a <div> outside a figure) is not
    decided here but on the parsed tree.
    """
    if tag not in ALLOWED_ELEMENTS:
        if tag in RAW_TEXT_ELEMENTS:
            why = "browsers and libxml2 read its content differently"
        else:
            why = "it is outside the element allow-list"
        yield Finding("forbidden-element", f"<{tag}> is not allowed: {why}", tag)
    yield from attribute_problems(tag, attrs)


def attribute_problems(tag: str, attrs: Iterable[tuple[str, str]]) -> Iterator[Finding]:
    """Every attribute of one element that the allow-lists refuse, and refused URLs."""
    own = ELEMENT_ATTRIBUTES.get(tag, frozenset())
    for name, value in attrs:
        if name not in GLOBAL_ATTRIBUTES and name not in own:
            yield Finding(
                "forbidden-attribute",
                f"the {name!r} attribute is not allowed (first on <{tag}>)",
                name,
            )
        elif name in URL_ATTRIBUTES and tag != "link":
            why = url_problem(value)
            if why is not None:
                yield Finding(
                    "forbidden-url", f"<{tag} {name}={value!r}>: {why}", f"{tag} {name} {value}"
                )
        elif name == "http-equiv":
            kind = value.strip(_URL_EDGE).translate(ASCII_LOWER)
            if kind not in HTTP_EQUIV_VALUES:
                yield Finding(
                    "forbidden-attribute",
                    f"http-equiv={value!r} is not allowed (only content-type)",
                    "http-equiv",
                )
        elif tag == "link" and name == "rel":
            tokens = value.translate(ASCII_LOWER).split()
            foreign = " ".join(t for t in tokens if not t.startswith(LINK_REL_PREFIX))
            if foreign:
                yield Finding(
                    "forbidden-element",
                    f"<link rel={foreign!r}> is not allowed: only memhtml- links"
                    " (a link can load a stylesheet, an icon or a script)",
                    "link",
                )


def url_problem(value: str) -> str | None:
    """Why a URL attribute's (already HTML-decoded) value is refused, or None.

    Allowed: http, https and mailto URLs, a root-relative path (`/x`, not the
    protocol-relative `//host` nor `/\\host`, which browsers read as `//host`)
    and a fragment (`#x`). The value is first stripped as a browser's URL
    parser does, so ` java\\tscript:` is read as `javascript:`.
    """
    url = value.strip(_URL_EDGE).translate(_URL_TAB_NEWLINE)
    if not url:
        return "an empty URL is not allowed"
    if url[0] == "#":
        return None
    if url[0] in "/\\":
        if url[0] == "\\" or url[1:2] in ("/", "\\"):
            return "a protocol-relative URL (//host) is not allowed"
        return None
    match = _SCHEME.match(url)
    if match is None:
        return "only http, https, mailto, /root-relative or #fragment URLs are allowed"
    scheme = match.group(1).translate(ASCII_LOWER)
    if scheme not in URL_SCHEMES:
        return f"the {scheme}: scheme is not allowed (only http, https and mailto)"
    return None
