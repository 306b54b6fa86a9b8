"""The format's rules: head metas and links, and the body's constraints.

Every check appends to an `Issues` collector and never stops early, so one
parse reports everything wrong with a file. Two severities:

* a *violation* refuses the file (the write path will not commit it, doctor
  flags it);
* a *warning* is reported and tolerated (a harmless element outside the
  vocabulary, a malformed optional meta that was dropped).

What may appear at all (elements, attributes, URLs) is `allowlist`'s; it is
checked twice, on the source's tags as a browser tokenizes them
(`check_markup`) and on libxml2's tree (`check_elements`, which also decides
placement), because libxml2 does not build the tree a browser builds.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, cast

from lxml import etree

from memhtml.contracts.dates import is_strict_datetime
from memhtml.contracts.errors import InvalidPathError
from memhtml.contracts.paths import href_to_path
from memhtml.contracts.vocab import (
    DATETIME_METAS,
    LINK_REL_PREFIX,
    MAX_TITLE_CHARS,
    MEMORY_TYPES,
    REPEATABLE_METAS,
    REQUIRED_METAS,
    SCALAR_METAS,
    STATUSES,
    TASK_STATUSES,
    rel_from_token,
)
from memhtml.html.allowlist import (
    BODY_ELEMENTS,
    DOCUMENT_ELEMENTS,
    FIGURE_ONLY_ELEMENTS,
    HEAD_ELEMENTS,
    QUIET_ATTRIBUTES,
    VALUED_ATTRIBUTES,
    VOID_ELEMENTS,
    Finding,
    tag_problems,
)
from memhtml.html.document import Issue, Link, as_memory_path
from memhtml.html.hashing import collapse_spaces, normalized_text
from memhtml.html.tokens import Scan

META_PREFIX: Final = "memhtml-"
ASCII_WS: Final = " \t\n\r\f"
_CONTENT_HASH: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
_NUMBER: Final = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
# A file's datetimes repeat (created and updated, a batch written at one
# instant) and the check builds a datetime: remembered per process.
strict_datetime: Final = functools.lru_cache(maxsize=1024)(is_strict_datetime)
_BOOLEANS: Final = frozenset({"true", "false", "1", "0", "yes", "no"})
MAX_LISTED_PER_CODE: Final = 50
_CONTENT_CHARSET: Final = re.compile(
    r"charset[ \t\n\r\f]*=[ \t\n\r\f]*[\"']?([^ \t\n\r\f;\"']+)", re.IGNORECASE
)


@dataclass
class Issues:
    """Collects violations and warnings, deduplicated by (code, message) or an explicit key.

    At most MAX_LISTED_PER_CODE distinct issues of one code and severity are
    listed, then one saying more were left out: a hostile megabyte of distinct
    bad tags must not become a megabyte of findings.
    """

    violations: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    _seen: set[tuple[bool, str, str]] = field(default_factory=set)
    _listed: dict[tuple[bool, str], int] = field(default_factory=dict)

    def violation(self, code: str, message: str, *, key: str | None = None) -> None:
        """Record a violation (the file is refused); `key` overrides the dedup key."""
        self._add(True, code, message, key)

    def warning(self, code: str, message: str, *, key: str | None = None) -> None:
        """Record a warning (the file is accepted); `key` overrides the dedup key."""
        self._add(False, code, message, key)

    def _add(self, fatal: bool, code: str, message: str, key: str | None) -> None:
        seen_key = (fatal, code, message if key is None else key)
        if seen_key in self._seen:
            return
        listed = self._listed.get((fatal, code), 0)
        if listed > MAX_LISTED_PER_CODE:
            return
        self._seen.add(seen_key)
        self._listed[fatal, code] = listed + 1
        if listed == MAX_LISTED_PER_CODE:
            message = f"further {code} findings are not listed"
        (self.violations if fatal else self.warnings).append(Issue(code, message))


def collapse(text: str) -> str:
    """Runs of ASCII whitespace to one space, then trimmed of any whitespace.

    Inside the text U+00A0 is content and kept; at the ends it is trimmed like
    a space, so a title or claim of nothing but no-break spaces is empty.
    """
    return collapse_spaces(text).strip()


def scalar_problem(name: str, value: str) -> Issue | None:
    """What is wrong with a scalar meta value, or None when it is valid.

    The returned issue's code is the violation code for a required or
    datetime meta, and `dropped-meta` for any other optional scalar.
    """
    if name in DATETIME_METAS:
        if strict_datetime(value):
            return None
        return Issue(
            "bad-datetime",
            f"{name}={value!r} is not YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ",
        )
    if name == "memhtml-type":
        if value in MEMORY_TYPES:
            return None
        return Issue(
            "unknown-type", f"memhtml-type={value!r} is not one of {', '.join(MEMORY_TYPES)}"
        )
    if name == "memhtml-status":
        if value in STATUSES:
            return None
        return Issue("bad-meta-value", f"memhtml-status={value!r} is not active or archived")
    why = _optional_problem(name, value)
    return None if why is None else Issue("dropped-meta", f"{name}={value!r} dropped: {why}")


def _optional_problem(name: str, value: str) -> str | None:
    if not value:
        return "empty"
    if name == "memhtml-confidence":
        number = meta_number(value)
        return None if number is not None and 0 <= number <= 1 else "not a number in 0..1"
    if name == "memhtml-importance":
        number = meta_number(value)
        ok = number is not None and number.is_integer() and 1 <= number <= 10
        return None if ok else "not an integer in 1..10"
    if name == "memhtml-reprieves":
        number = meta_number(value)
        ok = number is not None and number.is_integer() and 0 <= number < 2**53
        return None if ok else "not a non-negative integer"
    if name == "memhtml-content-hash":
        return None if _CONTENT_HASH.match(value) else "not sha256:<64 lowercase hex>"
    if name == "memhtml-superseded-by":
        return None if as_memory_path(value) is not None else "not a root-relative memory href"
    if name == "memhtml-needs-revision":
        return None if value.lower() in _BOOLEANS else "not true or false"
    if name == "memhtml-task-status":
        return None if value in TASK_STATUSES else f"not one of {', '.join(TASK_STATUSES)}"
    return None


def meta_number(value: str) -> float | None:
    """A decimal number as a finite float (no hex, no underscores, no inf/nan); else None."""
    if not _NUMBER.match(value):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def split_entity(value: str) -> tuple[str, str] | None:
    """`type:name` to (type, name), each trimmed; None when either part is missing."""
    kind, sep, name = value.partition(":")
    kind, name = kind.strip(ASCII_WS), name.strip(ASCII_WS)
    if not sep or not kind or not name:
        return None
    return kind, name


def parse_link_href(href: str | None) -> str | None:
    """The memory path of a link href, or None when it is not root-relative and clean."""
    if href is None:
        return None
    try:
        return href_to_path(href)
    except InvalidPathError:
        return None


@dataclass
class HeadFields:
    """The head as read: valid metas and edges, in document order."""

    title: str = ""
    metas: dict[str, str] = field(default_factory=dict)
    entities: list[tuple[str, str]] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)


def read_head(root: etree._Element, issues: Issues) -> HeadFields:
    """Read the title, metas and links of a parsed document, recording every problem."""
    out = HeadFields()
    titles = [collapse(_text(t)) for t in root.iter("title")]
    if len(titles) != 1:
        issues.violation("title", f"expected exactly one <title>, found {len(titles)}")
    elif not titles[0]:
        issues.violation("title", "the <title> is empty")
    elif len(titles[0]) > MAX_TITLE_CHARS:
        issues.violation("title", f"the title is longer than {MAX_TITLE_CHARS} characters")
    out.title = titles[0] if titles else ""

    head = next(root.iterchildren("head"), None)
    items = list(head.iter("meta", "link")) if head is not None else []
    seen_scalars: set[str] = set()
    for el in items:
        if el.tag == "meta":
            _read_meta(el, out, seen_scalars, issues)
        else:
            _read_link(el, out, issues)

    out.entities = list(dict.fromkeys(out.entities))
    out.tags = list(dict.fromkeys(out.tags))
    out.aliases = list(dict.fromkeys(out.aliases))
    unique_links: dict[tuple[str, str], Link] = {}
    for link in out.links:
        unique_links.setdefault((link.rel, link.path), link)
    out.links = list(unique_links.values())
    for name in REQUIRED_METAS:
        if name not in seen_scalars:
            issues.violation("missing-meta", f"required meta {name} is missing")
    is_task = out.metas.get("memhtml-type") == "task"
    if is_task and "memhtml-task-status" not in out.metas:
        issues.violation("task-status", "a task needs a valid memhtml-task-status")
    known_type = "memhtml-type" in out.metas
    if known_type and not is_task and "memhtml-task-status" in seen_scalars:
        issues.violation("task-status", "memhtml-task-status is only allowed on a task")
    return out


def _text(el: etree._Element) -> str:
    if not len(el):  # the usual title: its text alone
        return el.text or ""
    return "".join(str(t) for t in el.itertext())


def _read_meta(el: etree._Element, out: HeadFields, seen: set[str], issues: Issues) -> None:
    get = el.get
    charset = get("charset")
    if charset is not None and charset.strip(ASCII_WS).lower() not in ("utf-8", "utf8"):
        issues.violation("encoding", f"declares charset {charset!r}; memory files are UTF-8")
    equiv = get("http-equiv")
    if equiv is not None and equiv.strip(ASCII_WS).lower() == "content-type":
        declared = _CONTENT_CHARSET.search(get("content") or "")
        if declared is not None and declared.group(1).lower() not in ("utf-8", "utf8"):
            issues.violation(
                "encoding", f"declares charset {declared.group(1)!r}; memory files are UTF-8"
            )
    raw_name = get("name")
    if raw_name is None:
        return
    name = raw_name.strip(ASCII_WS).lower()
    if not name.startswith(META_PREFIX):
        return
    value = (get("content") or "").strip(ASCII_WS)
    if name in REPEATABLE_METAS:
        _read_repeatable(name, value, out, issues)
        return
    if name not in SCALAR_METAS:
        issues.warning("unknown-meta", f"{name} is not a memhtml meta; ignored")
        return
    if name in seen:
        issues.violation("duplicate-meta", f"{name} appears more than once")
        return
    seen.add(name)
    problem = scalar_problem(name, value)
    if problem is None:
        out.metas[name] = value
    elif problem.code == "dropped-meta":
        issues.warning(problem.code, problem.message)
    else:
        issues.violation(problem.code, problem.message)


def _read_repeatable(name: str, value: str, out: HeadFields, issues: Issues) -> None:
    if name == "memhtml-entity":
        pair = split_entity(value)
        if pair is None:
            issues.warning("dropped-meta", f"memhtml-entity={value!r} dropped: not type:name")
        else:
            out.entities.append(pair)
        return
    bucket = out.tags if name == "memhtml-tag" else out.aliases
    if not value:
        issues.warning("dropped-meta", f"{name} dropped: empty")
    else:
        bucket.append(value)


def _read_link(el: etree._Element, out: HeadFields, issues: Issues) -> None:
    tokens = (el.get("rel") or "").lower().split()
    for token in tokens:
        if not token.startswith(LINK_REL_PREFIX):
            continue
        rel = rel_from_token(token)
        href = el.get("href")
        if rel is None:
            issues.violation("bad-link", f"unknown link rel {token!r}")
            continue
        path = parse_link_href(href)
        if path is None or href is None:
            issues.violation(
                "bad-link",
                f"{token} href {href!r} is not a root-relative memory path"
                " (no scheme, host or '..')",
            )
            continue
        out.links.append(Link(rel=rel, href=href, path=path))


# A tag as the allow-lists see it: its name, and its attributes with only the
# values a rule reads (two tags alike in this key get the same findings).
Checked = set[tuple[str, tuple[tuple[str, str], ...]]]


def _check_key(
    name: str, attrs: Iterable[tuple[str, str]]
) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple((k, v if k in VALUED_ATTRIBUTES else "") for k, v in attrs)


def check_markup(tokens: Scan, issues: Issues) -> Checked:
    """The allow-lists on every start tag of the source, as a browser tokenizes it.

    (The scan leaves out the start tags that cannot draw a finding.)

    This is the check that does not depend on libxml2's tree: a tag that tree
    leaves out (after `</html>`, a second `<body>`) is still read here.
    Returns the tags checked, so the tree's pass need not check them again.
    """
    checked: Checked = set()
    for tag in tokens.tags:
        if tag.closing:
            continue
        key = _check_key(tag.name, tag.attrs)
        if key not in checked:  # a repeat finds nothing new
            checked.add(key)
            _report(tag_problems(tag.name, tag.attrs), issues)
        if tag.self_closing and tag.name not in VOID_ELEMENTS:
            issues.violation(
                "self-closing",
                f"<{tag.name}/>: a browser ignores the '/' and leaves the element open"
                f" while the parser (libxml2) closes it; write <{tag.name}></{tag.name}>",
                key=tag.name,
            )
    if tokens.after_html:
        issues.violation(
            "after-html",
            "content follows </html>: a browser renders it, the parser (libxml2) never reads it",
        )
    return checked


def _report(findings: Iterable[Finding], issues: Issues) -> None:
    for finding in findings:
        issues.violation(finding.code, finding.message, key=finding.key)


def check_elements(
    root: etree._Element,
    article: etree._Element | None,
    issues: Issues,
    *,
    checked: Checked | None = None,
) -> None:
    """The allow-lists again on the parsed tree, then placement and the soft vocabulary.

    An element whose name and attributes `check_markup` already checked is not
    checked again; any other (should libxml2 read a tag the tokenizer did not)
    is. Title, metas and links belong to the head (as its children); div and
    span to a figure; the tolerated elements outside the vocabulary warn once
    per name; content outside the article warns.
    """
    head = next(root.iterchildren("head"), None)
    in_article = set(article.iter()) if article is not None else set()
    checked = set() if checked is None else checked
    for el in root.iter():
        tag = el.tag
        quiet = QUIET_ATTRIBUTES.get(tag)  # None for an element outside the allow-list
        if quiet is None and not isinstance(tag, str):
            continue  # comments and processing instructions
        names = cast("list[str]", el.keys())  # an HTML tree's names are text
        if quiet is None or (names and not quiet.issuperset(names)):  # else nothing to find
            # Values only where a rule reads them: lxml looks each one up by
            # name, so reading all of them is quadratic in the attribute count.
            attrs = tuple((k, el.get(k, "") if k in VALUED_ATTRIBUTES else "") for k in names)
            if (tag, attrs) not in checked:
                checked.add((tag, attrs))
                _report(tag_problems(tag, attrs), issues)
        if quiet is None or tag in DOCUMENT_ELEMENTS:
            continue
        if tag in BODY_ELEMENTS and el in in_article:
            continue  # the common case: vocabulary inside the article
        if tag in HEAD_ELEMENTS:
            if head is None or el.getparent() is not head:
                message = f"<{tag}> is only allowed in the head"
                issues.violation("forbidden-element", message, key=f"{tag} in body")
            continue
        # Anything else is body content, even where libxml2 left it in the head
        # (it does so when a file omits the optional <body> tag).
        if tag not in BODY_ELEMENTS:
            figure_only = tag in FIGURE_ONLY_ELEMENTS
            if not (figure_only and any(True for _ in el.iterancestors("figure"))):
                where = " outside a <figure>" if figure_only else ""
                issues.warning(
                    "unknown-element", f"<{tag}> is outside the body vocabulary{where}", key=tag
                )
        if article is not None and el not in in_article:
            issues.warning("outside-article", "the body holds content outside the <article>")
    body = next(root.iterchildren("body"), None)
    if body is not None and _stray_text(body):
        issues.warning("outside-article", "the body holds content outside the <article>")


def _stray_text(body: etree._Element) -> bool:
    if body.text and body.text.strip(ASCII_WS):
        return True
    return any(child.tail and child.tail.strip(ASCII_WS) for child in body)


def check_articles(root: etree._Element, issues: Issues) -> etree._Element | None:
    """Exactly one `<article>`; returns the first one (or None)."""
    articles = list(root.iter("article"))
    if len(articles) != 1:
        issues.violation("article-count", f"expected exactly one <article>, found {len(articles)}")
    return articles[0] if articles else None


def check_mark(root: etree._Element, article: etree._Element | None, issues: Issues) -> str:
    """The claim rule; returns the gist (the first mark's text without code, collapsed).

    Exactly one `<mark>`; its text with `<code>`/`<pre>` left out must not be
    blank; it must not sit inside an `<aside>` or `<details>`; and it must be
    inside the article's first `<p>` or `<li>` in document order (the claim
    block). A mark inside a fold is reported as such, not also as misplaced.
    The placement of only the first MAX_LISTED_PER_CODE marks is checked: with
    more, `mark-count` refuses the file anyway, and each check walks up the tree.
    """
    marks = list(root.iter("mark"))
    if len(marks) != 1:
        issues.violation(
            "mark-count", f"expected exactly one <mark> (the claim), found {len(marks)}"
        )
    if not marks:
        return ""
    gist = collapse(normalized_text(marks[0], exclude_code=True))
    if len(marks) == 1 and not gist:
        issues.violation("mark-count", "the <mark> is empty (text inside <code> does not count)")
    for mark in marks[:MAX_LISTED_PER_CODE]:
        for problem in _placement_problems(mark, article):
            issues.violation("mark-placement", problem)
    return gist


def _placement_problems(mark: etree._Element, article: etree._Element | None) -> list[str]:
    ancestors = list(mark.iterancestors())  # elements compare by identity
    if article is None or article not in ancestors:
        return ["the <mark> is outside the <article>"]
    within = {el.tag for el in ancestors[: ancestors.index(article)]}  # up to the article
    folded = [
        f"the <mark> is inside <{container}>, which is never the claim"
        for container in ("aside", "details")
        if container in within
    ]
    if folded:
        return folded
    claim_block = next(article.iter("p", "li"), None)
    if claim_block is None:
        return ["the <mark> must be inside a <p> or <li>"]
    if claim_block not in ancestors:
        return [f"the <mark> must be inside the article's first <{claim_block.tag}>"]
    return []
