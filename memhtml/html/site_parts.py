"""What every page of the published site shares: its rows, where pages live, relative
hrefs, escaping and the page frame (memhtml.html.listing renders the pages).

Pure and deterministic: strings in, strings out, no clock. Every href is
relative to the page it is on, so the site works from `file://` and from any
static server at any mount point.
"""

from __future__ import annotations

import functools
import html
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import quote

# The generated names, all in one place (a memory path can never be one of them: the
# listings' name is refused as a memory file name, the rest sit at the root, outside the
# PARA buckets every memory path starts with).
LISTING_NAME: Final = "index.html"  # one per directory; the root's is the front page
SITEMAP_NAME: Final = "sitemap.xml"  # root
STYLESHEET_NAME: Final = "memhtml.css"  # root
VIEW_DIR: Final = "memhtml-view"  # root folder: memhtml-view/<memory path> views a memory
GENERATED_ROOT_NAMES: Final[tuple[str, ...]] = (
    LISTING_NAME,
    SITEMAP_NAME,
    STYLESHEET_NAME,
    VIEW_DIR,
)
ROOT_LABEL: Final = "Memory"
GENERATOR: Final = "memhtml publish"
DUPLICATE_PREFIX: Final = "duplicate content of "


@dataclass(frozen=True)
class ListedMemory:
    """One indexed memory as the site shows it (a `files` row and its authored links)."""

    path: str
    title: str
    gist: str
    memory_type: str
    status: str  # active | archived
    updated_at: str
    archived_at: str | None = None
    task_status: str | None = None
    superseded_by: str | None = None
    links: tuple[tuple[str, str], ...] = field(default=())  # (rel, target path), sorted
    created_at: str | None = None
    event_at: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    due_at: str | None = None
    confidence: float | None = None
    importance: int | None = None
    author: str | None = None
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()  # "type:name", sorted
    facets: tuple[tuple[str, str], ...] = ()  # (name, value), in the file's order


@dataclass(frozen=True)
class ListedSkip:
    """A file under the memory folders the index could not project (a `skipped_files` row)."""

    path: str
    reason: str

    @property
    def duplicate_of(self) -> str | None:
        """The holder's path when the file duplicates another memory's content."""
        if self.reason.startswith(DUPLICATE_PREFIX):
            return self.reason[len(DUPLICATE_PREFIX) :]
        return None


@dataclass(frozen=True)
class ListedRun:
    """A sleep run whose committed report the tree holds (`.memhtml/sleep/<run-id>.html`)."""

    run_id: str
    report_path: str
    summary: str  # the report's <mark>: phases committed, failed, skipped


_RUN_ORDER: Final = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-(\d+))?$")
_MARK: Final = re.compile(r"<mark>(.*?)</mark>", re.S)
_TAG: Final = re.compile(r"<[^>]*>")


def run_from_report(path: str, data: bytes) -> ListedRun | None:
    """A run from its report's path and bytes; None for anything that is not a report."""
    name = path.rpartition("/")[2]
    run_id = name.removesuffix(".html")
    if not name.endswith(".html") or not _RUN_ORDER.match(run_id):
        return None
    found = _MARK.search(data.decode("utf-8", errors="replace"))
    summary = " ".join(html.unescape(_TAG.sub("", found.group(1))).split()) if found else ""
    return ListedRun(run_id, path, summary.removeprefix(f"{run_id} "))


def run_order(run: ListedRun) -> tuple[str, int]:
    """Newest last: the run date, then the run's ordinal that day."""
    match = _RUN_ORDER.match(run.run_id)
    assert match is not None  # run_from_report admits only run ids
    return match.group(1), int(match.group(2) or 1)


def directory_of(path: str) -> str:
    """`areas/x/y.html` -> `areas/x`; a root-level file -> `` (the root)."""
    return path.rpartition("/")[0]


def name_of(path: str) -> str:
    """The last segment of a path."""
    return path.rpartition("/")[2]


def listing_path(directory: str) -> str:
    """Where a directory's listing lives: `index.html` for the root, else `<dir>/index.html`."""
    return f"{directory}/{LISTING_NAME}" if directory else LISTING_NAME


def view_path(memory: str) -> str:
    """Where a memory's view page lives: `memhtml-view/<memory path>`."""
    return f"{VIEW_DIR}/{memory}"


@functools.lru_cache(maxsize=65536)  # a site asks for the same few hrefs from every page
def href(from_dir: str, target: str, fragment: str | None = None) -> str:
    """A relative URL from a page in `from_dir` to the repository path `target`, escaped."""
    url = quote(_relative(from_dir, target), safe="/")
    return url if fragment is None else f"{url}#{quote(fragment, safe='')}"


def _relative(from_dir: str, target: str) -> str:
    """`posixpath.relpath` for repository paths, without its per-call `os.getcwd`."""
    if not from_dir:
        return target
    base = from_dir.split("/")
    parts = target.split("/")
    common = 0
    while common < min(len(base), len(parts) - 1) and base[common] == parts[common]:
        common += 1
    return "../" * (len(base) - common) + "/".join(parts[common:])


def text(value: str) -> str:
    """Escaped for element content."""
    if "&" not in value and "<" not in value and ">" not in value:
        return value  # most text needs nothing, and escaping is most of a page's cost
    return html.escape(value, quote=False)


def attr(value: str) -> str:
    """Escaped for an attribute value."""
    plain = "&" not in value and "<" not in value and ">" not in value
    if plain and '"' not in value and "'" not in value:
        return value
    return html.escape(value, quote=True)


def plural(n: int, one: str, many: str) -> str:
    """`1 memory`, `2 memories`."""
    return f"{n} {one if n == 1 else many}"


def when(instant: str | None, label: str = "") -> str:
    """A `<time>` showing the day, the full instant in `datetime` and the tooltip."""
    if not instant:
        return ""
    tip = f"{label} {instant}".strip()
    return f'<time datetime="{attr(instant)}" title="{attr(tip)}">{text(instant[:10])}</time>'


def ancestors(directory: str) -> list[str]:
    """`a/b/c` -> [`a/b/c`, `a/b`, `a`, ``]."""
    out = [directory]
    while directory:
        directory = directory_of(directory)
        out.append(directory)
    return out


_SEP: Final = '<span class="sep" aria-hidden="true">/</span>'


def crumbs(page_dir: str, directory: str, last: str | None = None) -> str:
    """The breadcrumb from the root to `directory` (then `last`, the page itself, if any),
    every step but the page a link from a page in `page_dir`."""
    if last is None:
        parent, label = (directory_of(directory), name_of(directory)) if directory else ("", "")
        here = f'<strong aria-current="page">{text(label or ROOT_LABEL)}</strong>'
        return _SEP.join([*_crumb_links(page_dir, parent), here]) if directory else here
    here = f'<strong aria-current="page">{text(last)}</strong>'
    return _SEP.join([*_crumb_links(page_dir, directory), here])


@functools.lru_cache(maxsize=4096)
def _crumb_links(page_dir: str, directory: str) -> tuple[str, ...]:
    """Links to the root and every folder down to `directory`, from a page in `page_dir`."""
    chain = list(reversed(ancestors(directory)))  # "", a, a/b, ...
    return tuple(
        f'<a href="{attr(href(page_dir, listing_path(d)))}">{text(name_of(d) or ROOT_LABEL)}</a>'
        for d in chain
    )


@dataclass(frozen=True)
class SiteIndex:
    """What a page needs to know about the whole tree, to link across it."""

    by_path: dict[str, ListedMemory]
    skipped: frozenset[str]
    inbound: dict[str, tuple[tuple[str, str], ...]]  # target -> ((source, rel), ...), sorted
    below: Counter[str]  # memories in a directory and its descendants

    def target(self, page_dir: str, path: str) -> str:
        """A link to what `path` holds: a memory's view page, a skipped file's entry in its
        listing, or the bare path marked as missing when the tree holds nothing there."""
        memory = self.by_path.get(path)
        if memory is not None:
            link = f'<a href="{attr(href(page_dir, view_path(path)))}">{text(memory.title)}</a>'
            if memory.status == "archived":
                link += ' <span class="status archived">archived</span>'
            return link
        if path in self.skipped:
            url = href(page_dir, listing_path(directory_of(path)), name_of(path))
            return f'<a href="{attr(url)}"><code>{text(path)}</code></a>'
        return f'<code>{text(path)}</code> <em class="missing">(not in the tree)</em>'


def page(page_dir: str, title: str, nav: str, body: Sequence[str]) -> str:
    """A whole generated page: head, skip link, breadcrumb, `<main>`."""
    parts = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta name="generator" content="{GENERATOR}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{text(title)}</title>",
        f'<link rel="stylesheet" href="{attr(href(page_dir, STYLESHEET_NAME))}">',
        "</head>",
        "<body>",
        '<a class="skip" href="#main">Skip to content</a>',
        f'<header><nav aria-label="Breadcrumb">{nav}</nav></header>',
        '<main id="main">',
        *body,
        "</main>",
        "<footer><p>Generated by <code>memhtml publish</code> from the tree; the memories"
        " themselves are the files it links to, never changed by it.</p></footer>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(parts)
