"""A memory file's fields and DOM, read in the worker, in the shapes the helper hands a script.

The original helper parses each file inside the sandbox with
`node-html-parser` and reads the closed vocabulary with selectors. Here the
file is parsed with the project's own libxml2 configuration (the options of
`memhtml.html.hashing.html_parser`) and the same selectors are answered in
one pass, so a 10k-memory census costs a C parse per file instead of a
JavaScript one. The parse runs in the worker process, under the script's
bounds (memhtml/codemode/worker.py loads this module by its path, so it
imports nothing of memhtml): hostile HTML can cost the script its memory or
its time, never the host. The values are the RAW ones the original's
selectors return (attribute values as written, untrimmed text): the guest
trims with JavaScript's own `trim()` and builds the objects, so a script sees
exactly the original's shapes.

    title       text of the first `title`
    memoryType  first non-empty `meta[name="memhtml-type"]` content
    status      first non-empty `meta[name="memhtml-status"]` content
    claim       text of the first `article mark` (a descendant selector)
    tags        every non-empty `meta[name="memhtml-tag"]` content
    entities    every non-empty `meta[name="memhtml-entity"]` content
    links       (rel, href) of every `link[rel^="memhtml-"]`
    facets      (dt text, dd text) of every `article dl dt` whose next element is a `dd`
    citations   text of every `article cite`
    eventAt     `datetime` of the first `article time[datetime]`, else None

`dom_tree` serializes a parsed file for the guest's DOM escape hatch
(`memory.document`): an element is `[tag, {attributes}, ...children]`, a
text node a string.
"""

from __future__ import annotations

from functools import cache

from lxml import etree

TYPE_CHECKING = False  # `typing` is not worth its import in the worker
if TYPE_CHECKING:
    from typing import Any, Final

    Fields = list[Any]

_WANTED: Final = ("title", "meta", "link", "mark", "dt", "cite", "time")


@cache
def _parser() -> etree.HTMLParser:
    # memhtml.html.hashing.html_parser's options, spelled out: the worker loads this
    # module by its path, without the memhtml package (tests/codemode/test_bounds.py
    # holds the two parsers equal).
    return etree.HTMLParser(encoding="utf-8", no_network=True, remove_comments=True)


def _out_of_memory(log: Any) -> bool:
    no_memory = etree.ErrorTypes.ERR_NO_MEMORY
    return any(entry.type == no_memory for entry in log)


def parse(data: bytes | str) -> etree._Element | None:
    """The file's element tree (None for an empty or unparseable file).

    MemoryError when libxml2 ran out of memory: its parser then stops where it
    was, and a partial tree must not pass for the document.
    """
    source = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if not source.strip():
        return None
    parser = _parser()
    try:
        root = etree.fromstring(source, parser=parser)
    except etree.LxmlError as exc:
        if _out_of_memory(getattr(exc, "error_log", parser.error_log)):
            raise MemoryError("the HTML parser ran out of memory") from None
        return None
    except ValueError:
        return None
    if _out_of_memory(parser.error_log):
        raise MemoryError("the HTML parser ran out of memory")
    return root


def _text(el: etree._Element) -> str:
    """The element's text as node-html-parser's `.text` reads it: a `<br>` is a line break
    (libxml2's text serialization drops it)."""
    if el.tag == "br":
        return "\n"
    if next(el.iter("br"), None) is None:
        return str(etree.tostring(el, method="text", encoding="unicode", with_tail=False))
    parts: list[str] = []
    for event, node in etree.iterwalk(el, events=("start", "end")):
        if event == "start":
            if node.tag == "br":
                parts.append("\n")
            elif isinstance(node.tag, str) and node.text:
                parts.append(node.text)
        elif node is not el and node.tail:
            parts.append(node.tail)
    return "".join(parts)


def _under(el: etree._Element, tag: str) -> bool:
    return next(el.iterancestors(tag), None) is not None


def _under_dl_in_article(el: etree._Element) -> bool:
    # `article dl dt`: some dl above with an article above it, which holds exactly when
    # the nearest dl has an article above it (any farther dl is above the nearest one).
    dl = next(el.iterancestors("dl"), None)
    return dl is not None and _under(dl, "article")


def _next_element(el: etree._Element) -> etree._Element | None:
    nxt = el.getnext()
    while nxt is not None and not isinstance(nxt.tag, str):
        nxt = nxt.getnext()
    return nxt


def memory_fields(data: bytes) -> Fields:
    """`[title, memoryType, status, claim, tags, entities, links, facets, citations, eventAt]`.

    `links` and `facets` are flat `[a1, b1, a2, b2, ...]` lists; a missing
    title or claim is None (the guest's `?? ""`).
    """
    title: str | None = None
    claim: str | None = None
    event_at: str | None = None
    kind = status = None
    tags: list[str] = []
    entities: list[str] = []
    links: list[str] = []
    facets: list[str] = []
    cites: list[str] = []
    root = parse(data)
    if root is not None:
        for el in root.iter(*_WANTED):
            tag = el.tag
            if tag == "meta":
                name = el.get("name")
                value = el.get("content") or ""
                if not value or name is None or not name.startswith("memhtml-"):
                    continue
                if name == "memhtml-tag":
                    tags.append(value)
                elif name == "memhtml-entity":
                    entities.append(value)
                elif name == "memhtml-type" and kind is None:
                    kind = value
                elif name == "memhtml-status" and status is None:
                    status = value
            elif tag == "link":
                rel = el.get("rel")
                if rel is not None and rel.startswith("memhtml-"):
                    links += (rel, el.get("href") or "")
            elif tag == "title":
                if title is None:
                    title = _text(el)
            elif tag == "mark":
                if claim is None and _under(el, "article"):
                    claim = _text(el)
            elif tag == "dt":
                dd = _next_element(el)
                if dd is not None and dd.tag == "dd" and _under_dl_in_article(el):
                    facets += (_text(el), _text(dd))
            elif tag == "cite":
                if _under(el, "article"):
                    cites.append(_text(el))
            elif tag == "time" and event_at is None:
                stamp = el.get("datetime")
                if stamp is not None and _under(el, "article"):
                    event_at = stamp
    return [title, kind, status, claim, tags, entities, links, facets, cites, event_at]


def dom_tree(data: bytes | str) -> list[Any]:
    """The whole document as nested lists under a root `[None, {}, ...]`."""
    root = parse(data)
    return [None, {}] if root is None else [None, {}, _node(root)]


def _node(el: etree._Element) -> list[Any]:
    out: list[Any] = [el.tag, dict(el.attrib)]
    if el.text:
        out.append(el.text)
    for child in el:
        if isinstance(child.tag, str):
            out.append(_node(child))
        if child.tail:
            out.append(child.tail)
    return out
