"""The published site: per-directory `index.html` listings, `sitemap.xml`, a stylesheet.

Pure: index rows in, `{path: bytes}` out. `memhtml publish` (memhtml.ops.publish)
commits what this returns, or writes it elsewhere; the sleep `integrity` phase
can stage the same bytes, because these files are `merge=ours` and a conflict is
resolved by regenerating, which only works when one generator owns the format.

The listing keeps the original memhtml's shape (a `<mark>` saying what the
directory holds, a list of child directories, then one entry per memory:
`<a>title</a> <code>type</code> <time>updated</time><br><code>name</code> — gist`)
and adds what a person browsing needs: every href is relative to the page, so
the site works from `file://` and from any static server at any mount point; a
breadcrumb back up; the status of each memory (archived ones are marked and
say what superseded them); its authored links as links to the target's entry;
and the files the index could not read, listed as such. The `<mark>`'s count
includes the subdirectories (the original counted a directory's own files, so
its root always said 0). Deterministic: input order does not matter, every
string is escaped, and no generation time appears.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Final
from urllib.parse import quote

LISTING_NAME: Final = "index.html"
SITEMAP_NAME: Final = "sitemap.xml"
STYLESHEET_NAME: Final = "memhtml.css"
ROOT_LABEL: Final = "Memory"
GENERATOR: Final = "memhtml publish"
DUPLICATE_PREFIX: Final = "duplicate content of "

STYLESHEET: Final = """\
/* memhtml publish: the stylesheet of the generated listings (no scripts anywhere). */
:root { color-scheme: light dark; --muted: #666; --accent: #0b57d0; --mark: #fff3b0; }
@media (prefers-color-scheme: dark) {
  :root { --muted: #aaa; --accent: #8ab4f8; --mark: #5c4a00; }
}
body { font: 16px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 0 auto; padding: 1rem; }
a { color: var(--accent); }
nav { font-size: 0.9rem; color: var(--muted); margin-bottom: 1rem; }
mark { background: var(--mark); color: inherit; padding: 0 0.2em; }
code { font: 0.85em ui-monospace, monospace; }
time, small, .rel { color: var(--muted); font-size: 0.9em; }
ul { padding-left: 1.2rem; }
ul.dirs > li { margin: 0.2rem 0; }
ul.memories > li, ul.skipped > li { margin: 0.9rem 0; }
ul.links { margin: 0.2rem 0; font-size: 0.9em; }
.status { font-size: 0.8em; border: 1px solid currentColor; border-radius: 3px; padding: 0 0.3em; }
li.archived { opacity: 0.8; }
li.archived > a:first-child { text-decoration: line-through; }
.status.archived, .status.unparseable { color: #b3261e; }
.status.duplicate { color: var(--muted); }
li:target { outline: 2px solid var(--accent); outline-offset: 4px; }
"""


@dataclass(frozen=True)
class ListedMemory:
    """One indexed memory as a listing shows it (a `files` row and its authored links)."""

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


def directory_of(path: str) -> str:
    """`areas/x/y.html` -> `areas/x`; a root-level file -> `` (the root)."""
    return path.rpartition("/")[0]


def listing_path(directory: str) -> str:
    """Where a directory's listing lives: `index.html` for the root, else `<dir>/index.html`."""
    return f"{directory}/{LISTING_NAME}" if directory else LISTING_NAME


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


def _name(path: str) -> str:
    return path.rpartition("/")[2]


def _t(text: str) -> str:
    return html.escape(text, quote=False)


def _a(value: str) -> str:
    return html.escape(value, quote=True)


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _ancestors(directory: str) -> list[str]:
    """`a/b/c` -> [`a/b/c`, `a/b`, `a`, ``]."""
    out = [directory]
    while directory:
        directory = directory_of(directory)
        out.append(directory)
    return out


def render_site(
    memories: Iterable[ListedMemory], skipped: Iterable[ListedSkip] = ()
) -> dict[str, bytes]:
    """Every generated artifact of a corpus, by repository path, in path order.

    One listing per directory holding a memory or a skipped file, plus each of
    their ancestors up to the root (so the tree browses from the root down),
    the root `sitemap.xml` (one `<url>` per indexed memory) and the stylesheet.
    """
    rows = sorted(memories, key=lambda m: m.path)
    skips = sorted(skipped, key=lambda s: s.path)
    by_path = {m.path: m for m in rows}
    skipped_paths = {s.path for s in skips}
    here: dict[str, list[ListedMemory]] = {}
    skipped_here: dict[str, list[ListedSkip]] = {}
    children: dict[str, set[str]] = {"": set()}
    below: Counter[str] = Counter()  # memories in a directory and its descendants
    for path in [m.path for m in rows] + [s.path for s in skips]:
        chain = _ancestors(directory_of(path))
        for child, parent in pairwise(chain):
            children.setdefault(parent, set()).add(child)
        children.setdefault(chain[0], set())
        if path in by_path:
            below.update(chain)
    for m in rows:
        here.setdefault(directory_of(m.path), []).append(m)
    for s in skips:
        skipped_here.setdefault(directory_of(s.path), []).append(s)
    site = _Site(by_path, skipped_paths, below)
    out: dict[str, bytes] = {}
    for directory in sorted(children):
        page = site.listing(
            directory,
            here.get(directory, []),
            skipped_here.get(directory, []),
            sorted(children[directory]),
            totals=(rows, skips) if directory == "" else None,
        )
        out[listing_path(directory)] = page.encode("utf-8")
    out[SITEMAP_NAME] = render_sitemap(rows).encode("utf-8")
    out[STYLESHEET_NAME] = STYLESHEET.encode("utf-8")
    return dict(sorted(out.items()))


def render_sitemap(memories: Iterable[ListedMemory]) -> str:
    """The root `sitemap.xml`: one `<url>` per memory, `<lastmod>` its updated stamp.

    A `loc` is the memory's path relative to the sitemap (the repository root),
    percent-escaped: the repository has no canonical origin (it is browsed from
    a clone, a file system or any static server), so none is invented; a host
    that needs absolute URLs prefixes its own.
    """
    urls = "".join(
        f"  <url>\n    <loc>{_xml(quote(m.path, safe='/'))}</loc>\n"
        f"    <lastmod>{_xml(m.updated_at)}</lastmod>\n  </url>\n"
        for m in sorted(memories, key=lambda m: m.path)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"{urls}</urlset>\n"
    )


def _xml(value: str) -> str:
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


@dataclass(frozen=True)
class _Site:
    """What every page needs to know about the whole tree (to link across directories)."""

    by_path: dict[str, ListedMemory]
    skipped: set[str]
    below: Counter[str]

    def listing(
        self,
        directory: str,
        rows: Sequence[ListedMemory],
        skips: Sequence[ListedSkip],
        children: Sequence[str],
        totals: tuple[Sequence[ListedMemory], Sequence[ListedSkip]] | None,
    ) -> str:
        label = directory or ROOT_LABEL
        parts = [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta name="generator" content="{GENERATOR}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_t(label)}</title>",
            f'<link rel="stylesheet" href="{_a(href(directory, STYLESHEET_NAME))}">',
            "</head>",
            "<body>",
            f"<nav>{self._crumbs(directory)}</nav>",
            "<article>",
            f"<p><mark>{_t(label)} holds {_plural(self.below[directory], 'memory', 'memories')}."
            "</mark>",
            "This listing is generated from the tree; it is not itself a memory.</p>",
        ]
        if totals is not None:
            parts.append(self._totals(*totals))
        if children:
            parts.append('<ul class="dirs">')
            parts += [
                f'<li><a href="{_a(href(directory, listing_path(c)))}">{_t(c)}/</a>'
                f" <small>{_plural(self.below[c], 'memory', 'memories')}</small></li>"
                for c in children
            ]
            parts.append("</ul>")
        if rows:
            parts.append('<ul class="memories">')
            parts += [self._entry(directory, m) for m in rows]
            parts.append("</ul>")
        if skips:
            parts.append(
                f"<p>{_plural(len(skips), 'file here is', 'files here are')} not indexed:</p>"
            )
            parts.append('<ul class="skipped">')
            parts += [self._skipped(directory, s) for s in skips]
            parts.append("</ul>")
        parts += ["</article>", "</body>", "</html>", ""]
        return "\n".join(parts)

    def _crumbs(self, directory: str) -> str:
        if not directory:
            return f"<strong>{ROOT_LABEL}</strong>"
        chain = list(reversed(_ancestors(directory)))  # "", a, a/b, ...
        crumbs = [
            f'<a href="{_a(href(directory, listing_path(d)))}">{_t(_name(d) or ROOT_LABEL)}</a>'
            for d in chain[:-1]
        ]
        crumbs.append(f"<strong>{_t(_name(directory))}</strong>")
        return " / ".join(crumbs)

    def _totals(self, rows: Sequence[ListedMemory], skips: Sequence[ListedSkip]) -> str:
        archived = sum(1 for m in rows if m.status == "archived")
        unparseable = sum(1 for s in skips if s.duplicate_of is None)
        line = (
            f"<p>In all: {_plural(len(rows), 'memory', 'memories')}"
            f" ({len(rows) - archived} active, {archived} archived)"
        )
        if skips:
            line += (
                f"; {_plural(len(skips), 'file', 'files')} not indexed"
                f" ({unparseable} unparseable, {len(skips) - unparseable} duplicate)"
            )
        return line + f'. <a href="{SITEMAP_NAME}">sitemap.xml</a></p>'

    def _target(self, directory: str, path: str) -> str:
        """A link to `path`'s entry in its own listing, or the bare path when nothing holds it."""
        if path in self.by_path:
            text = _t(self.by_path[path].title)
        elif path in self.skipped:
            text = f"<code>{_t(path)}</code>"
        else:
            return f'<code>{_t(path)}</code> <em class="missing">(not in the tree)</em>'
        url = href(directory, listing_path(directory_of(path)), _name(path))
        return f'<a href="{_a(url)}">{text}</a>'

    def _entry(self, directory: str, m: ListedMemory) -> str:
        name = _name(m.path)
        archived = m.status == "archived"
        status = (
            '<strong class="status archived">archived</strong>'
            if archived
            else '<span class="status">active</span>'
        )
        if archived and m.archived_at:
            status += f' <time datetime="{_a(m.archived_at)}">{_t(m.archived_at)}</time>'
        if m.task_status:
            status += f' <span class="status task">{_t(m.task_status)}</span>'
        klass = ' class="archived"' if archived else ""
        head = (
            f'<li id="{_a(name)}"{klass}>'
            f'<a href="{_a(href(directory, m.path))}">{_t(m.title)}</a>'
            f" <code>{_t(m.memory_type)}</code>"
            f' <time datetime="{_a(m.updated_at)}">{_t(m.updated_at)}</time> {status}'
            f"<br><code>{_t(name)}</code> — {_t(m.gist)}"
        )
        links = [(rel.replace("_", " "), dst) for rel, dst in m.links]
        if m.superseded_by and not any(d == m.superseded_by for _, d in m.links):
            links.insert(0, ("superseded by", m.superseded_by))
        if not links:
            return head + "</li>"
        items = "\n".join(
            f'<li><span class="rel">{_t(rel)}</span> {self._target(directory, dst)}</li>'
            for rel, dst in links
        )
        return f'{head}\n<ul class="links">\n{items}\n</ul></li>'

    def _skipped(self, directory: str, s: ListedSkip) -> str:
        name = _name(s.path)
        holder = s.duplicate_of
        if holder is None:
            # Never linked: a file that breaks the format may be one that runs or loads something.
            return (
                f'<li id="{_a(name)}"><code>{_t(name)}</code>'
                f' <strong class="status unparseable">unparseable</strong> — {_t(s.reason)}</li>'
            )
        url = href(directory, s.path)
        return (
            f'<li id="{_a(name)}"><a href="{_a(url)}"><code>{_t(name)}</code></a>'
            f' <span class="status duplicate">duplicate</span> of {self._target(directory, holder)}'
            "</li>"
        )
