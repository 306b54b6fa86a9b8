"""Projection: one parsed memory file to the rows that index it. Pure.

Rebuild and update both call :func:`project_file`, which is what makes a
fresh rebuild reproduce the incremental row set rather than two
implementations happening to agree.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from memhtml.contracts.paths import memory_path
from memhtml.contracts.vocab import REL_CLASS
from memhtml.domain.chunking import chunk_id, chunk_text
from memhtml.html import MemoryDocument, parse_memory

# One list drives the INSERT column list, its placeholders and the upsert's
# assignments: a column added to one and forgotten in another would bind every
# later value to the wrong column while every CHECK still passed.
FILE_COLUMNS: Final[tuple[str, ...]] = (
    "path",
    "blob_sha",
    "content_hash",
    "memory_type",
    "status",
    "title",
    "gist",
    "body_text",
    "fts_text",
    "disclosure_text",
    "para",
    "workspace",
    "confidence",
    "importance",
    "archived",
    "origin_path",
    "word_count",
    "created_at",
    "updated_at",
    "event_at",
    "archived_at",
    "valid_from",
    "valid_until",
    "reprieves",
    "needs_revision",
    "author",
    "session_id",
    "prompt_id",
    "turn_uuid",
    "superseded_by",
    "task_status",
    "due_at",
    "fold_count",
    "indexed_at",
)


# NamedTuples, not frozen dataclasses: those generate their methods with `exec` at import.
class Projection(NamedTuple):
    """Every row one file contributes to the index."""

    file: dict[str, Any]  # FILE_COLUMNS except indexed_at (the writer stamps it)
    tags: tuple[str, ...]
    entities: tuple[tuple[str, str, str], ...]  # (type, name, source)
    aliases: tuple[str, ...]
    facets: tuple[tuple[int, str, str, float | None], ...]  # (ordinal, name, value, numeric)
    citations: tuple[tuple[int, str, str | None], ...]  # (ordinal, text, url)
    edges: tuple[tuple[str, str, str], ...]  # (dst_path, rel, edge_class)
    chunks: tuple[tuple[int, str, str], ...]  # (ordinal, chunk_id, text)

    @property
    def path(self) -> str:
        """The projected file's path."""
        return str(self.file["path"])


class Parsed(NamedTuple):
    """One file's projection, or why it has none (the reasons of its first violations)."""

    proj: Projection | None
    reason: str | None


def project_bytes(
    path: str,
    data: bytes,
    sha: str | None,
    doc: MemoryDocument | None = None,
    *,
    facts: PathFacts | None = None,
) -> Parsed:
    """Parse `data` (unless `doc` is its parse already) and project it at `path`
    (whose `facts` the caller may have derived already)."""
    doc = doc if doc is not None else parse_memory(data)
    if not doc.ok:
        reasons = "; ".join(f"{v.code}: {v.message}" for v in doc.violations[:3])
        return Parsed(None, reasons or "unparseable")
    return Parsed(project_file(doc, path, sha, facts), None)


class PathFacts(NamedTuple):
    """What the index derives from a memory path (memhtml.contracts.paths spells each rule)."""

    archived: bool  # is_archived_path
    para: str  # para_of
    origin: str  # live_path_of
    workspace: str | None  # workspace_of


def path_facts(path: str) -> PathFacts:
    """The facts of a memory path, validated once (InvalidPathError for a bad path).

    The contracts functions each re-validate the path; a rebuild would pay for
    five validations per file. A test holds these equal to them.
    """
    segments = memory_path(path).split("/")
    archived = segments[0] == "archive"
    live = segments[2:] if archived else segments
    return PathFacts(
        archived=archived,
        para=segments[0],
        origin="/".join(live) if archived else path,
        workspace=live[1] if live[0] == "projects" and len(live) > 2 else None,
    )


def _unique(values: list[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(values))


def disclosure_text(doc: MemoryDocument) -> str:
    """What recall may quote: claim, summaries, facets, citations; never details or asides."""
    parts = [doc.gist, *doc.summaries]
    parts += [f"{f.name}: {f.value}" for f in doc.facets]
    parts += [c.text for c in doc.citations]
    return "\n".join(p.strip() for p in parts if p and p.strip())


def project_file(
    doc: MemoryDocument, path: str, blob_sha: str | None, facts: PathFacts | None = None
) -> Projection:
    """The rows for `doc` at `path`. `doc` must be valid (no violations)."""
    if not doc.ok or doc.memory_type is None:
        raise ValueError(f"cannot project {path}: the document has violations")
    facts = path_facts(path) if facts is None else facts
    archived = facts.archived
    file: dict[str, Any] = {
        "path": path,
        "blob_sha": blob_sha,
        "content_hash": doc.content_hash,
        "memory_type": doc.memory_type,
        "status": doc.status or ("archived" if archived else "active"),
        "title": doc.title,
        "gist": doc.gist,
        "body_text": doc.body_text,
        "fts_text": "\n".join((doc.title, doc.gist, doc.body_text)),
        "disclosure_text": disclosure_text(doc),
        "para": facts.para,
        "workspace": facts.workspace,
        "confidence": doc.confidence,
        "importance": doc.importance,
        # The path records archived-ness; a stale status meta must not
        # re-enter a file into retrieval or break the dedup index.
        "archived": 1 if archived else 0,
        "origin_path": facts.origin,
        "word_count": len(doc.body_text.split()),
        "created_at": doc.created,
        "updated_at": doc.updated,
        "event_at": doc.event_at,
        "archived_at": doc.archived_at,
        "valid_from": doc.valid_from,
        "valid_until": doc.valid_until,
        "reprieves": doc.reprieves,
        "needs_revision": 1 if doc.needs_revision else 0,
        "author": doc.author,
        "session_id": doc.session_id,
        "prompt_id": doc.prompt_id,
        "turn_uuid": doc.turn_uuid,
        "superseded_by": doc.superseded_by,
        "task_status": doc.task_status if doc.memory_type == "task" else None,
        "due_at": doc.due,
        "fold_count": len(doc.details_text),
    }
    entities: dict[tuple[str, str], str] = {}
    for etype, name in doc.entities:
        entities.setdefault((etype, name), "meta")
    for term in doc.concepts:
        entities.setdefault(("concept", term), "dfn")
    for lang in doc.code_langs:
        entities.setdefault(("lang", lang), "code")
    facet_pairs = _unique([(f.name, f.value, f.numeric) for f in doc.facets])
    citation_pairs = _unique([(c.text, c.url) for c in doc.citations])
    edges = _unique(
        [
            (link.path, link.rel, REL_CLASS[link.rel])
            for link in doc.links
            if link.path != path and link.rel in REL_CLASS
        ]
    )
    chunks = tuple(
        (i, chunk_id(doc.content_hash, i), text) for i, text in enumerate(chunk_text(doc.body_text))
    )
    return Projection(
        file=file,
        tags=_unique(list(doc.tags)),
        entities=tuple((t, n, s) for (t, n), s in entities.items()),
        aliases=_unique(list(doc.aliases)),
        facets=tuple((i, n, v, num) for i, (n, v, num) in enumerate(facet_pairs)),
        citations=tuple((i, t, u) for i, (t, u) in enumerate(citation_pairs)),
        edges=edges,
        chunks=chunks,
    )
