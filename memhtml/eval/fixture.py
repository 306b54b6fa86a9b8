"""The fixture corpus: a browsable memory repository that is a pure function of a seed.

`generate_fixture(seed, size, now)` plans every file (path -> bytes, rendered
by the format's own serializer) plus the probe set; nothing in it reads a
clock, the network or the file system, and it draws only from
`random.Random(seed)`. `write_fixture(plan, out_dir)` lays the plan out as a
memory root (the same scaffold `memhtml init` writes) and commits it with a
fixed identity and date, so the same seed gives the same commit tree, and the
same commit.

The corpus covers every memory type (arcs and tasks included), every PARA
bucket (projects/<ws>, areas, areas/inbox, areas/arcs, resources,
resources/people, archive/<YYYY>), archived and superseded memories, entity
and tag metas, aliases, facets with `<data value>`, citations, `<time>`,
`<dfn>`, `<code data-lang>`, folds and asides, and authored links of all four
edge classes. `fixture_coverage` reports what a set of files actually holds.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.dates import as_datetime, normalize_datetime
from memhtml.contracts.errors import GitError, InvalidFlagError
from memhtml.contracts.paths import para_of
from memhtml.contracts.vocab import REL_CLASS
from memhtml.eval import fixture_filler as filler
from memhtml.eval import fixture_structure as structure
from memhtml.eval.fixture_markup import MemSpec, render_spec
from memhtml.eval.fixture_world import World
from memhtml.eval.probes import Probe, build_probe, catalogue

DEFAULT_SEED: Final = 7
DEFAULT_SIZE: Final = 300
DEFAULT_NOW: Final = "2026-01-01T00:00:00Z"
MIN_SIZE: Final = 60
N_PEOPLE: Final = 8
N_SESSIONS: Final = 3
N_TASKS: Final = 10
N_ARCS: Final = 3
N_ARCHIVED: Final = 3
N_SUPERSEDED: Final = 3
MAX_FILES_PER_PROBE: Final = 4  # target + two number controls + one secondary control
FIXTURE_AUTHOR: Final = "memhtml fixture <fixture@memhtml.invalid>"  # author and committer


@dataclass(frozen=True)
class FixturePlan:
    """Every memory file of a fixture (path -> bytes, sorted) and its probes."""

    seed: int
    size: int
    now: str
    files: Mapping[str, bytes]
    probes: tuple[Probe, ...]
    roles: Mapping[str, str] = field(default_factory=dict)

    def tree(self) -> dict[str, bytes]:
        """The whole work tree: the memory root scaffold plus the memory files."""
        return {**scaffold_files(), **self.files}

    def summary(self) -> dict[str, Any]:
        """Counts by type, bucket, role and probe kind."""
        by_role: dict[str, int] = {}
        for role in self.roles.values():
            by_role[role] = by_role.get(role, 0) + 1
        by_kind: dict[str, int] = {}
        for probe in self.probes:
            by_kind[probe.kind] = by_kind.get(probe.kind, 0) + 1
        return {
            "seed": self.seed,
            "size": self.size,
            "now": self.now,
            "files": len(self.files),
            "probes": len(self.probes),
            "probes_by_kind": dict(sorted(by_kind.items())),
            "controls": sum(len(p.controls) for p in self.probes),
            "by_role": dict(sorted(by_role.items())),
        }


def scaffold_files() -> dict[str, bytes]:
    """What `memhtml init` writes besides its commit: .gitkeeps, ignore and attribute files,
    the README (taken from the store's own constants so the two cannot drift)."""
    from memhtml.store.layout import (
        GITATTRIBUTES_LINES,
        GITIGNORE_LINES,
        PARA_DIRS,
        README_HTML,
        SIDE_DIRS,
    )

    out = {f"{d}/.gitkeep": b"" for d in PARA_DIRS + SIDE_DIRS}
    out[".gitignore"] = ("\n".join(GITIGNORE_LINES) + "\n").encode()
    out[".gitattributes"] = ("\n".join(GITATTRIBUTES_LINES) + "\n").encode()
    out["README.html"] = README_HTML.encode()
    return out


def _check_args(size: int, now: str) -> str:
    if size < MIN_SIZE:
        raise InvalidFlagError(
            f"--size {size} is too small: the fixture needs at least {MIN_SIZE} memories"
            " to cover every type, bucket and edge class"
        )
    value = normalize_datetime(now)
    if value is None:
        raise InvalidFlagError(f"--now {now!r} is not a date or an ISO instant")
    return value + "T00:00:00Z" if len(value) == 10 else value


def _link_pass(world: World, specs: list[MemSpec]) -> list[MemSpec]:
    """Authored memory edges among the filler: each rel is used at least once (the first
    memory of a role always gets its link; later ones by chance)."""
    by_role: dict[str, list[MemSpec]] = {}
    for s in specs:
        by_role.setdefault(s.role, []).append(s)

    def pick(role: str, exclude: str) -> str | None:
        pool = [s.path for s in by_role.get(role, []) if s.path != exclude]
        return world.pick(pool) if pool else None

    rules: tuple[tuple[str, str, str, float], ...] = (
        ("incident", "caused_by", "deploy", 0.6),
        ("incident", "example_of", "error", 0.4),
        ("incident", "part_of", "project", 0.3),
        ("deploy", "leads_to", "incident", 0.2),
        ("verdict", "supports", "precedent", 0.8),
        ("insight", "contradicts", "precedent", 0.2),
        ("project", "laterally_related", "fact", 0.5),
        ("error", "relates_to", "runbook", 0.4),
        ("fact", "from_session", "session", 0.2),
        ("glossary", "relates_to", "runbook", 0.3),
    )
    out: list[MemSpec] = []
    first_seen: set[tuple[str, str]] = set()
    for s in specs:
        links: list[tuple[str, str]] = []
        for role, rel, dst_role, p in rules:
            if s.role != role:
                continue
            forced = (role, rel) not in first_seen
            if forced or world.chance(p):
                dst = pick(dst_role, s.path)
                if dst is not None:
                    links.append((rel, dst))
                    first_seen.add((role, rel))
        out.append(s.with_links(*links) if links else s)
    return out


def _filler(world: World, count: int, seen: set[str]) -> list[MemSpec]:
    """`count` filler memories, round-robin over the generators, each with unique content."""
    out: list[MemSpec] = []
    generators = list(filler.FILLERS)
    i = 0
    while len(out) < count:
        make = generators[i % len(generators)]
        i += 1
        for _ in range(12):
            spec = make(world)
            key = spec.article or f"{spec.claim}\n{spec.body}"
            if key not in seen:
                seen.add(key)
                out.append(spec)
                break
            world.taken.discard(spec.path)
    return out


def generate_fixture(
    seed: int = DEFAULT_SEED, size: int = DEFAULT_SIZE, now: str = DEFAULT_NOW
) -> FixturePlan:
    """Plan a fixture of exactly `size` memory files and its probes (pure)."""
    now_value = _check_args(size, now)
    world = World(random.Random(seed), now_value)
    specs: list[MemSpec] = []
    specs += structure.people(world, N_PEOPLE)
    specs += structure.sessions(world, N_SESSIONS)
    fixed_later = N_TASKS + N_ARCS + N_ARCHIVED + 2 * N_SUPERSEDED
    budget = size - len(specs) - fixed_later - len(filler.FILLERS)
    n_probes = min(len(catalogue()), max(0, budget // MAX_FILES_PER_PROBE))
    probes: list[Probe] = []
    for i, template in enumerate(catalogue()[:n_probes], start=1):
        probe, target, controls = build_probe(template, world, i)
        probes.append(probe)
        specs += [target, *controls]
    seen = {s.article or f"{s.claim}\n{s.body}" for s in specs}
    n_filler = size - len(specs) - fixed_later
    fill = _filler(world, n_filler, seen)
    lifecycle: list[MemSpec] = [structure.archived(world) for _ in range(N_ARCHIVED)]
    for _ in range(N_SUPERSEDED):
        lifecycle.extend(structure.superseded_pair(world))
    task_specs = structure.tasks(world, N_TASKS)
    incidents = [s for s in fill if s.role == "incident"] or fill[:3]
    arcs = [
        structure.arc(world, world.sample(incidents, min(3, len(incidents))), i)
        for i in range(N_ARCS)
    ]
    specs += _link_pass(world, fill) + lifecycle + task_specs + arcs
    files = {s.path: render_spec(s) for s in sorted(specs, key=lambda s: s.path)}
    if len(files) != size:  # pragma: no cover - the budget arithmetic above guarantees it
        raise AssertionError(f"planned {len(files)} files for size {size}")
    return FixturePlan(
        seed=seed,
        size=size,
        now=now_value,
        files=files,
        probes=tuple(probes),
        roles={s.path: s.role for s in specs},
    )


# -- writing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FixtureWrite:
    """Where a plan was written and what it committed."""

    root: str
    files: int
    commit_sha: str
    tree_sha: str

    def to_data(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "root": self.root,
            "files": self.files,
            "commit_sha": self.commit_sha,
            "tree_sha": self.tree_sha,
        }


def _git(root: Path, *args: str, stdin: bytes | None = None) -> str:
    base = [
        "git",
        "-c",
        "commit.gpgsign=false",
        "-c",
        "core.autocrlf=false",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "init.defaultBranch=main",
    ]
    full_env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    try:
        proc = subprocess.run(
            [*base, *args], cwd=root, input=stdin, capture_output=True, env=full_env, check=False
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH") from exc
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0]} failed: {err}", details={"args": list(args)})
    return proc.stdout.decode("utf-8", "replace").strip()


def write_tree(files: Mapping[str, bytes], out_dir: Path) -> None:
    """Write path -> bytes under out_dir (parents created)."""
    for rel, data in files.items():
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _fast_import_stream(files: Mapping[str, bytes], ident: str, stamp: str, message: str) -> bytes:
    """One commit of every file on refs/heads/main, as a `git fast-import` stream."""
    who = f"{ident} {stamp}\n".encode()
    body = message.encode()
    parts = [b"commit refs/heads/main\n", b"author " + who, b"committer " + who]
    parts.append(b"data %d\n" % len(body) + body)
    for path in sorted(files):
        data = files[path]
        parts.append(
            b"M 100644 inline " + path.encode() + b"\ndata %d\n" % len(data) + data + b"\n"
        )
    parts.append(b"\n")
    return b"".join(parts)


def write_fixture(
    plan: FixturePlan, out_dir: str | os.PathLike[str], *, configure: bool = True
) -> FixtureWrite:
    """Write the plan as a memory root at `out_dir` (new or empty) and commit it.

    The commit's author, committer and date are fixed (the date is the plan's
    `now`), so two writes of the same plan give the same tree and commit ids.
    The commit goes in through `git fast-import` (one pack instead of a loose
    object per file: several times faster to write and to delete). With
    `configure`, the memhtml merge driver is registered as `memhtml init` does.
    """
    root = Path(out_dir).expanduser().absolute()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InvalidFlagError(
            f"--out {root} must be a new or empty directory",
            suggestions=["pick another --out, or remove the directory"],
        )
    root.mkdir(parents=True, exist_ok=True)
    tree = plan.tree()
    write_tree(tree, root)
    stamp = f"{int(as_datetime(plan.now).timestamp())} +0000"
    message = (
        f"memhtml(fixture): seed {plan.seed}, {len(plan.files)} memories,"
        f" {len(plan.probes)} probes\n"
    )
    _git(root, "init", "-q", "-b", "main")
    _git(root, "fast-import", "--quiet", "--date-format=raw",
         stdin=_fast_import_stream(tree, FIXTURE_AUTHOR, stamp, message))  # fmt: skip
    _git(root, "reset", "-q")  # the index from HEAD: the work tree is already written
    if configure:
        from memhtml.store.layout import init_repo

        init_repo(root)  # merge driver and config only: every scaffold file is already there
    return FixtureWrite(
        root=str(root),
        files=len(plan.files),
        commit_sha=_git(root, "rev-parse", "HEAD"),
        tree_sha=_git(root, "rev-parse", "HEAD^{tree}"),
    )


# -- coverage ----------------------------------------------------------------------------

ELEMENT_CHECKS: Final[dict[str, str]] = {
    "time": "<time datetime=",
    "cite": "<cite>",
    "q": "<q cite=",
    "dfn": "<dfn>",
    "code": "<code data-lang=",
    "details": "<details>",
    "summary": "<summary>",
    "aside": "<aside>",
    "dl": "<dl>",
    "data": "<data value=",
    "ol": "<ol>",
    "ul": "<ul>",
}


def _bucket(path: str) -> str:
    if path.startswith("resources/people/"):
        return "resources/people"
    for special in ("areas/inbox", "areas/arcs"):
        if path.startswith(special + "/"):
            return special
    return para_of(path)


def fixture_coverage(files: Mapping[str, bytes]) -> dict[str, Any]:
    """What a set of memory files covers, parsed with the format's own parser."""
    from memhtml.html import parse_memory

    types: dict[str, int] = {}
    buckets: dict[str, int] = {}
    elements: dict[str, int] = dict.fromkeys(ELEMENT_CHECKS, 0)
    edges: dict[str, int] = {}
    rels: dict[str, int] = {}
    statuses: dict[str, int] = {}
    invalid: list[dict[str, Any]] = []
    counts = {
        "entities": 0,
        "tags": 0,
        "aliases": 0,
        "facets": 0,
        "numeric_facets": 0,
        "citations": 0,
        "superseded": 0,
        "archived": 0,
        "due": 0,
    }
    for path, data in files.items():
        doc = parse_memory(data)
        if doc.violations:
            invalid.append({"path": path, "violations": [v.as_dict() for v in doc.violations]})
            continue
        mtype = doc.memory_type or "?"
        types[mtype] = types.get(mtype, 0) + 1
        bucket = _bucket(path)
        buckets[bucket] = buckets.get(bucket, 0) + 1
        text = data.decode("utf-8")
        for name, needle in ELEMENT_CHECKS.items():
            if needle in text:
                elements[name] += 1
        for link in doc.links:
            edges[REL_CLASS[link.rel]] = edges.get(REL_CLASS[link.rel], 0) + 1
            rels[link.rel] = rels.get(link.rel, 0) + 1
        if doc.task_status:
            statuses[doc.task_status] = statuses.get(doc.task_status, 0) + 1
        counts["entities"] += len(doc.entities)
        counts["tags"] += len(doc.tags)
        counts["aliases"] += len(doc.aliases)
        counts["facets"] += len(doc.facets)
        counts["numeric_facets"] += sum(1 for f in doc.facets if f.numeric is not None)
        counts["citations"] += len(doc.citations)
        counts["superseded"] += 1 if doc.superseded_by else 0
        counts["archived"] += 1 if path.startswith("archive/") else 0
        counts["due"] += 1 if doc.due else 0
    return {
        "files": len(files),
        "types": dict(sorted(types.items())),
        "buckets": dict(sorted(buckets.items())),
        "elements": elements,
        "edge_classes": dict(sorted(edges.items())),
        "rels": dict(sorted(rels.items())),
        "task_statuses": dict(sorted(statuses.items())),
        "counts": counts,
        "invalid": invalid,
    }


__all__ = [
    "DEFAULT_NOW",
    "DEFAULT_SEED",
    "DEFAULT_SIZE",
    "MIN_SIZE",
    "FixturePlan",
    "FixtureWrite",
    "fixture_coverage",
    "generate_fixture",
    "scaffold_files",
    "write_fixture",
    "write_tree",
]
