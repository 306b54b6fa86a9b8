"""`memhtml status` and `memhtml doctor`: one-screen summary and corpus health."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import PathNotFoundError
from memhtml.html import parse_memory
from memhtml.index.indexer import indexable
from memhtml.store.history import path_reuse
from memhtml.store.recovery import interrupted_batch, stale_git_lock

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus
    from memhtml.store.git import Git

PREFIXES: Final = ("projects/", "areas/", "resources/", "archive/")


def validate_files(paths: Sequence[str], repo: str | None = None) -> dict[str, Any]:
    """Parse each file and report its violations and warnings (no repository needed)."""
    from memhtml.contracts.paths import is_memory_path
    from memhtml.ops.config import resolve_root

    root = resolve_root(repo)
    files: list[dict[str, Any]] = []
    from memhtml.contracts.paths import filesystem_path

    for raw in paths:
        filesystem_path(raw)  # an over-long or spoofing name is ERR_INVALID_PATH, not an OSError
        # A memory path names a file of the memory root, wherever the command runs;
        # anything else (or a memory path the root lacks) is taken from here.
        in_root = root / raw
        target = in_root if is_memory_path(raw) and in_root.is_file() else Path(raw)
        if not target.is_file():
            raise PathNotFoundError(
                f"no file at {raw} (looked in {root} and here)",
                suggestions=["memhtml doctor --repo <root> <memory path>"],
            )
        doc = parse_memory(target.read_bytes())
        files.append(
            {
                "path": raw,
                "ok": doc.ok,
                "memory_type": doc.memory_type,
                "content_hash": doc.content_hash if doc.ok else None,
                "violations": [{"code": v.code, "message": v.message} for v in doc.violations],
                "warnings": [{"code": w.code, "message": w.message} for w in doc.warnings],
            }
        )
    return {"mode": "files", "files": files, "healthy": all(f["ok"] for f in files)}


def status(corpus: Corpus) -> dict[str, Any]:
    """HEAD, dirty paths, counts by type and bucket, index freshness, vector space, and
    commits ahead of / behind the remote as last fetched."""
    from memhtml.ops.sync import ahead_behind

    corpus.catch_up()
    conn = corpus.conn
    head = corpus.git.head()
    dirty = sorted({e.path for e in corpus.git.status()})
    counts = dict(
        conn.execute(
            "SELECT memory_type, count(*) FROM files WHERE archived = 0 GROUP BY memory_type"
            " ORDER BY memory_type"
        ).fetchall()
    )
    buckets = dict(
        conn.execute("SELECT para, count(*) FROM files GROUP BY para ORDER BY para").fetchall()
    )
    index = corpus.index.status()
    return {
        "root": str(corpus.root),
        "head_sha": head,
        "dirty": bool(dirty),
        "dirty_paths": dirty[:200],
        "counts_by_type": counts,
        "counts_by_bucket": buckets,
        "active_count": sum(counts.values()),
        "archived_count": index["archived_files"],
        "edges": index["edges"],
        "chunks": index["chunks"],
        "embeddings": index["embeddings"],
        "index_fresh": index["index_fresh"],
        "index_head_sha": index["watermark"],
        "embed_model": index["vector_space"]["model"],
        "embedder_up": bool(index["vector_space"]["matches"] and index["embeddings"] > 0),
        "vector_coverage": index["vector_space"]["coverage"],
        "has_state": index["access_rows"] > 0,
        "skipped_files": index["skipped_files"],
        "remote": ahead_behind(corpus.git),  # as last fetched; None without a remote
    }


def corpus_health(corpus: Corpus) -> dict[str, Any]:
    """Unparseable files, dangling links, freshness, vector coverage, orphan access rows, and
    the advisory findings (overdue tasks, stale blockers, untyped entities): the
    `doctor.report` payload, each repairable finding with what `--fix` would do."""
    from memhtml.ops import doctor_checks as checks
    from memhtml.ops.config import coverage_floor

    corpus.catch_up()
    conn = corpus.conn
    root = corpus.root
    memories, others = _walk_memory_folders(root)  # one walk serves both checks
    unparseable, warnings = _reread(root, memories)
    flagged = [w["path"] for w in warnings if any(_drops_entity(x) for x in w["warnings"])]
    # An untyped entity is advisory (as in the original, which files it under `unknown`):
    # reported in untyped_entities, it alone does not make a file's warnings unhealthy.
    format_warnings = [w for w in warnings if not all(_drops_entity(x) for x in w["warnings"])]
    untyped, untyped_total = checks.untyped_entities(root, conn, flagged)
    dirty = sorted({e.path for e in corpus.git.status(PREFIXES)})
    link_to, row_to = checks.destinations(corpus)
    dangling = checks.plan_links(conn, link_to, set(dirty))
    orphan_fix = checks.plan_access_rows(conn, row_to)
    orphans = [r["path"] for r in orphan_fix]
    inbox = conn.execute(
        "SELECT count(*) FROM files WHERE archived = 0 AND path LIKE 'areas/inbox/%'"
        " AND memory_type <> 'task'"
    ).fetchone()[0]
    task_inbox = checks.inbox_task_depth(conn)
    index = corpus.index.status()
    vs = index["vector_space"]
    coverage = vs["coverage"]
    floor = coverage_floor()
    # Only a plane in use can be too sparse: with no vector and no embedder, a lexical-only
    # store is a supported setup (its searches say `degraded`), not an unhealthy one.
    in_use = index["embeddings"] > 0 or vs["configured_model"] is not None
    coverage_low = in_use and coverage is not None and coverage < floor
    stale_lock = stale_git_lock(root)
    interrupted = interrupted_batch(root)
    reuse = path_reuse(corpus.git, PREFIXES)
    unseen = unseen_files(root, others)
    planes = committed_planes(corpus.git)
    healthy = (
        not unseen
        and not unparseable
        and not dangling
        and not orphans
        and not format_warnings
        and stale_lock is None
        and interrupted is None
        and not reuse
        and not planes
        and index["index_fresh"]
        and inbox <= checks.INBOX_WARN_DEPTH
        and task_inbox <= checks.INBOX_TASK_WARN_DEPTH
        and not coverage_low
        and (vs["model"] is None or vs["matches"])
    )
    report: dict[str, Any] = {
        "mode": "corpus",
        "root": str(root),
        "healthy": healthy,
        "unparseable": unparseable,
        "warnings": warnings,
        "format_warnings": len(format_warnings),
        "dangling": dangling,
        "orphan_access_rows": orphans,
        "orphan_access_fix": orphan_fix,
        "stale_git_lock": None if stale_lock is None else str(stale_lock.relative_to(root)),
        "interrupted_batch": interrupted,
        "set_aside_planes": index["set_aside"],
        "path_reuse": reuse,
        "committed_planes": planes,
        "inbox_depth": inbox,
        "inbox_crowded": inbox > checks.INBOX_WARN_DEPTH,
        "inbox_task_depth": task_inbox,
        "inbox_tasks_crowded": task_inbox > checks.INBOX_TASK_WARN_DEPTH,
        "overdue_tasks": checks.overdue_tasks(conn, corpus.clock()),
        "stale_blockers": checks.stale_blockers(conn),
        "untyped_entities": untyped,
        "untyped_entity_total": untyped_total,
        "index_fresh": index["index_fresh"],
        "index_head_sha": index["watermark"],
        "head_sha": index["head_sha"],
        "dirty": dirty,
        "stored_embed_model": vs["model"],
        "configured_embed_model": vs["configured_model"],
        "embed_model_matches": vs["model"] is None or vs["matches"],
        "vector_coverage": coverage,
        "vector_coverage_floor": floor,
        "vector_coverage_low": coverage_low,
        "unseen": unseen,
        "skipped_by_index": [
            {"path": p, "reason": r}
            for p, r in conn.execute("SELECT path, reason FROM skipped_files ORDER BY path")
        ],
    }
    plan = checks.fix_plan(report)
    report["fix_would"] = plan
    report["repairable"] = bool(plan)
    report["suggestions"] = (
        (["memhtml doctor --fix"] if plan else [])
        + (["memhtml index update"] if not index["index_fresh"] else [])
        + (["memhtml index embed"] if coverage_low else [])
        + (
            [f"git rm --cached -r -- {' '.join(planes)} && git commit (HEAD tracks local state)"]
            if planes
            else []
        )
    )
    return report


def _reread(root: Path, memories: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The memory files the walk found, parsed again: (unparseable ones, ones with warnings)."""
    unparseable: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    for path in sorted(memories):
        doc = parse_memory((root / path).read_bytes())
        if not doc.ok:
            unparseable.append(
                {
                    "path": path,
                    "violations": [{"code": v.code, "message": v.message} for v in doc.violations],
                }
            )
        elif doc.warnings:
            warnings.append(
                {
                    "path": path,
                    "warnings": [{"code": w.code, "message": w.message} for w in doc.warnings],
                }
            )
    return unparseable, warnings


def _drops_entity(warning: dict[str, str]) -> bool:
    """True for the warning a bare entity name gets (`memhtml-entity='x' dropped: ...`)."""
    return warning["code"] == "dropped-meta" and warning["message"].startswith("memhtml-entity=")


def _why_unseen(root: Path, rel: str) -> str | None:
    """Why the index never reads this memory-looking file, in words; None for a publish
    listing (publish's own `index.html`, which is not a memory and is meant to be skipped)."""
    from memhtml.contracts.errors import InvalidPathError
    from memhtml.contracts.paths import memory_path
    from memhtml.contracts.vocab import GENERATED_NAMES
    from memhtml.html.listing import GENERATOR

    name = rel.rsplit("/", 1)[-1]
    if name.lower() in GENERATED_NAMES:
        try:
            head = (root / rel).read_bytes()[:4096]
        except OSError:
            head = b""
        if name == "index.html" and f'content="{GENERATOR}"'.encode() in head:
            return None
        return (
            f"{name} is a name publish generates: the index never reads it, search, list and"
            " read never show it, and publish overwrites it. Rename it to another .html name"
            " (git mv) to make it a memory"
        )
    if not name.endswith(".html"):
        return "a memory's name ends in lowercase .html; rename it (git mv) to be read"
    try:
        memory_path(rel)
    except InvalidPathError as exc:
        return exc.message
    return "the index does not read this path"


def unseen_files(root: Path, candidates: list[str] | None = None) -> list[dict[str, str]]:
    """Memory-looking files (.html, .htm) in the memory folders the index never reads, and why.

    `candidates`: the walk's memory-looking paths the index does not read, when the
    caller walked already (`_walk_memory_folders`)."""
    if candidates is None:
        candidates = _walk_memory_folders(root)[1]
    out: list[dict[str, str]] = []
    for rel in candidates:
        why = _why_unseen(root, rel)
        if why is not None:
            out.append({"path": rel, "reason": why})
    return sorted(out, key=lambda u: u["path"])


def committed_planes(git: Git) -> list[str]:
    """Machine-local state HEAD tracks (`.memhtml/index.db`, ...): a commit of it overwrites
    every clone's planes at checkout, and its working copy keeps the tree dirty."""
    from memhtml.store.incoming import is_plane

    head = git.head()
    if head is None:
        return []
    return [e.path for e in git.ls_tree(head, [".memhtml/"]) if is_plane(e.path)]


def _walk_memory_folders(root: Path) -> tuple[list[str], list[str]]:
    """One walk of the memory folders (symlinked folders not followed): the files the index
    reads (lowercase `.html`, indexable paths), and the other memory-looking files (`.html`,
    `.htm` in any case) it never reads. `os.scandir` hands each entry's type over with its
    name, so a million memories cost one pass of directory reads, not a stat each."""
    memories: list[str] = []
    others: list[str] = []
    stack = [p.rstrip("/") for p in PREFIXES if (root / p).is_dir()]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(root / rel_dir))
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                stack.append(rel)
                continue
            if not entry.name.lower().endswith((".html", ".htm")) or not entry.is_file():
                continue
            if indexable(rel):
                if entry.name.endswith(".html"):
                    memories.append(rel)
            else:
                others.append(rel)
    return memories, others
