"""The path algebra: what a memory path is, where a new memory goes, and archive paths.

A memory path is root-relative, POSIX-separated, under one of the PARA
buckets, and ends in ``.html``. ``archive/<YYYY>/<original-path>`` is
injective and reversible, so ``git log --follow`` reads through a memory's
whole life and a citation to the original path can always be re-found.

What a filesystem, a listing or a URI reader would get wrong is refused here,
at validation time, so no later open fails with an OSError: a name over 255
bytes or a path over 1024 bytes, control and invisible format characters
(bidirectional overrides, zero-width spaces: they spoof names in listings and
diffs), and percent-escapes that decode to a separator, a dot segment or such
a character (a `memhtml://file/` reader or an href decodes them first).
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
# Byte limits, because filesystems count bytes: NAME_MAX is 255 on every
# common one, and a name past it is `OSError: File name too long` at the first
# open. The whole path is capped well under PATH_MAX (4096) so the root it
# lives under has room; a live path leaves room for `archive/<YYYY>/`, so
# archiving a valid path always yields a valid path.
MAX_SEGMENT_BYTES: Final = 255
MAX_PATH_BYTES: Final = 1024
ARCHIVE_PREFIX_BYTES: Final = len("archive/0000/")
MAX_LIVE_PATH_BYTES: Final = MAX_PATH_BYTES - ARCHIVE_PREFIX_BYTES
MAX_PATH_CHARS: Final = MAX_PATH_BYTES  # a character is at least one byte
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Characters a listing or a diff shows wrongly or not at all: controls (C0 and
# C1), invisible format characters (bidirectional overrides and isolates,
# zero-width spaces and joiners, the BOM, soft hyphen), lone surrogates (not
# encodable, so not storable), and the line and paragraph separators.
_REFUSED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_REPR_MAX: Final = 120
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
    if text.isascii():  # NFKD leaves ASCII alone and no ASCII character is combining
        ascii_only = text
    else:
        decomposed = unicodedata.normalize("NFKD", text)
        ascii_only = "".join(c for c in decomposed if not unicodedata.combining(c))
    slug = _NON_SLUG.sub("-", ascii_only.lower()).strip("-")
    slug = slug[:max_len].rstrip("-")
    return slug or SLUG_FALLBACK


def memory_slug(text: str, max_len: int = SLUG_MAX) -> str:
    """The slug a memory's file is named by: `slugify`, but never a name publish generates.

    `index` would name `index.html`, a listing publish owns: the index never
    reads it and publish overwrites it. Such a slug gets `-memory` appended.
    """
    slug = slugify(text, max_len)
    if f"{slug}.html" in GENERATED_NAMES:
        slug = f"{slug}-memory"
    return slug


def refuse_generated_name(path: str, field: str = "path") -> None:
    """InvalidPathError when a new memory's path names a file publish generates, in any case
    (`Index.html` is `index.html` on a case-insensitive disk)."""
    name = path.rsplit("/", 1)[-1]
    if name.lower() in GENERATED_NAMES:
        raise InvalidPathError(
            f"{field}: {path}: {name} is a name publish generates"
            f" ({', '.join(sorted(GENERATED_NAMES))}); the index never reads such a file"
            " and publish overwrites it. Choose another name",
            suggestions=[
                f"{path.rsplit('/', 1)[0] + '/' if '/' in path else ''}"
                f"{name.rsplit('.', 1)[0].lower()}-memory.html"
            ],
            details={"field": field, "reason": "generated_name"},
        )


def _refuse(path: object, why: str) -> InvalidPathError:
    shown = repr(path)
    if len(shown) > _REPR_MAX:  # never echo a megabyte of path back
        shown = shown[: _REPR_MAX - 4] + "...'"
    return InvalidPathError(
        f"invalid memory path {shown}: {why}",
        suggestions=["use a root-relative path like areas/inbox/my-fact.html"],
    )


def refused_character(text: str) -> str | None:
    """The first control, invisible format or separator character in `text`, if any."""
    if text.isascii():
        found = _CONTROL.search(text)
        return None if found is None else found.group()
    for c in text:
        if (c < " " or c > "~") and unicodedata.category(c) in _REFUSED_CATEGORIES:
            return c
    return None


def percent_decode(text: str) -> str:
    """`%XX` escapes decoded as UTF-8 (invalid bytes become U+FFFD), like a URI reader does."""
    if "%" not in text:
        return text
    return _ESCAPES.sub(
        lambda m: bytes.fromhex(m.group().replace("%", "")).decode("utf-8", "replace"), text
    )


def _check_characters(path: str, text: str, where: str = "") -> None:
    bad = refused_character(text)
    if bad is not None:
        kind = "a control" if unicodedata.category(bad) == "Cc" else "an invisible or format"
        raise _refuse(path, f"{where}contains {kind} character (U+{ord(bad):04X})")


def _check_segments(path: str, segments: list[str], *, ascii_only: bool) -> None:
    for seg in segments:
        if seg in ("", ".", ".."):
            raise _refuse(path, "empty, '.' or '..' segment")
        if seg.startswith("."):
            raise _refuse(path, "hidden segment")
        size = len(seg) if ascii_only else len(seg.encode("utf-8"))
        if size > MAX_SEGMENT_BYTES:
            raise _refuse(path, f"a name is {size} bytes; at most {MAX_SEGMENT_BYTES} are allowed")
        if "%" in seg:
            _check_escapes(path, seg)


def _check_escapes(path: str, seg: str) -> None:
    # A URI reader (memhtml://file/, a link href) decodes escapes first: what it
    # would see must be this same path, or the memory could not be read back
    # (and `%2e%2e` or `%2f` would be a traversal).
    decoded = percent_decode(seg)
    if decoded == seg:
        return
    if "/" in decoded or "\\" in decoded:
        raise _refuse(path, "a percent-escape decodes to a path separator")
    _check_characters(path, decoded, "a percent-escape ")
    if decoded in (".", "..") or decoded.startswith("."):
        raise _refuse(path, "a percent-escape decodes to a '.', '..' or hidden segment")
    _check_segments(path, [decoded], ascii_only=decoded.isascii())


def split_segments(path: str) -> list[str]:
    """Check the shape shared by every tree path and return its segments."""
    if not isinstance(path, str) or not path:
        raise _refuse(path, "empty")
    if len(path) > MAX_PATH_CHARS:  # before any per-character work on a huge input
        raise _refuse(path, f"longer than {MAX_PATH_BYTES} bytes")
    _check_characters(path, path)
    ascii_only = path.isascii()
    size = len(path) if ascii_only else len(path.encode("utf-8"))
    if size > MAX_PATH_BYTES:
        raise _refuse(path, f"{size} bytes long; at most {MAX_PATH_BYTES} are allowed")
    if "\\" in path:
        raise _refuse(path, "contains a backslash")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise _refuse(path, "absolute paths are refused; give it relative to the memory root")
    segments = path.split("/")
    _check_segments(path, segments, ascii_only=ascii_only)
    return segments


def filesystem_path(path: str) -> str:
    """Check a file path given on a command line (absolute allowed) against the OS limits.

    For commands that take any file, not a memory path (`doctor FILE`): a
    name over NAME_MAX or a NUL is refused here instead of surfacing as an
    OSError from the first stat.
    """
    if not isinstance(path, str) or not path:
        raise _refuse(path, "empty")
    if "\x00" in path:
        raise _refuse(path, "contains a NUL character")
    if len(path) > 4096 or len(path.encode("utf-8", "surrogateescape")) > 4096:
        raise _refuse(path, "longer than 4096 bytes (PATH_MAX)")
    for seg in path.split("/"):
        size = len(seg.encode("utf-8", "surrogateescape"))
        if size > MAX_SEGMENT_BYTES:
            raise _refuse(path, f"a name is {size} bytes; at most {MAX_SEGMENT_BYTES} are allowed")
    return path


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
        raise _refuse(path, f"{segments[-1]} is a listing publish generates, not a memory")
    if segments[0] == "archive":
        if len(segments) < 4 or not _YEAR.match(segments[1]) or segments[2] == "archive":
            raise _refuse(path, "archive paths are archive/<YYYY>/<original-path>")
        memory_path("/".join(segments[2:]))
    elif len(path) * 4 > MAX_LIVE_PATH_BYTES and len(path.encode("utf-8")) > MAX_LIVE_PATH_BYTES:
        raise _refuse(
            path,
            f"a live path may be at most {MAX_LIVE_PATH_BYTES} bytes"
            f" (its archive path adds {ARCHIVE_PREFIX_BYTES})",
        )
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
    stem = stem[: max(1, SLUG_MAX - len(suffix))]
    # A hand-given name may be multi-byte: the suffixed name must still fit NAME_MAX.
    room = MAX_SEGMENT_BYTES - len(f"{suffix}.html")
    while len(stem.encode("utf-8")) > room:
        stem = stem[:-1]
    stem = stem.rstrip("-") or SLUG_FALLBACK
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
    return f"{placement_dir(memory_type, workspace=workspace, tags=tags)}/{memory_slug(title)}.html"
