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
from memhtml.html.validate import (
    HeadFields,
    Issues,
    check_articles,
    check_elements,
    check_mark,
    read_head,
)

_BOM: Final = "\ufeff"
_HTML_START: Final = re.compile(r"<(?:!doctype\s+html|html)[\s>/]", re.IGNORECASE)
_ARTICLE_OPEN: Final = re.compile(r"<article(?:\s(?:[^>\"']|\"[^\"]*\"|'[^']*')*)?>", re.IGNORECASE)
_ARTICLE_CLOSE: Final = re.compile(r"</article\s*>", re.IGNORECASE)


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

    root = _parse_tree(text, issues)
    head = read_head(root, issues)
    article = check_articles(root, issues)
    check_elements(root, article, issues)
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
        article_html=_article_source(text, article),
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


def _article_source(text: str, article: etree._Element | None) -> str:
    """The article's inner HTML exactly as written, when it can be located unambiguously."""
    if article is None:
        return ""
    opens = list(_ARTICLE_OPEN.finditer(text))
    closes = list(_ARTICLE_CLOSE.finditer(text))
    if len(opens) == 1 and len(closes) == 1 and opens[0].end() <= closes[0].start():
        return text[opens[0].end() : closes[0].start()]
    # Ambiguous source (e.g. "<article" inside a comment): serialize the parsed tree.
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
