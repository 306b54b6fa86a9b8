"""The published site: a front page, per-directory listings, a view page per memory,
`sitemap.xml` and a stylesheet.

Pure: index rows (and the tree's sleep reports) in, `{path: bytes}` out.
`memhtml publish` (memhtml.ops.publish) commits what this returns, or writes it
elsewhere; the sleep `integrity` phase can stage the same bytes, because these
files are `merge=ours` and a conflict is resolved by regenerating, which only
works when one generator owns the format.

- **The root `index.html`** is the front page: what the store holds, its
  folders, the memories updated last, the open tasks (by due date) and the
  last sleep runs whose reports the tree holds.
- **A directory's `index.html`** keeps the original memhtml's listing shape (a
  `<mark>` saying what the directory holds, its child directories, then one
  entry per memory: `<a>title</a> <code>type</code> <time>updated</time><br>
  <code>name</code> — gist`), with each entry's status, its authored links and
  the files the index could not read. The title opens the memory's view page,
  the file name the memory file itself.
- **`memhtml-view/<path>`** is a memory's view page (memhtml.html.memory_view):
  the memory files never change, so what a person needs around one (its head,
  links in and out, a way back) lives beside it.

Every href is relative to its page, so the site works from `file://` and from
any static server at any mount point. Deterministic: input order does not
matter, every string is escaped, and no generation time appears.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Final
from urllib.parse import quote

from memhtml.html.memory_view import render_view
from memhtml.html.site_parts import (
    DUPLICATE_PREFIX,
    GENERATED_ROOT_NAMES,
    GENERATOR,
    LISTING_NAME,
    ROOT_LABEL,
    SITEMAP_NAME,
    STYLESHEET_NAME,
    VIEW_DIR,
    ListedMemory,
    ListedRun,
    ListedSkip,
    SiteIndex,
    ancestors,
    attr,
    crumbs,
    directory_of,
    href,
    listing_path,
    name_of,
    page,
    plural,
    run_from_report,
    run_order,
    text,
    view_path,
    when,
)
from memhtml.html.site_style import STYLESHEET

__all__ = [
    "DUPLICATE_PREFIX",
    "GENERATED_ROOT_NAMES",
    "GENERATOR",
    "LISTING_NAME",
    "RECENT_SHOWN",
    "ROOT_LABEL",
    "RUNS_SHOWN",
    "SITEMAP_NAME",
    "STYLESHEET",
    "STYLESHEET_NAME",
    "TASKS_SHOWN",
    "VIEW_DIR",
    "ListedMemory",
    "ListedRun",
    "ListedSkip",
    "directory_of",
    "href",
    "listing_path",
    "render_site",
    "render_sitemap",
    "run_from_report",
    "view_path",
]

RECENT_SHOWN: Final = 10  # memories on the front page, the last updated first
TASKS_SHOWN: Final = 20  # open tasks on the front page, by due date
RUNS_SHOWN: Final = 5  # sleep runs on the front page, the newest first


def render_site(
    memories: Iterable[ListedMemory],
    skipped: Iterable[ListedSkip] = (),
    runs: Iterable[ListedRun] = (),
) -> dict[str, bytes]:
    """Every generated artifact of a corpus, by repository path, in path order.

    One listing per directory holding a memory or a skipped file, plus each of
    their ancestors up to the root (so the tree browses from the root down), a
    view page per memory, the root `sitemap.xml` (one `<url>` per indexed
    memory) and the stylesheet.
    """
    rows = sorted(memories, key=lambda m: m.path)
    skips = sorted(skipped, key=lambda s: s.path)
    by_path = {m.path: m for m in rows}
    here: dict[str, list[ListedMemory]] = {}
    skipped_here: dict[str, list[ListedSkip]] = {}
    children: dict[str, set[str]] = {"": set()}
    below: Counter[str] = Counter()  # memories in a directory and its descendants
    for path in [m.path for m in rows] + [s.path for s in skips]:
        chain = ancestors(directory_of(path))
        for child, parent in pairwise(chain):
            children.setdefault(parent, set()).add(child)
        children.setdefault(chain[0], set())
        if path in by_path:
            below.update(chain)
    inbound: dict[str, list[tuple[str, str]]] = {}
    for m in rows:
        here.setdefault(directory_of(m.path), []).append(m)
        for rel, dst in m.links:
            inbound.setdefault(dst, []).append((m.path, rel))
    for s in skips:
        skipped_here.setdefault(directory_of(s.path), []).append(s)
    index = SiteIndex(
        by_path,
        frozenset(s.path for s in skips),
        {k: tuple(sorted(v)) for k, v in inbound.items()},
        below,
    )
    out: dict[str, bytes] = {}
    for directory in sorted(children):
        dirs = sorted(children[directory])
        if directory:
            html = _listing(
                index,
                directory,
                here.get(directory, []),
                skipped_here.get(directory, []),
                dirs,
            )
        else:
            html = _front(index, rows, skips, sorted(runs, key=run_order), dirs)
        out[listing_path(directory)] = html.encode("utf-8")
    for m in rows:
        out[view_path(m.path)] = render_view(m, index).encode("utf-8")
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


def _holds(label: str, n: int) -> str:
    return (
        f"<p><mark>{text(label)} holds {plural(n, 'memory', 'memories')}.</mark>\n"
        "This listing is generated from the tree; it is not itself a memory.</p>"
    )


def _dirs(directory: str, dirs: Sequence[str], below: Counter[str]) -> list[str]:
    if not dirs:
        return []
    items = [
        f'<li><a href="{attr(href(directory, listing_path(c)))}">{text(c)}/</a>'
        f" <small>{plural(below[c], 'memory', 'memories')}</small></li>"
        for c in dirs
    ]
    return ['<ul class="dirs">', *items, "</ul>"]


# -- the front page -----------------------------------------------------------------------
def _front(
    index: SiteIndex,
    rows: Sequence[ListedMemory],
    skips: Sequence[ListedSkip],
    runs: Sequence[ListedRun],
    dirs: Sequence[str],
) -> str:
    active = [m for m in rows if m.status == "active"]
    tasks = [m for m in active if m.memory_type == "task" and m.task_status != "done"]
    tasks.sort(key=lambda m: (m.due_at is None, m.due_at or "", m.path))
    recent = sorted(
        (m for m in active if m.memory_type != "task"), key=lambda m: (m.updated_at, m.path)
    )
    recent = sorted(recent[-RECENT_SHOWN:], key=lambda m: m.updated_at, reverse=True)
    unparseable = sum(1 for s in skips if s.duplicate_of is None)
    stats = [
        f"<li><strong>{len(active)}</strong> active</li>",
        f"<li><strong>{len(rows) - len(active)}</strong> archived</li>",
        f"<li><strong>{len(tasks)}</strong> open {'task' if len(tasks) == 1 else 'tasks'}</li>",
    ]
    if skips:
        stats.append(
            f"<li><strong>{len(skips)}</strong> not indexed ({unparseable} unparseable,"
            f" {len(skips) - unparseable} duplicate)</li>"
        )
    stats.append(f'<li><a href="{SITEMAP_NAME}">sitemap.xml</a></li>')
    body = [
        "<article>",
        f"<h1>{ROOT_LABEL}</h1>",
        _holds(ROOT_LABEL, len(rows)),
        f'<ul class="stats">{"".join(stats)}</ul>',
    ]
    if dirs:
        body += ["<h2>Folders</h2>", *_dirs("", dirs, index.below)]
    body += ['<div class="board">', '<section class="recent">']
    body.append(
        f"<h2>Recently updated <small>(the last {len(recent)} of {len(active) - len(tasks)})"
        "</small></h2>"
        if recent
        else "<h2>Recently updated</h2>"
    )
    body += _recent(index, recent) if recent else ['<p class="muted">No memory yet.</p>']
    body += ["</section>", '<section class="side">', *_runs(runs), *_tasks(index, tasks)]
    body += ["</section>", "</div>", "</article>"]
    return page("", ROOT_LABEL, crumbs("", ""), body)


def _folder_link(page_dir: str, path: str) -> str:
    folder = directory_of(path)
    url = href(page_dir, listing_path(folder), name_of(path))
    return f'in <a href="{attr(url)}">{text(folder)}</a>'


def _recent(index: SiteIndex, recent: Sequence[ListedMemory]) -> list[str]:
    items = [
        f'<li><a class="title" href="{attr(href("", view_path(m.path)))}">{text(m.title)}</a>'
        f' <code class="type">{text(m.memory_type)}</code> {when(m.updated_at, "updated")}'
        f"<br>{text(m.gist)} <small>{_folder_link('', m.path)}</small></li>"
        for m in recent
    ]
    return ['<ul class="recent">', *items, "</ul>"]


def _tasks(index: SiteIndex, tasks: Sequence[ListedMemory]) -> list[str]:
    if not tasks:
        return ["<h2>Open tasks</h2>", '<p class="muted">No open task.</p>']
    items = []
    for m in tasks[:TASKS_SHOWN]:
        status = m.task_status or "todo"
        due = f"due {when(m.due_at, 'due')}" if m.due_at else "no due date"
        items.append(
            f'<li><span class="status {attr(status)}">{text(status)}</span>'
            f' <a class="title" href="{attr(href("", view_path(m.path)))}">{text(m.title)}</a>'
            f"<br><small>{due} · {_folder_link('', m.path)}</small></li>"
        )
    more = len(tasks) - TASKS_SHOWN
    tail = [f'<p class="muted">… and {more} more (memhtml task list).</p>'] if more > 0 else []
    return [
        f"<h2>Open tasks <small>({len(tasks)}, by due date)</small></h2>",
        '<ul class="tasks">',
        *items,
        "</ul>",
        *tail,
    ]


def _runs(runs: Sequence[ListedRun]) -> list[str]:
    if not runs:
        return [
            "<h2>Sleep runs</h2>",
            '<p class="muted">No sleep run has been merged into this tree yet.</p>',
        ]
    shown = list(reversed(runs))[:RUNS_SHOWN]
    count = len(runs) if len(shown) == len(runs) else f"the last {len(shown)} of {len(runs)}"
    items = [
        f'<li><a href="{attr(href("", r.report_path))}"><strong>{text(r.run_id)}</strong></a>'
        f" — {text(r.summary) or 'report'}</li>"
        for r in shown
    ]
    return [
        f"<h2>Sleep runs <small>({count})</small></h2>",
        '<ul class="runs">',
        *items,
        "</ul>",
    ]


# -- a directory's listing ----------------------------------------------------------------
def _listing(
    index: SiteIndex,
    directory: str,
    rows: Sequence[ListedMemory],
    skips: Sequence[ListedSkip],
    dirs: Sequence[str],
) -> str:
    body = ["<article>", f"<h1>{text(directory)}/</h1>", _holds(directory, index.below[directory])]
    body += _dirs(directory, dirs, index.below)
    if rows:
        body += ['<ul class="memories">', *[_entry(index, directory, m) for m in rows], "</ul>"]
    if skips:
        body.append(f"<p>{plural(len(skips), 'file here is', 'files here are')} not indexed:</p>")
        body += ['<ul class="skipped">', *[_skipped(index, directory, s) for s in skips], "</ul>"]
    body.append("</article>")
    return page(directory, directory, crumbs(directory, directory), body)


def _entry(index: SiteIndex, directory: str, m: ListedMemory) -> str:
    name = name_of(m.path)
    archived = m.status == "archived"
    status = f'<span class="status {attr(m.status)}">{text(m.status)}</span>'
    if archived and m.archived_at:
        status += f" {when(m.archived_at, 'archived')}"
    if m.task_status:
        status += f' <span class="status {attr(m.task_status)}">{text(m.task_status)}</span>'
    klass = ' class="archived"' if archived else ""
    head = (
        f'<li id="{attr(name)}"{klass}>'
        f'<a href="{attr(href(directory, view_path(m.path)))}">{text(m.title)}</a>'
        f' <code class="type">{text(m.memory_type)}</code>'
        f" {when(m.updated_at, 'updated')} {status}"
        f'<br><a class="file" href="{attr(href(directory, m.path))}"><code>{text(name)}</code></a>'
        f" — {text(m.gist)}"
    )
    links = [(rel.replace("_", " "), dst) for rel, dst in m.links]
    if m.superseded_by and not any(d == m.superseded_by for _, d in m.links):
        links.insert(0, ("superseded by", m.superseded_by))
    if not links:
        return head + "</li>"
    items = "\n".join(
        f'<li><span class="rel">{text(rel)}</span> {index.target(directory, dst)}</li>'
        for rel, dst in links
    )
    return f'{head}\n<ul class="links">\n{items}\n</ul></li>'


def _skipped(index: SiteIndex, directory: str, s: ListedSkip) -> str:
    name = name_of(s.path)
    holder = s.duplicate_of
    if holder is None:
        # Never linked: a file that breaks the format may be one that runs or loads something.
        return (
            f'<li id="{attr(name)}"><code>{text(name)}</code>'
            f' <strong class="status unparseable">unparseable</strong> — {text(s.reason)}</li>'
        )
    url = href(directory, s.path)
    return (
        f'<li id="{attr(name)}"><a href="{attr(url)}"><code>{text(name)}</code></a>'
        f' <span class="status duplicate">duplicate</span> of {index.target(directory, holder)}'
        "</li>"
    )
