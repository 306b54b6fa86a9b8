"""The `publish` command: the corpus as a static site (memhtml.ops.publish, docs/publish.md)."""

from __future__ import annotations

from typing import Final

from memhtml.surface.spec import Command, Param

PUBLISH_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "publish",
        "Write the corpus as a static site (front page, folder listings, a view per"
        " memory), committed, or to --out.",
        "publish.report",
        "memhtml.cli.handlers.publish:publish",
        params=(
            Param(
                "out",
                "write the site and a copy of every listed memory into DIR (outside the"
                " memory root) instead of committing",
                metavar="DIR",
            ),
        ),
        errors=(
            "ERR_DIRTY_TREE",
            "ERR_OUT_INSIDE_REPO",
            "ERR_INVALID_FLAG",
            "ERR_WRITE_CONFLICT",
            "ERR_REPO_REQUIRED",
            "ERR_GIT",
        ),
        examples=("memhtml publish", "memhtml publish --out /tmp/memory-site"),
        details=(
            "The root index.html is a front page: counts, folders, the 10 memories updated"
            " last, the last 5 sleep runs whose reports the tree holds, open tasks by due date."
            " One index.html per directory holding a memory (and each ancestor up to the root):"
            " each memory's title (to its view), claim, type, status, updated date, file and"
            " authored links; archived memories listed under archive/ and marked; files the"
            " index could not read listed as unparseable (never linked) or duplicate. A view"
            " page per memory, memhtml-view/<path>: its head (dates, validity, importance,"
            " tags, entities, facets), links out and in, the file itself framed, the way back"
            " to its folder; memory files are never changed. Root sitemap.xml and memhtml.css."
            " The first publish that commits adds `memhtml-view/** merge=ours` to"
            " .gitattributes. Every"
            " href is relative (file:// and any static server work); no JavaScript. Without"
            " --out the files are committed in one commit (commit_sha null when nothing changed)"
            " and listings of directories that hold nothing any more (and views of memories that"
            " moved) are removed; uncommitted"
            " memory edits are ERR_DIRTY_TREE. --out DIR is created if absent, gets the site"
            " plus a copy of every listed memory and report (copied), only files whose bytes"
            " differ are"
            " written, and nothing there is deleted; a DIR inside the memory root is"
            " ERR_OUT_INSIDE_REPO (exit 2). data: root, out, artifacts, written, paths, removed,"
            " copied, commit_sha, memories, archived, unparseable, duplicates."
        ),
    ),
)
