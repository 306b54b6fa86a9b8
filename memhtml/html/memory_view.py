"""A memory's view page (`memhtml-view/<memory path>`): the memory as a person browses it.

A memory file may carry nothing that would make its head visible or give it a
way back (no class, style, script or navigation of its own: docs/format.md),
and publish never changes a memory's bytes (its content hash and blob stay
what was written). So the site shows each memory through a page beside it:
title, claim, type and status, its dates, validity, importance and facets,
the authored links out and in (each to the other memory's view), a way back
to its folder's listing, and the file itself, linked and framed (a sandboxed
`<iframe>`: no script could run in it even if one were there).
"""

from __future__ import annotations

from memhtml.html.site_parts import (
    ListedMemory,
    SiteIndex,
    attr,
    crumbs,
    directory_of,
    href,
    listing_path,
    name_of,
    page,
    text,
    view_path,
    when,
)


def _chips(m: ListedMemory) -> str:
    status = f'<span class="status {attr(m.status)}">{text(m.status)}</span>'
    task = (
        f' <span class="status {attr(m.task_status)}">task: {text(m.task_status)}</span>'
        if m.task_status
        else ""
    )
    return f'<p><code class="type">{text(m.memory_type)}</code> {status}{task}</p>'


def _facts(m: ListedMemory) -> str:
    rows: list[tuple[str, str]] = [
        ("Created", when(m.created_at, "created")),
        ("Updated", when(m.updated_at, "updated")),
        ("Happened", when(m.event_at, "happened")),
        ("Valid from", when(m.valid_from, "valid from")),
        ("Valid until", when(m.valid_until, "valid until")),
        ("Archived", when(m.archived_at, "archived")),
        ("Due", when(m.due_at, "due")),
        ("Importance", f"{m.importance} of 10" if m.importance is not None else ""),
        ("Confidence", f"{m.confidence:g}" if m.confidence is not None else ""),
        ("Author", text(m.author) if m.author else ""),
        ("Tags", " ".join(f'<span class="chip">{text(t)}</span>' for t in m.tags)),
        ("Entities", " ".join(f'<span class="chip">{text(e)}</span>' for e in m.entities)),
    ]
    rows += [(name, text(value)) for name, value in m.facets]
    items = "".join(f"<dt>{text(k)}</dt><dd>{v}</dd>" for k, v in rows if v)
    return f'<dl class="facts">{items}</dl>'


def _links_out(page_dir: str, m: ListedMemory, index: SiteIndex) -> list[str]:
    if not m.links:
        return ["<h2>Links out</h2>", '<p class="muted">This memory links to no other.</p>']
    items = [
        f'<li><span class="rel">{text(rel.replace("_", " "))}</span>'
        f" {index.target(page_dir, dst)}</li>"
        for rel, dst in m.links
    ]
    return [
        f"<h2>Links out <small>({len(m.links)})</small></h2>",
        '<ul class="links">',
        *items,
        "</ul>",
    ]


def _links_in(page_dir: str, m: ListedMemory, index: SiteIndex) -> list[str]:
    inbound = index.inbound.get(m.path, ())
    if not inbound:
        return ["<h2>Links in</h2>", '<p class="muted">No memory links here.</p>']
    items = [
        f"<li>{index.target(page_dir, src)}"
        f' <span class="rel">{text(rel.replace("_", " "))}</span> this memory</li>'
        for src, rel in inbound
    ]
    return [
        f"<h2>Links in <small>({len(inbound)})</small></h2>",
        '<ul class="links">',
        *items,
        "</ul>",
    ]


def render_view(m: ListedMemory, index: SiteIndex) -> str:
    """The view page of memory `m`."""
    page_dir = directory_of(view_path(m.path))
    folder = directory_of(m.path)
    file_url = attr(href(page_dir, m.path))
    back = href(page_dir, listing_path(folder), name_of(m.path))
    body = ["<article>", f"<h1>{text(m.title)}</h1>", _chips(m)]
    if m.status == "archived":
        successor = (
            f"; superseded by {index.target(page_dir, m.superseded_by)}" if m.superseded_by else ""
        )
        body.append(
            f'<p class="banner">Archived {when(m.archived_at, "archived")}{successor}.'
            " An archived memory is history: search leaves it out unless asked.</p>"
        )
    body += [
        f'<p class="claim"><mark>{text(m.gist)}</mark></p>',
        '<div class="board">',
        f'<section class="about"><h2>About</h2>{_facts(m)}</section>',
        '<section class="side">',
        *_links_out(page_dir, m, index),
        *_links_in(page_dir, m, index),
        "</section>",
        "</div>",
        '<section class="file">',
        "<h2>The file</h2>",
        f'<p><a class="file" href="{file_url}"><code>{text(m.path)}</code></a>'
        " <small>the memory itself, byte for byte</small></p>",
        f'<iframe sandbox src="{file_url}" title="{attr(m.path)}" loading="lazy"></iframe>',
        "</section>",
        f'<p class="back"><a href="{attr(back)}">&larr; Back to {text(folder)}</a></p>',
        "</article>",
    ]
    return page(page_dir, m.title, crumbs(page_dir, folder, last=m.title), body)
