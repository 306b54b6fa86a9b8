"""What a remote may bring: every incoming commit checked before anything lands.

A sync (and `init --clone`) fetches first and checks second: the fetched
commits sit in the object store under the remote-tracking ref only, and the
working tree, HEAD, the other refs, git's index and the planes stay as they
were until the whole range passed. The range is every commit the fetched tip
holds and this clone does not (each one compared with its first parent: a
parent is either local or itself in the range, so every path, mode and blob
the range introduces is seen once), not only the tip's tree. A commit may bring:

* memory files: valid memory paths under projects/, areas/, resources/ and
  archive/ (at most MAX_MEMORY_BYTES each), the publish listings (`index.html`)
  and `.gitkeep`s there;
* memhtml's own scaffold and artifacts: `README.html`, the published
  `index.html`, `sitemap.xml` and `memhtml.css` at the root, publish's memory
  views (`memhtml-view/<a memory path>`), the state sidecars
  (`.memhtml/state/*.jsonl`), the sleep reports and ledgers
  (`.memhtml/sleep/*.html`, `*.jsonl`), `.memhtml/config.json` (a JSON object),
  each at most SIDE_FILE_MAX;
* `.gitignore` and `.gitattributes` only with lines memhtml writes itself (or
  the clone's file holds already), keeping every memhtml line the clone has:
  they decide what git ignores (a checkout overwrites ignored files: the local
  planes) and how it stores and merges (a remote's `merge=union` or
  `working-tree-encoding` took over the merge and the writes).

Refused, each path named with why: anything else (other files, `.gitmodules`,
hooks-like config, the planes and any path this clone ignores), symlinks,
submodules, executables outside the memory folders, files over the limits,
names with control or invisible characters, backslashes or bytes that are not
UTF-8. Deleting files is allowed, except memhtml's scaffold; deleting more than
`deletions_allowed` memories needs the caller's word (`--allow-deletions`):
no memhtml door deletes a memory (removal is a move into archive/), so many
deletions come from a hand or a tool gone wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

from memhtml.contracts.errors import InvalidPathError, RemoteError
from memhtml.contracts.paths import memory_path, refused_character, split_segments
from memhtml.contracts.vocab import MAX_MEMORY_BYTES, PARA_BUCKETS
from memhtml.store.git import Git
from memhtml.store.layout import GITATTRIBUTES_LINES, GITIGNORE_LINES

SIDE_FILE_MAX: Final = 64 * 1024 * 1024  # a listing, sitemap, sidecar or report at 100k memories
DELETIONS_MAX: Final = 10
DELETIONS_SHARE: Final = 0.1
MAX_LISTED: Final = 50
ROOT_FILES: Final = frozenset({"README.html", "index.html", "sitemap.xml", "memhtml.css"})
VIEW_PREFIX: Final = "memhtml-view/"  # publish's views: memhtml.html.site_parts.VIEW_DIR
SIDE_FOLDERS: Final[dict[str, tuple[str, ...]]] = {
    ".memhtml/state": (".jsonl",),
    ".memhtml/sleep": (".html", ".jsonl"),
}
CONFIG_FILE: Final = ".memhtml/config.json"
# The lines memhtml writes into its scaffold files: ours, and the original memhtml's.
SCAFFOLD_LINES: Final[dict[str, frozenset[str]]] = {
    ".gitignore": frozenset(GITIGNORE_LINES),
    ".gitattributes": frozenset((*GITATTRIBUTES_LINES, "*.html diff=html")),
}
_PLANE_PREFIXES: Final = (
    ".memhtml/index.db-",
    ".memhtml/state.db-",
    ".memhtml/vectors/",
    ".memhtml/traces/",
)
_NULL: Final = "0" * 40


class Offence(NamedTuple):
    """One path an incoming commit may not bring, and why."""

    path: str
    why: str
    commit: str

    def to_data(self) -> dict[str, str]:
        return {"path": self.path, "why": self.why, "commit": self.commit}


class Change(NamedTuple):
    """One path an incoming commit changed against its first parent (raw diff)."""

    commit: str
    mode: str  # the new mode ("000000": deleted)
    sha: str  # the new blob
    status: str
    path: str


# -- what a path may be (pure) -------------------------------------------------------


def _name_offence(path: str) -> str | None:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "a name that is not UTF-8"
    bad = refused_character(path)
    if bad is not None:
        kind = "a control" if bad < " " or "\x7f" <= bad <= "\x9f" else "an invisible"
        return f"a name with {kind} character (U+{ord(bad):04X})"
    if "\\" in path:
        return "a name with a backslash"
    return None


def _memory_folder_offence(path: str) -> str | None:
    folder, _, leaf = path.rpartition("/")
    try:
        if leaf == ".gitkeep":
            split_segments(folder)
        elif leaf == "index.html":
            split_segments(path)
        else:
            memory_path(path)
    except InvalidPathError as exc:
        return f"not a memory file ({exc.message})"
    return None


def is_plane(path: str) -> bool:
    """A path of the machine-local planes memhtml ignores (`.gitignore`'s lines and the
    trace plane)."""
    if path in (".memhtml/index.db", ".memhtml/state.db"):
        return True
    if path.startswith(_PLANE_PREFIXES):
        return True
    return path.startswith(".memhtml/") and path.count("/") == 1 and path.endswith(".lock")


def path_offence(path: str, mode: str) -> str | None:
    """Why an incoming commit may not hold `path` with `mode` (None: it may)."""
    why = _name_offence(path)
    if why is not None:
        return why
    if mode == "120000":
        return "a symlink"
    if mode == "160000":
        return "a submodule (gitlink)"
    if is_plane(path):
        return "machine-local state memhtml never commits; a checkout would overwrite this clone's"
    top = path.split("/", 1)[0]
    if top in PARA_BUCKETS and "/" in path:
        return _memory_folder_offence(path)
    if mode != "100644":
        return "an executable outside the memory folders"
    if path.startswith(VIEW_PREFIX):
        try:
            memory_path(path[len(VIEW_PREFIX) :])
        except InvalidPathError as exc:
            return f"not a view of a memory path ({exc.message})"
        return None
    if path in ROOT_FILES or path in SCAFFOLD_LINES or path == CONFIG_FILE:
        return None
    folder, _, leaf = path.rpartition("/")
    suffixes = SIDE_FOLDERS.get(folder)
    if suffixes is not None and (
        leaf == ".gitkeep" or (leaf.endswith(suffixes) and not leaf.startswith("."))
    ):
        return None
    return "not a memory file or memhtml's scaffold"


def size_limit(path: str) -> int:
    """The largest blob an incoming commit may bring at `path`."""
    if path.split("/", 1)[0] in PARA_BUCKETS and not path.endswith(("/index.html", "/.gitkeep")):
        return MAX_MEMORY_BYTES
    return SIDE_FILE_MAX


def _lines(data: bytes | None) -> set[str]:
    if data is None:
        return set()
    text = data.decode("utf-8", "replace")
    return {s for line in text.splitlines() if (s := line.strip()) and not s.startswith("#")}


def scaffold_offence(path: str, data: bytes | None, local: bytes | None) -> str | None:
    """Why `data` (None: deleted) may not replace the clone's `local` scaffold file `path`."""
    known = SCAFFOLD_LINES[path]
    have = _lines(local)
    if data is None:
        return "deletes memhtml's own file" if local is not None else None
    lines = _lines(data)
    alien = sorted(lines - known - have)
    if alien:
        shown = "; ".join(repr(line[:80]) for line in alien[:3])
        return f"lines memhtml does not write ({shown}): {path} is memhtml's, never the remote's"
    dropped = sorted((have & known) - lines)
    if dropped:
        return f"drops memhtml's line(s) {'; '.join(repr(x) for x in dropped[:3])}"
    return None


def config_offence(data: bytes) -> str | None:
    """Why `data` may not be the committed `.memhtml/config.json` (every search reads it)."""
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return "not valid JSON (every search would fail on it)"
    return None if isinstance(value, dict) else "not a JSON object (every search would fail on it)"


def deletions_allowed(memories: int) -> int:
    """How many memories a remote may delete without `--allow-deletions`: at most
    DELETIONS_MAX, and at most DELETIONS_SHARE of the `memories` the clone holds (one at least)."""
    return max(1, min(DELETIONS_MAX, int(memories * DELETIONS_SHARE)))


def is_memory_file(path: str) -> bool:
    """A memory (not a listing, not a .gitkeep) by its path alone."""
    return (
        path.split("/", 1)[0] in PARA_BUCKETS
        and path.endswith(".html")
        and not path.endswith("/index.html")
    )


# -- reading the range --------------------------------------------------------------


def incoming_changes(git: Git, tip: str, have: Sequence[str]) -> tuple[int, list[Change]]:
    """The commits `tip` holds beyond `have`, and every path each one changed against its
    first parent (a root commit: all its paths)."""
    listing = git.text("rev-list", "--parents", tip, "--not", *have, "--")
    lines = [" ".join(row.split()[:2]) for row in listing.splitlines() if row.strip()]
    if not lines:
        return 0, []
    out = git.run(
        "diff-tree",
        "--stdin",
        "-r",
        "-z",
        "--no-renames",
        "--root",
        stdin=("\n".join(lines) + "\n").encode(),
    )
    changes: list[Change] = []
    commit = ""
    fields = out.split(b"\x00")
    i = 0
    while i < len(fields):
        token = fields[i]
        i += 1
        if not token:
            continue
        if not token.startswith(b":"):
            commit = token.decode().strip()
            continue
        _old_mode, mode, _old_sha, sha, status = token[1:].decode().split(" ")
        path = fields[i].decode("utf-8", "surrogateescape")
        i += 1
        changes.append(Change(commit, mode, sha, status[:1], path))
    return len(lines), changes


def _sizes(git: Git, shas: Iterable[str]) -> dict[str, int]:
    wanted = sorted(set(shas) - {_NULL})
    if not wanted:
        return {}
    out = git.run(
        "cat-file",
        "--batch-check=%(objectname) %(objectsize)",
        stdin=("\n".join(wanted) + "\n").encode(),
    )
    sizes: dict[str, int] = {}
    for line in out.decode().splitlines():
        parts = line.split(" ")
        if len(parts) == 2 and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def _ignored(git: Git, paths: Sequence[str]) -> set[str]:
    """The `paths` this clone's ignore rules match (a checkout overwrites an ignored file)."""
    if not paths:
        return set()
    stdin = b"".join(p.encode("utf-8", "surrogateescape") + b"\x00" for p in paths)
    out = git.run("check-ignore", "--no-index", "-z", "--stdin", stdin=stdin, check=False)
    return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\x00") if p}


def offences(git: Git, changes: Sequence[Change], local: str | None) -> list[Offence]:
    """Every refused path of `changes`, `local` the clone's commit (None: a new clone)."""
    found: list[Offence] = []
    present = [c for c in changes if c.mode != "000000"]
    sizes = _sizes(git, (c.sha for c in present))
    for c in present:
        why = path_offence(c.path, c.mode)
        if why is None and sizes.get(c.sha, 0) > (limit := size_limit(c.path)):
            why = f"{sizes[c.sha]} bytes, over the limit of {limit}"
        if why is not None:
            found.append(Offence(c.path, why, c.commit))
    special = [c for c in changes if c.path in SCAFFOLD_LINES or c.path == CONFIG_FILE]
    if special:
        names = [c.sha for c in special if c.mode != "000000"]
        if local is not None:
            names += [f"{local}:{p}" for p in SCAFFOLD_LINES]
        blobs = git.cat_objects(names)
        for c in special:
            data = blobs[c.sha][1] if c.sha in blobs else None
            if c.path == CONFIG_FILE:
                why = config_offence(data) if data is not None else None
            else:
                held = blobs.get(f"{local}:{c.path}")
                why = scaffold_offence(c.path, data, held[1] if held else None)
            if why is not None:
                found.append(Offence(c.path, why, c.commit))
    named = {o.path for o in found}
    added = sorted({c.path for c in present if c.status == "A"} - named)
    for path in sorted(_ignored(git, added)):
        commit = next(c.commit for c in present if c.path == path)
        why = "ignored in this clone; a checkout would overwrite the local file"
        found.append(Offence(path, why, commit))
    first: dict[str, Offence] = {}  # one reason a path: the first found
    for o in found:
        first.setdefault(o.path, o)
    return sorted(first.values(), key=lambda o: o.path)


def deleted_memories(git: Git, base: str, tip: str, local: str) -> list[str]:
    """Memories `local` holds that `tip` deleted since `base` (a move is not a deletion)."""
    out = git.run(
        "diff",
        "--name-status",
        "-M",
        "-z",
        "--diff-filter=D",
        base,
        tip,
        "--",
        *(f"{b}/" for b in PARA_BUCKETS),
    )
    fields = [f.decode("utf-8", "surrogateescape") for f in out.split(b"\x00") if f]
    gone = [p for s, p in zip(fields[::2], fields[1::2], strict=False) if s == "D"]
    gone = [p for p in gone if is_memory_file(p)]
    if not gone or base == local:
        return sorted(gone)
    # after a merge: only what this clone still holds is deleted here
    names = [f"{local}:{p}" for p in gone]
    out = git.run("cat-file", "--batch-check=%(objecttype)", stdin=_z_lines(names))
    held = [p for p, kind in zip(gone, out.decode().splitlines(), strict=False) if kind == "blob"]
    return sorted(held)


def _z_lines(items: Sequence[str]) -> bytes:
    return "".join(f"{item}\n" for item in items).encode("utf-8", "surrogateescape")


def _memories_at(git: Git, commit: str) -> int:
    return sum(
        1 for e in git.ls_tree(commit, [f"{b}/" for b in PARA_BUCKETS]) if is_memory_file(e.path)
    )


def _shown(path: str) -> str:
    return json.dumps(path, ensure_ascii=True)[1:-1]


# -- the check ----------------------------------------------------------------------


def check(
    git: Git,
    tip: str,
    *,
    local: str | None,
    source: str,
    allow_deletions: bool = False,
) -> dict[str, int]:
    """Refuse (ERR_REMOTE) a `tip` whose range past `local` (None: a new clone) brings what a
    memory must not hold, or deletes more memories than allowed; what was checked otherwise."""
    have = [local] if local is not None else []
    commits, changes = incoming_changes(git, tip, have)
    refused = offences(git, changes, local)
    if refused:
        shown = ", ".join(f"{_shown(o.path)} ({o.why})" for o in refused[:3])
        more = f" and {len(refused) - 3} more" if len(refused) > 3 else ""
        raise RemoteError(
            f"{source} brings {len(refused)} path(s) a memory must not hold: {shown}{more};"
            " nothing was merged and this clone is unchanged",
            suggestions=[
                "whoever pushed them: take these commits off the remote's branch (reset it to"
                " the last good commit and force-push), then sync again",
                f"see them: git log --stat {tip} --not HEAD",
            ],
            details={
                "reason": "refused",
                "source": source,
                "tip": tip,
                "count": len(refused),
                "paths": [o.to_data() for o in refused[:MAX_LISTED]],
            },
        )
    deleted: list[str] = []
    if local is not None:
        base = git.text("merge-base", local, tip, check=False) or local
        deleted = deleted_memories(git, base, tip, local)
        if deleted and not allow_deletions:
            allowed = (
                DELETIONS_MAX
                if len(deleted) > DELETIONS_MAX
                else deletions_allowed(_memories_at(git, base))
            )
            if len(deleted) > allowed:
                raise RemoteError(
                    f"{source} deletes {len(deleted)} memories (more than {allowed} needs your"
                    " word); nothing was merged and this clone is unchanged",
                    suggestions=[
                        "memhtml sync --allow-deletions (when these deletions are meant)",
                        f"see them: git log --diff-filter=D --stat {tip} --not HEAD",
                    ],
                    details={
                        "reason": "deletions",
                        "source": source,
                        "tip": tip,
                        "count": len(deleted),
                        "allowed": allowed,
                        "paths": deleted[:MAX_LISTED],
                    },
                )
    return {"commits": commits, "paths": len(changes), "deleted": len(deleted)}
