"""Terminal views of the store's state: status (one screen), entity activity, the index
commands."""

from __future__ import annotations

from typing import Any

from memhtml.cli.text import columns, listed, pairs, plural, sha, when


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def _coverage(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def status(data: dict[str, Any]) -> str:
    """One screen: the root and HEAD, memories by type and folder, the index, the remote."""
    dirty = data.get("dirty_paths") or []
    tree = "clean" if not data.get("dirty") else f"{plural(len(dirty), 'uncommitted change')}"
    active, archived = data.get("active_count", 0), data.get("archived_count", 0)
    memories = f"{active:,} active, {archived:,} archived"
    if data.get("counts_by_type"):
        memories += f" ({_counts(data['counts_by_type'])})"
    if data.get("index_fresh"):
        index = "up to date with HEAD"
    else:
        index = f"behind (at {sha(data.get('index_head_sha'))}; memhtml index update)"
    index += f"; {data.get('chunks', 0):,} chunks"
    if data.get("embed_model"):
        index += (
            f", {data.get('embeddings', 0):,} vectors of {data['embed_model']}"
            f" (coverage {_coverage(data.get('vector_coverage'))})"
        )
    else:
        index += ", no vectors (lexical search only)"
    if data.get("skipped_files"):
        index += f"; {plural(data['skipped_files'], 'file')} skipped (memhtml doctor)"
    rows = [
        ("root", f"{data.get('root')}"),
        ("HEAD", f"{sha(data.get('head_sha'))} ({tree})"),
        ("memories", memories),
        ("folders", _counts(data.get("counts_by_bucket") or {}) or "-"),
        ("index", index),
        (
            "links",
            f"{data.get('edges', 0):,}; usage recorded: {'yes' if data.get('has_state') else 'no'}",
        ),
    ]
    remote = data.get("remote")
    if remote:
        if remote.get("ahead") is None:
            where = "not fetched yet (memhtml sync)"
        else:
            where = f"{remote['ahead']} ahead, {remote['behind']} behind, as last fetched"
        rows.append(("remote", f"{remote['remote']}/{remote['branch']}: {where}"))
    lines = pairs(rows, indent=0)
    if dirty:
        lines += ["", "uncommitted:", *listed(dirty, limit=10, more="git status")]
    return "\n".join(lines)


def entity_activity(data: dict[str, Any]) -> str:
    """One row an entity: memories and the three clocks."""
    entities = data.get("entities") or []
    if not entities:
        return "no entities"
    rows = [["entity", "memories", "last activity", "last event", "last write"]]
    for e in entities:
        rows.append(
            [
                f"{e['entity_type']}:{e['entity_name']}",
                str(e.get("memories", 0)),
                when(e.get("last_activity_at")),
                when(e.get("last_event_at")),
                when(e.get("last_written_at")),
            ]
        )
    lines = columns(rows)
    total = data.get("entity_count", len(entities))
    if total > len(entities):
        lines.append(f"{len(entities)} of {total:,} shown (--limit)")
    return "\n".join(lines)


def _vectors(v: dict[str, Any]) -> str:
    if not v:
        return ""
    text = f"vectors: {v.get('embedded', 0):,} embedded, {v.get('pending', 0):,} pending"
    if v.get("model"):
        text += f" ({v['model']})"
    if v.get("error"):
        text += f"; {v['error']}"
    return text


def index_report(data: dict[str, Any]) -> str:
    """What a rebuild, an update or an embedding pass did."""
    mode = data.get("mode")
    if mode == "embed":
        if data.get("dry_run"):
            model = data.get("model") or "no embedder"
            return f"{plural(data.get('pending', 0), 'chunk')} would be embedded ({model})"
        return _vectors(data) or "nothing to embed"
    verb = {"rebuild": "rebuilt the index", "update": "updated the index"}.get(mode or "", mode)
    lines = [
        f"{verb} at {sha(data.get('head_sha'))}: {data.get('projected', 0):,} projected,"
        f" {data.get('deleted', 0):,} deleted, {data.get('moved', 0):,} moved"
        f" in {data.get('elapsed_ms', 0):.0f} ms"
    ]
    skipped = data.get("skipped") or []
    if skipped:
        lines.append(f"  skipped {plural(len(skipped), 'file')}:")
        lines += listed(
            [
                f"{s['path']}: {s.get('reason', '')}" if isinstance(s, dict) else str(s)
                for s in skipped
            ],
            limit=10,
            indent=4,
            more="memhtml doctor",
        )
    if data.get("vectors"):
        lines.append("  " + _vectors(data["vectors"]))
    lines += [f"  warning: {w}" for w in data.get("warnings") or []]
    return "\n".join(lines)


def index_status(data: dict[str, Any]) -> str:
    """Freshness, row counts and the vector space."""
    vs = data.get("vector_space") or {}
    if data.get("index_fresh"):
        fresh = f"up to date with HEAD {sha(data.get('head_sha'))}"
    else:
        fresh = f"behind: at {sha(data.get('watermark'))}, HEAD {sha(data.get('head_sha'))}"
        if data.get("worktree_drift_count"):
            fresh += f", {plural(data['worktree_drift_count'], 'uncommitted edit')} not read"
        fresh += " (memhtml index update)"
    space = vs.get("model") or "none"
    if vs.get("model"):
        space += f", {vs.get('dim')} dimensions; coverage {_coverage(vs.get('coverage'))}"
        space += f" ({vs.get('chunks_with_vectors', 0):,} of {vs.get('chunks_active', 0):,} chunks)"
    configured = vs.get("configured_model") or "off"
    if vs.get("model") and vs.get("configured_model") and not vs.get("matches"):
        configured += " (does NOT match the stored vectors: memhtml index migrate)"
    rows = [
        ("index", fresh),
        (
            "files",
            f"{data.get('active_files', 0):,} active, {data.get('archived_files', 0):,}"
            f" archived, {data.get('skipped_files', 0):,} skipped",
        ),
        (
            "rows",
            ", ".join(
                [
                    plural(data.get("chunks", 0), "chunk"),
                    plural(data.get("embeddings", 0), "vector"),
                    plural(data.get("edges", 0), "link")
                    + f" ({data.get('derived_edges', 0):,} derived)",
                    plural(data.get("tags", 0), "tag"),
                    plural(data.get("entities", 0), "entity", "entities"),
                    plural(data.get("access_rows", 0), "usage row"),
                ]
            ),
        ),
        ("vectors", space),
        ("embedder", configured),
        ("rebuilt", when(data.get("rebuilt_at"))),
        ("updated", when(data.get("updated_at"))),
    ]
    if vs.get("embedder_error"):
        rows.append(("embedder error", vs["embedder_error"]))
    if vs.get("migration"):
        m = vs["migration"]
        rows.append(
            ("migration", f"to {m.get('to')}: {m.get('state')} (memhtml index migrate --status)")
        )
    if data.get("rebuilding"):
        rows.append(("rebuilding", "a rebuild was left half done (memhtml index rebuild)"))
    return "\n".join(pairs(rows, indent=0))
