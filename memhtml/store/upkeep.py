"""Keeping the object store in shape as the corpus grows: `git gc --auto`'s check, no process.

Every large batch writes its blobs as one pack (`Git.store_blobs`), a sleep
round writes one more, and a single write leaves a few loose objects. Nothing
of ours runs `git gc` (git runs `gc --auto` only from porcelain such as
`commit`, `merge` and `fetch`; the write path is plumbing), so a long-lived
memory would collect hundreds of packs, and every object lookup that misses
probes each pack's index in turn (docs/benchmarks.md, "Object store upkeep").

After each commit the write door calls `keep_in_shape` under the repository
lock it holds. The check is two directory scans and one small file read, no
subprocess: the packs in `objects/pack` (those without a `.keep`), and git's
own estimate of the loose objects (the count in `objects/17` times 256).
The limits are git's (`gc.autoPackLimit` 50, `gc.auto` 6700), read from the
repository's `.git/config` when set there (0 turns the check off, as for git).

Over a limit it runs `git repack -d -q --geometric=2` in the foreground: the
small packs roll up into one until the packs form a geometric progression by
size (the big pack of an old corpus is not rewritten), and every loose object
(reachable or not) is packed and its loose copy removed. Nothing is pruned, so
an unreachable object stays (packed) until a person's `git gc` expires it;
recovery (memhtml.store.recovery) needs none anyway: it compares the working
tree's bytes with HEAD's blobs and the journal's blob ids, which are names, not
objects. Git writes and renames the new pack before it deletes the old ones, so
a killed repack leaves every object readable (tests/store/test_upkeep.py).

The git index grows too: one entry per memory (~128 bytes), read and rewritten
whole by every `update-index` a commit runs (122 MB at a million memories). Once
it passes `SPLIT_INDEX_BYTES`, `keep_in_shape` turns on git's own tools for large
trees, once: the split index (a write rewrites only the entries it changed; the
rest stays in a shared file) and the untracked cache (`git status` skips the
folders whose mtime did not move). A repository whose config already names either
setting is left as its owner set it. docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Final, NamedTuple

from memhtml.contracts.logs import get_logger
from memhtml.store.git import Git

log = get_logger("memhtml.store")

PACK_LIMIT: Final = 50  # git's gc.autoPackLimit
SPLIT_INDEX_BYTES: Final = 4 * 1024 * 1024  # ~30k memories' entries
LOOSE_LIMIT: Final = 6700  # git's gc.auto
_SAMPLE_DIR: Final = "17"  # the loose-object fan-out directory git samples
_HEX: Final = "0123456789abcdef"
_UNITS: Final = {"k": 1024, "m": 1024**2, "g": 1024**3}


class Limits(NamedTuple):
    """When the store needs upkeep: more packs than `packs`, or more loose objects than
    `loose` (git's estimate); 0 (or less) turns a check off, `loose` <= 0 turns off both."""

    packs: int = PACK_LIMIT
    loose: int = LOOSE_LIMIT


class Shape(NamedTuple):
    """The store's counts as the check sees them."""

    packs: int
    loose: int  # git's estimate: the objects in objects/17 times 256


class Upkeep(NamedTuple):
    """What a repack by `keep_in_shape` did: the shape before and after, whether git's
    repack succeeded, and its wall time."""

    before: Shape
    after: Shape
    ok: bool
    ms: float


def read_limits(git_dir: Path) -> Limits:
    """gc.autoPackLimit and gc.auto from the repository's own config file (git's defaults
    where it sets none; `include` directives and the global config are not read)."""
    try:
        with open(os.path.join(git_dir, "config"), "rb") as file:
            data = file.read()
    except OSError:
        return Limits()
    if b"gc" not in data.lower():  # the common case: one read, no parse
        return Limits()
    text = data.decode("utf-8", "replace")
    found: dict[str, int] = {}
    in_gc = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            in_gc = line[1:].partition("]")[0].strip().lower() == "gc"
        elif in_gc and "=" in line:
            key, _, value = line.partition("=")
            number = _integer(value.partition("#")[0].partition(";")[0])
            if number is not None:
                found[key.strip().lower()] = number
    return Limits(found.get("autopacklimit", PACK_LIMIT), found.get("auto", LOOSE_LIMIT))


def _integer(value: str) -> int | None:
    """A git config integer (`50`, `1k`), or None when the value is not one."""
    text = value.strip().strip('"').lower()
    unit = _UNITS.get(text[-1:], 0) if text[-1:].isalpha() else 1
    digits = text[:-1] if text[-1:].isalpha() else text
    try:
        return int(digits) * unit if unit else None
    except ValueError:
        return None


def shape(objects: Path) -> Shape:
    """The packs git counts for `gc --auto` and its loose-object estimate, from two scans."""
    base = os.fspath(objects)
    try:
        names = os.listdir(os.path.join(base, "pack"))
    except OSError:
        names = []
    idx = [n for n in names if n.endswith(".idx") and n.startswith("pack-")]
    kept = {n[:-5] for n in names if n.endswith(".keep")}
    packs = sum(1 for n in idx if n[:-4] not in kept)
    try:
        loose = sum(
            1
            for n in os.listdir(os.path.join(base, _SAMPLE_DIR))
            if len(n) == 38 and not n.strip(_HEX)
        )
    except OSError:
        loose = 0
    return Shape(packs, loose * 256)


def needs_upkeep(now: Shape, limits: Limits) -> bool:
    """git's `gc --auto` rule: more packs than the limit, or loose objects past gc.auto
    (sampled: more than ceil(gc.auto / 256) in objects/17)."""
    if limits.loose <= 0:
        return False
    if limits.packs > 0 and now.packs > limits.packs:
        return True
    return now.loose // 256 > -(-limits.loose // 256)


def index_in_shape(git: Git, threshold: int = SPLIT_INDEX_BYTES) -> bool:
    """Turn on the split index and the untracked cache once git's index passes `threshold`
    bytes (the caller holds the repository lock). True when it did; one stat otherwise."""
    git_dir = git.root / ".git"
    try:
        if os.stat(git_dir / "index").st_size < threshold:
            return False
        with open(git_dir / "config", "rb") as file:
            config = file.read().lower()
    except OSError:
        return False
    if b"splitindex" in config or b"untrackedcache" in config:
        return False  # set already, by us or by the owner
    git.run("config", "core.splitIndex", "true")
    git.run("config", "core.untrackedCache", "true")
    git.run("update-index", "--split-index", "--untracked-cache")
    log.info("git index past %d bytes: split index and untracked cache on", SPLIT_INDEX_BYTES)
    return True


def keep_in_shape(git: Git) -> Upkeep | None:
    """Repack when the store is over a limit, and split a large git index (the caller
    holds the repository lock); None when no repack was needed, which costs no subprocess."""
    git_dir = git.root / ".git"
    try:
        index_in_shape(git)
    except Exception as exc:  # upkeep only: git keeps working with one index file
        log.warning("turning on git's split index failed: %s", exc)
    before = shape(git_dir / "objects")
    if not needs_upkeep(before, read_limits(git_dir)):
        return None
    started = time.perf_counter()
    ok = git.repack_geometric()
    ms = (time.perf_counter() - started) * 1000
    result = Upkeep(before, shape(git_dir / "objects"), ok, ms)
    log.info(
        "object store upkeep (git repack --geometric=2%s): %d packs, ~%d loose -> %d packs,"
        " ~%d loose in %.0f ms",
        "" if ok else ", failed",
        before.packs,
        before.loose,
        result.after.packs,
        result.after.loose,
        ms,
    )
    return result
