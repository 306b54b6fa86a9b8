"""The MCP resources: one memory, a memory as of a commit, a sleep report, the manifest.

URIs are parsed here rather than by a template matcher because a memory path
holds slashes (`memhtml://file/areas/inbox/x.html`). Percent-escapes are
decoded before the path is validated, so `%2e%2e` is refused like `..`, and
the path algebra refuses what decodes to such an escape again (`%252e%252e`),
names over 255 bytes and invisible characters: each is ERR_INVALID_PATH here,
never an OSError from the filesystem.
Failures raise typed errors; the server turns them into protocol errors whose
`data` is the failure envelope.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote

from memhtml.contracts.errors import InvalidFlagError, InvalidPathError, PathNotFoundError
from memhtml.contracts.paths import memory_path

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

SCHEME: Final = "memhtml://"
MANIFEST_URI: Final = "memhtml://manifest"
_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True)
class ResourceInfo:
    """A template or fixed resource as listed to clients."""

    uri: str
    name: str
    title: str
    description: str
    mime_type: str


TEMPLATES: Final[tuple[ResourceInfo, ...]] = (
    ResourceInfo(
        "memhtml://file/{path}",
        "memory",
        "One memory",
        "One memory as text ('# title', the claim, the body text), through the same read"
        " operation as memory_read, so it counts as an access (salience). {path} is the"
        " root-relative memory path; its slashes need no escaping.",
        "text/plain",
    ),
    ResourceInfo(
        "memhtml://at/{commit}/{path}",
        "memory-at-commit",
        "A memory as of a commit",
        "The memory file's HTML exactly as committed at {commit}: a 7-40 hex commit sha"
        " (branch names and HEAD are refused, so a citation never moves). Not an access.",
        "text/html",
    ),
    ResourceInfo(
        "memhtml://sleep/{run_id}",
        "sleep-report",
        "A sleep report",
        "The committed HTML report of one sleep (curation) run, .memhtml/sleep/<run_id>.html:"
        " one section per phase with its non-zero counts and every change with its reason."
        " Read from the"
        " run's branch (sleep/<run_id>) until it is merged, then from the tree.",
        "text/html",
    ),
)
FIXED: Final[tuple[ResourceInfo, ...]] = (
    ResourceInfo(
        MANIFEST_URI,
        "manifest",
        "The memhtml contract",
        "Every CLI command and flag, response type, error code and environment variable"
        " (the same JSON as `memhtml manifest`).",
        "application/json",
    ),
)


@dataclass(frozen=True)
class ResourceText:
    """What a read answers: the text and its MIME type."""

    uri: str
    text: str
    mime_type: str


def _memory_path(raw: str) -> str:
    return memory_path(unquote(raw))


def read_file(corpus: Corpus, raw_path: str, uri: str) -> ResourceText:
    """`memhtml://file/{path}`: one memory through the read operation (an access)."""
    data = corpus.read(_memory_path(raw_path))
    gist, body = data.get("gist") or "", (data.get("body_text") or "").strip()
    if gist and body.startswith(gist):  # the article's text opens with the claim
        body = body[len(gist) :].strip()
    parts = [f"# {data['title']}", gist, body]
    return ResourceText(uri, "\n\n".join(parts).rstrip() + "\n", "text/plain")


def read_at(corpus: Corpus, rest: str, uri: str) -> ResourceText:
    """`memhtml://at/{commit}/{path}`: the file as committed; refuses refs that can move."""
    commit, sep, raw_path = rest.partition("/")
    commit = unquote(commit)
    if not sep or not raw_path:
        raise InvalidFlagError(
            f"{uri}: expected memhtml://at/<commit-sha>/<path>",
            suggestions=["memhtml://at/1a2b3c4/areas/inbox/x.html"],
        )
    if not _SHA.match(commit):
        raise InvalidFlagError(
            f"{commit!r} is not a commit sha: memhtml://at takes 7-40 hex digits, never a"
            " branch name or HEAD (a citation must not move)",
            suggestions=["memory_status shows head_sha"],
        )
    path = _memory_path(raw_path)
    full = corpus.git.resolve_commit(commit)
    # A hex-looking branch name resolves too; only a sha the name is a prefix of counts.
    if full is None or not full.startswith(commit.lower()):
        raise PathNotFoundError(f"no commit {commit} in this repository")
    blob = corpus.git.show_blob(full, path)
    if blob is None:
        raise PathNotFoundError(
            f"no file {path} at commit {full[:12]}",
            suggestions=[f"memhtml resolve {path}"],
        )
    return ResourceText(uri, blob.decode("utf-8", "replace"), "text/html")


def read_sleep(corpus: Corpus, run_id: str, uri: str) -> ResourceText:
    """`memhtml://sleep/{run_id}`: a run's committed report (the branch's, else main's)."""
    run_id = unquote(run_id)
    if not _RUN_ID.match(run_id) or ".." in run_id:
        raise InvalidPathError(f"{run_id!r} is not a sleep run id")
    from memhtml.sleep.runs import branch_of, report_path

    path = report_path(run_id)
    for ref in (f"refs/heads/{branch_of(run_id)}", "HEAD"):
        commit = corpus.git.resolve_commit(ref)
        blob = corpus.git.show_blob(commit, path) if commit else None
        if blob is not None:
            return ResourceText(uri, blob.decode("utf-8", "replace"), "text/html")
    raise PathNotFoundError(
        f"no sleep report {run_id!r} (no {path} on sleep/{run_id} or in HEAD)",
        suggestions=["memhtml sleep status"],
    )


def read_manifest(uri: str) -> ResourceText:
    """`memhtml://manifest`: the command contract as JSON."""
    from memhtml.surface.manifest import manifest

    return ResourceText(
        uri, json.dumps(manifest(), ensure_ascii=False, indent=2), "application/json"
    )


def read_resource(get: Callable[[], Corpus], uri: str) -> ResourceText:
    """Dispatch a resource URI; the corpus is opened only for URIs that read the store."""
    if uri == MANIFEST_URI:
        return read_manifest(uri)
    kind, _, rest = uri[len(SCHEME) :].partition("/") if uri.startswith(SCHEME) else ("", "", "")
    readers: dict[str, Callable[[Corpus, str, str], ResourceText]] = {
        "file": read_file,
        "at": read_at,
        "sleep": read_sleep,
    }
    reader = readers.get(kind)
    if reader is None or not rest:
        raise PathNotFoundError(
            f"no resource {uri!r}", suggestions=[t.uri for t in TEMPLATES] + [MANIFEST_URI]
        )
    return reader(get(), rest, uri)
