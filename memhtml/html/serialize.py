"""`render_memory`: a NewMemory to a complete, valid, deterministic file.

The template, one head item per line so that a head edit is a one-line diff:

    <!doctype html>
    <html lang="en">
    <head>
      <meta charset="utf-8">
      <title>…</title>
      <meta name="memhtml-…" content="…">      (META_ORDER; repeatables in given order)
      <link rel="memhtml-…" href="/…">          (sorted by rel, then href)
    </head>
    <body>
    <article>
      <p><mark>claim</mark></p>
      <p>Observed <time datetime="…">…</time>.</p>   (only when event_at is given)
      <p>body paragraph</p>                         (one per body entry)
    </article>
    </body>
    </html>

With caller-owned `article_html`, it is written verbatim between `<article>`
and `</article>`. The result is parsed back before it is returned, and any
violation (or an optional meta the parser would drop) refuses the render.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterable
from typing import Final

from memhtml.contracts.dates import normalize_datetime
from memhtml.contracts.errors import InvalidMemoryError
from memhtml.contracts.paths import is_memory_path
from memhtml.contracts.vocab import (
    DATETIME_METAS,
    OPTIONAL_SCALAR_METAS,
    REPEATABLE_METAS,
    REQUIRED_METAS,
    normalize_rel,
    rel_token,
)
from memhtml.html.document import MemoryDocument, NewMemory
from memhtml.html.hashing import content_hash_of_article_html
from memhtml.html.parse import parse_memory
from memhtml.html.validate import ASCII_WS, Issues, collapse, parse_link_href

INDENT: Final = "  "
CONTENT_HASH_META: Final = "memhtml-content-hash"
# A valid hash that no article has (its preimage would be needed): stands in for
# the real one while the text is parsed once to compute it.
_PLACEHOLDER_HASH: Final = "sha256:" + "0" * 64
_HASH_MISMATCH: Final = "content-hash-mismatch"
# C0 controls other than tab, LF, FF and CR (and DEL) do not survive an HTML parse.
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_ATTR_EXTRA: Final = str.maketrans({"\n": "&#10;", "\r": "&#13;", "\t": "&#9;", "\f": "&#12;"})
# The characters either escape rewrites: a value without any is returned as it is
# (one scan instead of html.escape's replace passes and a translate).
_TEXT_SPECIAL: Final = re.compile(r"[&<>]")
_ATTR_SPECIAL: Final = re.compile("[&<>\"'\n\r\t\f]")


def escape_text(text: str) -> str:
    """Escape text content: &, < and >."""
    if _TEXT_SPECIAL.search(text) is None:
        return text
    return html.escape(text, quote=False)


def escape_attr(value: str) -> str:
    """Escape a double-quoted attribute value; whitespace controls become character
    references so that every head item stays on one line."""
    if _ATTR_SPECIAL.search(value) is None:
        return value
    return html.escape(value, quote=True).translate(_ATTR_EXTRA)


def meta_line(name: str, value: str) -> str:
    """One head meta tag (no indentation)."""
    return f'<meta name="{escape_attr(name)}" content="{escape_attr(value)}">'


def link_line(rel: str, path: str) -> str:
    """One authored edge tag for an underscore rel and a memory path (no indentation)."""
    return f'<link rel="{rel_token(rel)}" href="{escape_attr("/" + path)}">'


def render_memory(new: NewMemory) -> str:
    """Render a complete memory file; raise InvalidMemoryError listing every violation.

    Deterministic: the same NewMemory always gives the same text.
    """
    return render_document(new)[0]


def render_document(new: NewMemory) -> tuple[str, MemoryDocument]:
    """Render a memory file and return it with its parse (one parse of the final text)."""
    try:
        return _render(new)
    except (TypeError, AttributeError, ValueError) as exc:  # a field of the wrong type
        raise InvalidMemoryError(
            f"the memory could not be rendered: {exc}",
            details={"violations": [{"code": "bad-input", "message": str(exc)}]},
        ) from exc


def _render(new: NewMemory) -> tuple[str, MemoryDocument]:
    issues = Issues()
    _check_text_fields(new, issues)
    metas = _scalar_metas(new, issues)
    repeatables = _repeatable_metas(new, issues)
    links = _links(new.links, issues)
    article = _article_inner(new, issues)

    def assemble(content_hash: str | None) -> str:
        scalars = dict(metas)
        if content_hash is not None:
            scalars[CONTENT_HASH_META] = content_hash
        return _assemble(collapse(new.title), scalars, repeatables, links, article)

    # One parse per render: the text is assembled with a placeholder hash of the
    # real one's length, and its parse reads the article's hash; the final text
    # differs only in that meta's value, and so does its parse (the meta, and
    # the placeholder's hash-mismatch warning). The article alone is parsed only
    # when the full parse yields no hash (a text that is refused anyway).
    text = assemble(_PLACEHOLDER_HASH if new.include_content_hash else None)
    parsed = parse_memory(text)
    if new.include_content_hash and parsed.content_hash:
        text = _restamped(text, parsed.content_hash)
        parsed = _stamped(parsed, parsed.content_hash)
    elif new.include_content_hash:
        expected = content_hash_of_article_html(article)
        text = assemble(expected)
        parsed = parse_memory(text)
        if parsed.content_hash and parsed.content_hash != expected:
            text = assemble(parsed.content_hash)
            parsed = parse_memory(text)
    for issue in parsed.violations:
        issues.violation(issue.code, issue.message)
    for issue in parsed.warnings:
        if issue.code == "dropped-meta":
            issues.violation(issue.code, issue.message)
    if issues.violations:
        listed = "; ".join(f"{i.code}: {i.message}" for i in issues.violations)
        raise InvalidMemoryError(
            f"the memory would not be valid: {listed}",
            suggestions=["see docs/format.md for the format's rules"],
            details={"violations": [i.as_dict() for i in issues.violations]},
        )
    return text, parsed


_PLACEHOLDER_LINE: Final = meta_line(CONTENT_HASH_META, _PLACEHOLDER_HASH)


def _restamped(text: str, content_hash: str) -> str:
    """`text` assembled with the placeholder hash, as `assemble(content_hash)` gives it.

    The placeholder's meta line is the first one in the text: everything before
    it is the template's own tags, the escaped title (no `<`) and meta lines
    whose escaped values hold no `"`, so no earlier text can spell that line.
    """
    return text.replace(_PLACEHOLDER_LINE, meta_line(CONTENT_HASH_META, content_hash), 1)


def _stamped(parsed: MemoryDocument, content_hash: str) -> MemoryDocument:
    """The parse of a rendered text, as it reads once the placeholder hash is the real one."""
    metas = parsed.metas
    if CONTENT_HASH_META in metas:
        metas = {**metas, CONTENT_HASH_META: content_hash}
    warnings = tuple(w for w in parsed.warnings if w.code != _HASH_MISMATCH)
    return parsed.replace(metas=metas, warnings=warnings)


def _check_text_fields(new: NewMemory, issues: Issues) -> None:
    texts: list[str] = [new.title, new.claim or "", new.article_html or "", *new.body]
    texts += [str(v) for v in new.metas.values() if v is not None]
    texts += [part for pair in new.entities for part in pair]
    texts += [*new.tags, *new.aliases]
    if any(_CONTROL.search(t) for t in texts):
        issues.violation("control-character", "a field holds a control character")
    if new.article_html is not None and (new.claim or any(p.strip(ASCII_WS) for p in new.body)):
        issues.violation(
            "template-conflict", "give either claim and body, or article_html, not both"
        )


def _datetime(value: str) -> str:
    """A datetime normalized to the stored grammar when it parses (else kept, and refused later)."""
    if type(value) is str:
        return _normalized(value)
    return normalize_datetime(value) or value


@functools.lru_cache(maxsize=64)
def _normalized(value: str) -> str:
    # A batch renders every memory with the same created/updated instant.
    return normalize_datetime(value) or value


def _scalar_metas(new: NewMemory, issues: Issues) -> dict[str, str]:
    out = {
        "memhtml-type": new.memory_type,
        "memhtml-status": new.status,
        "memhtml-created": _datetime(new.created),
        "memhtml-updated": _datetime(new.updated),
    }
    for name, raw in new.metas.items():
        if raw is None:
            continue
        value = str(raw).strip(ASCII_WS)
        if name == CONTENT_HASH_META or not value:
            continue  # the hash is computed, never taken from the caller
        if name in REQUIRED_METAS or name in REPEATABLE_METAS:
            issues.violation("unknown-meta", f"{name} has its own NewMemory field; not in metas")
        elif name not in OPTIONAL_SCALAR_METAS:
            issues.violation("unknown-meta", f"{name} is not a memhtml scalar meta")
        elif name in DATETIME_METAS:
            out[name] = _datetime(value)
        elif name == "memhtml-superseded-by" and is_memory_path(value):
            out[name] = "/" + value
        else:
            out[name] = value
    return out


def _repeatable_metas(new: NewMemory, issues: Issues) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for raw_kind, raw_name in new.entities:
        kind, name = raw_kind.strip(ASCII_WS), raw_name.strip(ASCII_WS)
        if not kind or not name or ":" in kind:
            issues.violation(
                "bad-meta-value", f"entity ({kind!r}, {name!r}) is not a non-empty type and name"
            )
        else:
            out.append(("memhtml-entity", f"{kind}:{name}"))
    out += [("memhtml-tag", t.strip(ASCII_WS)) for t in new.tags]
    out += [("memhtml-alias", a.strip(ASCII_WS)) for a in new.aliases]
    return list(dict.fromkeys(item for item in out if item[1]))


def _links(pairs: Iterable[tuple[str, str]], issues: Issues) -> list[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for raw_rel, raw_path in pairs:
        rel = normalize_rel(raw_rel)
        path = parse_link_href(raw_path) if raw_path.startswith("/") else raw_path
        if rel is None:
            issues.violation("bad-link", f"unknown link rel {raw_rel!r}")
        elif path is None or not is_memory_path(path):
            issues.violation("bad-link", f"{raw_path!r} is not a root-relative memory path")
        else:
            out.add((rel, path))
    return sorted(out, key=lambda pair: (pair[0], "/" + pair[1]))


def _article_inner(new: NewMemory, issues: Issues) -> str:
    event_at = None
    if new.event_at is not None:
        event_at = normalize_datetime(new.event_at)
        if event_at is None:
            issues.violation("bad-datetime", f"event_at {new.event_at!r} is not a datetime")
    observed = (
        f'{INDENT}<p>Observed <time datetime="{event_at}">{event_at}</time>.</p>\n'
        if event_at
        else ""
    )
    if new.article_html is not None:
        if event_at is None:
            return new.article_html
        existing = parse_memory(
            "<!doctype html><html><body><article>" + new.article_html + "</article></body></html>"
        ).event_at
        if existing is None:
            return new.article_html + "\n" + observed
        if existing != event_at:
            issues.violation(
                "bad-datetime",
                f"event_at {event_at} differs from the article's first <time> ({existing})",
            )
        return new.article_html
    claim = escape_text((new.claim or "").strip(ASCII_WS))
    lines = [f"\n{INDENT}<p><mark>{claim}</mark></p>\n", observed]
    lines += [
        f"{INDENT}<p>{escape_text(p.strip(ASCII_WS))}</p>\n" for p in new.body if p.strip(ASCII_WS)
    ]
    return "".join(lines)


def _assemble(
    title: str,
    scalars: dict[str, str],
    repeatables: list[tuple[str, str]],
    links: list[tuple[str, str]],
    article: str,
) -> str:
    head = [f'{INDENT}<meta charset="utf-8">', f"{INDENT}<title>{escape_text(title)}</title>"]
    order = list(REQUIRED_METAS) + list(OPTIONAL_SCALAR_METAS)
    head += [INDENT + meta_line(name, scalars[name]) for name in order if name in scalars]
    for name in REPEATABLE_METAS:
        head += [INDENT + meta_line(n, v) for n, v in repeatables if n == name]
    head += [INDENT + link_line(rel, path) for rel, path in links]
    return (
        "<!doctype html>\n"
        '<html lang="en">\n'
        "<head>\n" + "\n".join(head) + "\n</head>\n"
        "<body>\n"
        f"<article>{article}</article>\n"
        "</body>\n"
        "</html>\n"
    )
