"""The path algebra: what a memory path is, where a new memory goes, and archive paths.

A memory path is root-relative, POSIX-separated, under one of the PARA
buckets, and ends in ``.html``. ``archive/<YYYY>/<original-path>`` is
injective and reversible, so ``git log --follow`` reads through a memory's
whole life and a citation to the original path can always be re-found.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Final

from memhtml.contracts.errors import InvalidPathError
from memhtml.contracts.vocab import GENERATED_NAMES, PARA_BUCKETS, TASKS_SUBDIR

SLUG_MAX: Final = 80
SLUG_FALLBACK: Final = "untitled"
MAX_PATH_CHARS: Final = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_YEAR = re.compile(r"^[0-9]{4}$")
_NON_SLUG = re.compile(r"[^a-z0-9]+")
# Topic folders a tag may not claim: they have their own writers.
_RESERVED_TOPICS: Final = frozenset({SLUG_FALLBACK, "arcs", "inbox", "people", "tasks"})

# Where a typed memory lands when neither a path, a workspace nor a tag says.
# `episodic` and `semantic` carry no topic of their own: with no tag they are
# unplaceable and go to the inbox for sleep (or a human) to re-file.
TYPE_HOME: Final[dict[str, str]] = {
    "procedural": "areas/procedures",
    "agent_insight": "areas/insights",
    "user_preference": "areas/preferences",
    "error_pattern": "areas/error-patterns",
    "verdict": "resources/verdicts",
    "precedent": "resources/precedents",
    "semantic": "resources",
    "episodic": "areas",
}


def slugify(text: str, max_len: int = SLUG_MAX) -> str:
    """ASCII slug: NFKD, combining marks stripped, lowercase, runs of other chars -> '-'."""
    decomposed = unicodedata.normalize("NFKD", text)
    ascii_only = "".join(c for c in decomposed if not unicodedata.combining(c))
    slug = _NON_SLUG.sub("-", ascii_only.lower()).strip("-")
    slug = slug[:max_len].rstrip("-")
    return slug or SLUG_FALLBACK


def _refuse(path: object, why: str) -> InvalidPathError:
    return InvalidPathError(
        f"invalid memory path {path!r}: {why}",
        suggestions=["use a root-relative path like areas/inbox/my-fact.html"],
    )


def split_segments(path: str) -> list[str]:
    """Check the shape shared by every tree path and return its segments."""
    if not isinstance(path, str) or not path:
        raise _refuse(path, "empty")
    if len(path) > MAX_PATH_CHARS:
        raise _refuse(path[:60] + "...", "longer than 1024 characters")
    if "\x00" in path or _CONTROL.search(path):
        raise _refuse(path, "contains a control character")
    if "\\" in path:
        raise _refuse(path, "contains a backslash")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise _refuse(path, "absolute paths are refused; give it relative to the memory root")
    segments = path.split("/")
    for seg in segments:
        if seg in ("", ".", ".."):
            raise _refuse(path, "empty, '.' or '..' segment")
        if seg.startswith("."):
            raise _refuse(path, "hidden segment")
    return segments


def memory_path(path: str) -> str:
    """Validate a memory path and return it unchanged; raise InvalidPathError otherwise."""
    segments = split_segments(path)
    if segments[0] not in PARA_BUCKETS:
        raise _refuse(path, f"must start with one of {', '.join(b + '/' for b in PARA_BUCKETS)}")
    if len(segments) < 2:
        raise _refuse(path, "a memory lives inside a bucket folder")
    if not segments[-1].endswith(".html") or segments[-1] == ".html":
        raise _refuse(path, "must end in .html")
    if segments[-1] in GENERATED_NAMES:
        raise _refuse(path, "index.html is a generated listing, not a memory")
    if segments[0] == "archive":
        if len(segments) < 4 or not _YEAR.match(segments[1]) or segments[2] == "archive":
            raise _refuse(path, "archive paths are archive/<YYYY>/<original-path>")
        memory_path("/".join(segments[2:]))
    return path


def is_memory_path(path: str) -> bool:
    """True when `path` is a valid memory path (never raises)."""
    try:
        memory_path(path)
    except InvalidPathError:
        return False
    return True


def href_to_path(href: str) -> str:
    """A link href ('/areas/x.html') to its memory path ('areas/x.html')."""
    if not href.startswith("/") or href.startswith("//"):
        raise _refuse(href, "an href is root-relative and starts with one '/'")
    if "://" in href or "?" in href or "#" in href:
        raise _refuse(href, "an href carries no scheme, host, query or fragment")
    return memory_path(href[1:])


def path_to_href(path: str) -> str:
    """A memory path to the href form used in `<link>` and the superseded-by meta."""
    return "/" + memory_path(path)


def bucket_of(path: str) -> str:
    """The PARA bucket (first segment) of a valid memory path."""
    return memory_path(path).split("/", 1)[0]


def is_archived_path(path: str) -> bool:
    """Archived-ness is read from the path's bucket, never from a meta."""
    return bucket_of(path) == "archive"


def archive_path(path: str, year: int) -> str:
    """archive/<YYYY>/<original>: refuses an already-archived path, so the map is injective."""
    memory_path(path)
    if is_archived_path(path):
        raise _refuse(path, "already archived")
    if not 1 <= year <= 9999:
        raise _refuse(path, f"year {year} out of range")
    return f"archive/{year:04d}/{path}"


def unarchive_path(path: str) -> tuple[int, str]:
    """Inverse of archive_path: (year, original path)."""
    memory_path(path)
    segments = path.split("/")
    if segments[0] != "archive":
        raise _refuse(path, "not an archive path")
    return int(segments[1]), "/".join(segments[2:])


def live_path_of(path: str) -> str:
    """The original (unarchived) path of any memory path."""
    return unarchive_path(path)[1] if is_archived_path(path) else memory_path(path)


def workspace_of(path: str) -> str | None:
    """The workspace a memory belongs to: projects/<ws>/..., archived or not."""
    segments = live_path_of(path).split("/")
    return segments[1] if segments[0] == "projects" and len(segments) > 2 else None


def para_of(path: str) -> str:
    """The PARA bucket a memory counts under (archive included)."""
    return bucket_of(path)


def with_ordinal(path: str, ordinal: int) -> str:
    """Splice a collision ordinal into the stem: a/b.html, 2 -> a/b-2.html (slug budget kept)."""
    if ordinal <= 1:
        return path
    head, _, name = path.rpartition("/")
    stem = name[: -len(".html")]
    suffix = f"-{ordinal}"
    stem = stem[: max(1, SLUG_MAX - len(suffix))].rstrip("-") or SLUG_FALLBACK
    return f"{head}/{stem}{suffix}.html" if head else f"{stem}{suffix}.html"


def placement_dir(
    memory_type: str,
    *,
    workspace: str | None = None,
    tags: Sequence[str] = (),
) -> str:
    """The folder a new memory goes to when the caller gave no path.

    Order: arc -> areas/arcs; task -> projects/<ws>/tasks or areas/inbox/tasks
    (tags never route a task); a workspace -> projects/<ws>; then the first tag
    as a topic folder under the type's bucket; then the type's home; and an
    untagged episodic or semantic memory is unplaceable -> areas/inbox.
    """
    if memory_type == "arc":
        return "areas/arcs"
    if memory_type == "task":
        if workspace:
            return f"projects/{slugify(workspace)}/{TASKS_SUBDIR}"
        return f"areas/inbox/{TASKS_SUBDIR}"
    if workspace:
        return f"projects/{slugify(workspace)}"
    home = TYPE_HOME.get(memory_type, "areas/inbox")
    bucket = home.split("/", 1)[0]
    topic = next(
        (slugify(t) for t in tags if slugify(t) not in _RESERVED_TOPICS),
        None,
    )
    if topic is not None:
        return f"{bucket}/{topic}"
    if "/" not in home:
        return "areas/inbox"
    return home


def placement_for(
    memory_type: str,
    title: str,
    *,
    workspace: str | None = None,
    tags: Sequence[str] = (),
) -> str:
    """The first-choice path for a new memory (collisions are resolved by the store)."""
    return f"{placement_dir(memory_type, workspace=workspace, tags=tags)}/{slugify(title)}.html"
