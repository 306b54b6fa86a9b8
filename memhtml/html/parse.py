"""`parse_memory`: bytes or text in, a MemoryDocument out, for any input at all.

The parse is total: a file that is too large, not UTF-8, not HTML, or plain
garbage still yields a document, whose `violations` say why it is not a
memory. Nothing here raises.
"""

from __future__ import annotations

import html
import re
from typing import Final

from lxml import etree

from memhtml.contracts.vocab import MAX_MEMORY_BYTES
from memhtml.html.document import Issue, MemoryDocument
from memhtml.html.extract import ArticleFields, read_article
from memhtml.html.hashing import hash_text, html_parser
from memhtml.html.tokens import Scan, scan
from memhtml.html.validate import (
    HeadFields,
    Issues,
    check_articles,
    check_elements,
    check_mark,
    check_markup,
    read_head,
)

_BOM: Final = "\ufeff"
# Far above any real tag (a memory's tags carry one or two), far below where
# libxml2's quadratic duplicate-attribute check costs time.
MAX_ATTRIBUTES: Final = 256
_HTML_START: Final = re.compile(r"<(?:!doctype\s+html|html)[\s>/]", re.IGNORECASE)


def parse_memory(data: bytes | str, *, max_bytes: int = MAX_MEMORY_BYTES) -> MemoryDocument:
    """Parse and validate one memory file; never raises.

    Every violation and warning is collected in one pass. An input larger than
    `max_bytes` is refused (`too-large`) before any parsing.
    """
    try:
        return _parse(data, max_bytes)
    except Exception as exc:  # the last line of totality: report, never raise
        return MemoryDocument(
            violations=(Issue("not-html", f"the parser failed: {type(exc).__name__}"),)
        )


def _parse(data: bytes | str, max_bytes: int) -> MemoryDocument:
    issues = Issues()
    text = _decode(data, max_bytes, issues)
    if text is None:
        return MemoryDocument(violations=tuple(issues.violations))
    if not _HTML_START.search(text):
        issues.violation("not-html", "no <!doctype html> or <html> element")

    tokens = scan(text)
    checked = check_markup(tokens, issues)
    widest = max((len(tag.attrs) for tag in tokens.tags), default=0)
    if widest > MAX_ATTRIBUTES:
        # libxml2's duplicate check is quadratic in one element's attributes.
        issues.violation(
            "too-many-attributes", f"a tag has {widest} attributes; the limit is {MAX_ATTRIBUTES}"
        )
        return MemoryDocument(violations=tuple(issues.violations))
    root = _parse_tree(text, issues)
    head = read_head(root, issues)
    article = check_articles(root, issues)
    check_elements(root, article, issues, checked=checked)
    gist = check_mark(root, article, issues)
    fields = read_article(article, issues) if article is not None else ArticleFields()
    content_hash = hash_text(fields.body_text)
    advisory = head.metas.get("memhtml-content-hash")
    if advisory is not None and advisory != content_hash:
        issues.warning(
            "content-hash-mismatch",
            f"memhtml-content-hash {advisory} does not match the article ({content_hash})",
        )
    return _document(
        head,
        fields,
        gist=gist,
        article_html=_article_source(text, article, tokens),
        content_hash=content_hash,
        issues=issues,
    )


def _decode(data: bytes | str, max_bytes: int, issues: Issues) -> str | None:
    """The input as text, or None when it must not be parsed at all."""
    if isinstance(data, str):
        # A character is at least one byte, so this refuses huge text without encoding it.
        if len(data) > max_bytes:
            issues.violation("too-large", f"more than {max_bytes} bytes")
            return None
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError:
            issues.violation(
                "encoding", "the text holds unpaired surrogates; not encodable as UTF-8"
            )
            data = data.encode("utf-8", "replace").decode("utf-8")
            size = len(data.encode("utf-8"))
        text = data
    elif isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        size = len(raw)
        if size > max_bytes:
            issues.violation("too-large", f"{size} bytes; the limit is {max_bytes}")
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            issues.violation("encoding", f"not UTF-8 (bad byte at offset {exc.start})")
            text = raw.decode("utf-8", "replace")
    else:
        issues.violation("not-html", f"expected bytes or str, got {type(data).__name__}")
        return None
    if size > max_bytes:
        issues.violation("too-large", f"{size} bytes; the limit is {max_bytes}")
        return None
    return text.removeprefix(_BOM)


def _parse_tree(text: str, issues: Issues) -> etree._Element:
    parser = html_parser(remove_comments=False)
    try:
        root = etree.fromstring(text.encode("utf-8", "replace"), parser=parser)
    except (etree.LxmlError, ValueError):
        root = None
    if root is None:
        issues.violation("not-html", "no HTML document could be parsed")
        return etree.Element("html")
    for entry in parser.error_log:
        if entry.level_name == "FATAL" and "depth" in entry.message.lower():
            issues.violation("too-deep", "elements are nested too deeply; the parse stopped early")
    return root


def _article_source(text: str, article: etree._Element | None, tokens: Scan) -> str:
    """The article's inner HTML exactly as written, when its tags are unambiguous.

    The slice runs between the one `<article>` start tag token and the one
    `</article>` end tag token, so it is a run of whole tokens: an HTML5 parser
    reads the same elements in it alone as in the file. (A search for the text
    "<article" also finds it inside a comment or an attribute value, and a
    slice from there hands a reader markup the file never held as markup.)
    """
    if article is None:
        return ""
    opens = [t for t in tokens.tags if t.name == "article" and not t.closing]
    closes = [t for t in tokens.tags if t.name == "article" and t.closing]
    if len(opens) == 1 and len(closes) == 1 and opens[0].end <= closes[0].start:
        return text[opens[0].end : closes[0].start]
    # Ambiguous source (two article tags, an unclosed article): serialize the parsed tree.
    inner = [html.escape(article.text, quote=False) if article.text else ""]
    inner += [etree.tostring(child, encoding="unicode", method="html") for child in article]
    return "".join(inner)


def _document(
    head: HeadFields,
    fields: ArticleFields,
    *,
    gist: str,
    article_html: str,
    content_hash: str,
    issues: Issues,
) -> MemoryDocument:
    metas = head.metas
    return MemoryDocument(
        title=head.title,
        memory_type=metas.get("memhtml-type"),
        status=metas.get("memhtml-status"),
        created=metas.get("memhtml-created"),
        updated=metas.get("memhtml-updated"),
        metas=dict(metas),
        entities=tuple(head.entities),
        tags=tuple(head.tags),
        aliases=tuple(head.aliases),
        links=tuple(head.links),
        gist=gist,
        event_at=fields.event_at,
        facets=fields.facets,
        citations=fields.citations,
        concepts=fields.concepts,
        code_langs=fields.code_langs,
        summaries=fields.summaries,
        details_text=fields.details_text,
        asides=fields.asides,
        body_text=fields.body_text,
        article_html=article_html,
        content_hash=content_hash,
        violations=tuple(issues.violations),
        warnings=tuple(issues.warnings),
    )
