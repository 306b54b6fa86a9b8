"""`install` and `uninstall`: plan in memory, prove what is ours, then land all of it or none.

Install, for one host at one scope:

1. Read the receipt (a pending one from a killed install is settled first).
   One that cannot be read is refused: it is the only record of an earlier
   install, and install never overwrites a record it cannot account for.
2. Read every file the install touches; a JSON/TOML file that does not parse
   is refused (`ERR_HOST_CONFIG_INVALID`), untouched.
3. Take the previous install out, in memory, after checking that each of its
   claims still matches the disk: an edit of ours by someone else is refused
   (`ERR_INTEGRATION_MODIFIED`) unless `--force`.
4. Refuse anything foreign where ours would go (a hand-written
   `mcpServers.memhtml`, another tool's SKILL.md, a `memhtml hook` entry no
   receipt claims) unless `--force`, which keeps a backup beside the file.
   Identical bytes another host's install wrote are shared, not rewritten.
5. Apply every fragment, recording its splices; check every JSON and TOML
   result parses. Unchanged files and an equivalent receipt: nothing is
   written (an idempotent re-run does not even move `installed_at`).
6. `--dry-run` stops here and reports the contents. Otherwise the changes
   land through `transaction.commit`, the receipt last.

Uninstall reverses each file's splices while they are intact (the file comes
back byte for byte), else removes each fragment by structure; a fragment
another host's receipt still claims is handed over to that receipt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from memhtml.contracts.errors import HostConfigInvalidError, IntegrationModifiedError
from memhtml.integrations import fragments, jsonc, tomltable
from memhtml.integrations.files import missing_dirs, read_text, refuse_links
from memhtml.integrations.fragments import Want
from memhtml.integrations.plan import Setup, wants
from memhtml.integrations.receipt import (
    CommandsRecord,
    FileRecord,
    Fragment,
    Inspected,
    Receipt,
    inspect,
    receipt_path,
)
from memhtml.integrations.splice import Splice, undo
from memhtml.integrations.transaction import (
    Change,
    backup_path,
    commit,
    dirs_to_create,
    settle,
    stamp_now,
)


class Job(NamedTuple):
    """One install or uninstall of one host at one scope."""

    setup: Setup
    receipts: Path  # the receipts folder
    force: bool
    dry_run: bool
    version: str
    now: str


def _load(path: Path, s: Setup) -> Receipt | None:
    return inspect(path, scope=s.scope, root=s.root, host=s.host.id).receipt


def read_receipt(job: Job) -> Inspected:
    """The receipt of this host at this scope (a killed install's pending one settled)."""
    s = job.setup
    path = receipt_path(job.receipts, s.scope, s.root, s.host.id)
    settle(path, lambda p: _load(p, s))
    return inspect(path, scope=s.scope, root=s.root, host=s.host.id)


def settle_all(base: Path) -> None:
    """Settle every pending receipt a killed install left under `base`."""
    pending = [*base.glob("*.json.pending"), *base.glob("projects/*/*.json.pending")]
    for path in pending if base.is_dir() else []:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            host, scope, root = raw["host"], raw["scope"], Path(raw["root"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        final = path.with_name(path.name.removesuffix(".pending"))

        def load(p: Path, h: str = host, sc: str = scope, r: Path = root) -> Receipt | None:
            return inspect(p, scope=sc, root=r, host=h).receipt

        settle(final, load)


def _modified(host: str, path: Path | str, detail: str, **extra: Any) -> IntegrationModifiedError:
    return IntegrationModifiedError(
        f"{host}: {path}: {detail}",
        suggestions=[
            f"memhtml integrations doctor {host}",
            f"memhtml integrations install {host} --force  (keeps a backup beside the file)",
        ],
        details={"host": host, "path": str(path), "detail": detail, **extra},
    )


def check_parse(path: Path, text: str | None) -> None:
    """Refuse a JSON/TOML host config that does not parse (nothing is written)."""
    if text is None or not text.strip():
        return
    try:
        if path.suffix == ".toml":
            tomltable.load(text)
        elif path.suffix in (".json", ".jsonc"):
            root = jsonc.parse(text)
            if root.kind != "object":
                raise jsonc.JsoncError("the top level is not an object", text, root.start)
    except (jsonc.JsoncError, tomltable.TomlError) as exc:
        raise HostConfigInvalidError(
            f"{path} does not parse ({exc}); it was left untouched",
            suggestions=[f"fix {path} (or move it aside), then run the install again"],
            details={"path": str(path), "problem": str(exc)},
        ) from exc


def drift(
    receipt: Receipt, texts: dict[Path, str | None]
) -> list[tuple[FileRecord, Fragment, str]]:
    """The receipt's fragments that no longer match the disk, with what is wrong."""
    out = []
    for record in receipt.files:
        text = texts.get(Path(record.path), read_text(Path(record.path)))
        for f in record.fragments:
            now = fragments.claim(f.kind, text, f.locator, f.value)
            if now != f.claim:
                if now is None:
                    why = GONE if f.kind == "file" else f"{GONE} from the file"
                else:
                    why = EDITED
                out.append((record, f, f"the {f.role} memhtml wrote {why}"))
    return out


GONE = "is gone"
EDITED = "was edited since install"


def edited(
    drifted: list[tuple[FileRecord, Fragment, str]],
) -> list[tuple[FileRecord, Fragment, str]]:
    """The drift that is someone's edit of ours (refused without --force). A fragment that
    is simply gone overwrites nothing when install writes it again, and leaves uninstall
    nothing to remove."""
    return [d for d in drifted if d[2].endswith(EDITED)]


def _others(job: Job, own: Path, *, strict: bool) -> list[tuple[Path, Receipt]]:
    """The other hosts' receipts at this scope and root (`strict`: one that cannot be read
    is refused, since it may claim a file this one shares; else it is passed over)."""
    s = job.setup
    out = []
    for host in ("claude", "codex", "cursor", "opencode"):
        path = receipt_path(job.receipts, s.scope, s.root, host)
        if path == own:
            continue
        found = inspect(path, scope=s.scope, root=s.root, host=host)
        if found.state == "invalid" and strict:
            raise _modified(
                host,
                path,
                f"its receipt cannot be read ({found.problem}), and it may share a file with"
                f" {s.host.id}; repair or remove that receipt first",
            )
        if found.receipt is not None:
            out.append((path, found.receipt))
    return out


def _claimed(
    others: list[tuple[Path, Receipt]], path: str, f: Fragment
) -> tuple[Path, Receipt] | None:
    for rpath, r in others:
        for record in r.files:
            if record.path == path:
                for g in record.fragments:
                    if (g.kind, g.locator, g.claim) == (f.kind, f.locator, f.claim):
                        return rpath, r
    return None


def take_out(
    receipt: Receipt, texts: dict[Path, str | None], others: list[tuple[Path, Receipt]]
) -> dict[Path, str | None]:
    """`texts` without this receipt's fragments (those another receipt claims stay)."""
    out = dict(texts)
    for record in receipt.files:
        path = Path(record.path)
        text = out.get(path)
        if text is None:
            continue
        mine = [f for f in record.fragments if _claimed(others, record.path, f) is None]
        written = [Splice(s.old, s.new) for f in mine if not f.shared for s in f.splices]
        result = undo(text, written)
        if result is None:
            result = text
            for f in reversed(mine):
                result = fragments.strip(f, result)
        else:
            for f in reversed([f for f in mine if f.shared]):
                result = fragments.strip(f, result)
        if record.created and fragments.is_empty(path, result):
            out[path] = None
        else:
            out[path] = result
    return out


def _actions(
    todo: list[Want],
    records: dict[Path, FileRecord],
    before: dict[Path, str | None],
    after: dict[Path, str | None],
    dry_run: bool,
) -> list[dict[str, Any]]:
    rows = []
    for w in todo:
        f = next(g for g in records[w.path].fragments if g.role == w.role and g.kind == w.kind)
        if dry_run:
            action = "planned"
        elif f.shared and not f.splices:
            action = "shared"  # identical bytes another install wrote
        elif after[w.path] == before[w.path]:
            action = "unchanged"
        else:
            action = "created" if before[w.path] is None else "updated"
        rows.append({"path": str(w.path), "role": w.role, "kind": w.kind, "action": action})
    return rows


def _same(a: Receipt | None, b: Receipt) -> bool:
    if a is None:
        return False
    keep = {"installed_at", "backups"}
    return a.model_dump(exclude=keep) == b.model_dump(exclude=keep)


def install(job: Job) -> dict[str, Any]:
    """Install one host at one scope (see the module docstring); the host's report."""
    s = job.setup
    rpath = receipt_path(job.receipts, s.scope, s.root, s.host.id)
    found = read_receipt(job)
    if found.state == "invalid" and not job.force:
        raise _modified(
            s.host.id,
            rpath,
            f"the receipt cannot be read ({found.problem}); install never"
            " overwrites a record it cannot account for",
        )
    previous = found.receipt
    todo = wants(s)
    paths = list(
        dict.fromkeys(
            [w.path for w in todo] + [Path(r.path) for r in (previous.files if previous else [])]
        )
    )
    for p in paths:
        refuse_links(p, s.root)
    before = {p: read_text(p) for p in paths}
    for p in paths:
        check_parse(p, before[p])
    others = _others(job, rpath, strict=False)
    work = dict(before)
    backups: dict[Path, str] = {}
    kept: dict[tuple[str, str, str], Fragment] = {}
    if previous is not None:
        for record, f, why in edited(drift(previous, before)):
            if not job.force:
                raise _modified(s.host.id, record.path, why, role=f.role)
            text = before.get(Path(record.path))
            if text is not None:
                backups[Path(record.path)] = text
        kept = _unchanged(previous, todo, before)
        work = take_out(_without(previous, kept), work, others)
    for w in todo:
        if (str(w.path), w.role, w.kind) in kept:
            continue
        what = fragments.foreign(w, work[w.path])
        if what is None:
            continue
        if not job.force:
            raise _modified(
                s.host.id, w.path, f"{what} and no memhtml receipt claims it", role=w.role
            )
        text = before[w.path]
        if text is not None:
            backups[w.path] = text
    records: dict[Path, FileRecord] = {}
    for w in todo:
        if (str(w.path), w.role, w.kind) in kept:  # already on disk exactly as wanted
            fragment = kept[(str(w.path), w.role, w.kind)]
            created = _created_before(previous, w.path)
            record = records.setdefault(
                w.path, FileRecord(path=str(w.path), created=created, fragments=[])
            )
            record.fragments.append(fragment)
            continue
        try:
            applied = fragments.apply(w, work[w.path], force=job.force)
        except (jsonc.NotAContainerError, tomltable.TomlError) as exc:
            raise HostConfigInvalidError(
                f"{w.path}: {exc}; memhtml will not replace it (nothing was written)",
                details={"path": str(w.path), "problem": str(exc)},
            ) from exc
        work[w.path] = applied.text
        fragment = applied.fragment
        if fragment.shared:  # identical bytes: still ours if the previous install wrote them
            fragment = _previous_writer(previous, w.path, fragment) or fragment
        created = before[w.path] is None or _created_before(previous, w.path)
        record = records.setdefault(
            w.path, FileRecord(path=str(w.path), created=created, fragments=[])
        )
        record.fragments.append(fragment)
    for p in records:
        check_parse(p, work[p])
    receipt = Receipt(
        memhtml_version=job.version,
        host=s.host.id,  # type: ignore[arg-type]
        scope=s.scope,  # type: ignore[arg-type]
        root=str(s.root),
        memhtml_root=s.memhtml_root,
        commands=CommandsRecord(
            cli=list(s.commands.cli), mcp=list(s.commands.mcp), bare=s.commands.bare
        ),
        hooks=s.hooks,  # type: ignore[arg-type]
        trace_root=s.trace_root,
        installed_at=job.now,
        files=list(records.values()),
    )
    changes = [Change(p, work[p]) for p in paths if work[p] != before[p]]
    new_dirs = dirs_to_create(changes, s.root) + missing_dirs(rpath)
    kept_dirs = [d for d in (previous.created_dirs if previous else []) if Path(d).exists()]
    receipt.created_dirs = list(dict.fromkeys([*kept_dirs, *map(str, new_dirs)]))
    unchanged = not changes and _same(previous, receipt)
    report: dict[str, Any] = {
        "host": s.host.id,
        "display_name": s.host.display,
        "changed": not unchanged,
        "memhtml_root": s.memhtml_root,
        "entries": _actions(todo, records, before, work, job.dry_run),
        "backups": [],
        "receipt_path": str(rpath),
        "next_steps": list(s.host.next_steps),
    }
    if job.dry_run:
        report["contents"] = {str(c.path): c.text for c in changes if c.text is not None}
        report["removed_files"] = [str(c.path) for c in changes if c.text is None]
        return report
    if unchanged:
        return report
    stamp = stamp_now()
    receipt.backups = [str(backup_path(p, stamp)) for p in sorted(backups)]
    report["backups"] = commit(
        changes, [(rpath, receipt)], backups=backups, stamp=stamp, remove_dirs=[]
    )
    return report


def _unchanged(
    previous: Receipt, todo: list[Want], texts: dict[Path, str | None]
) -> dict[tuple[str, str, str], Fragment]:
    """The previous install's fragments that are on disk exactly as this one wants them
    (left alone, so a re-run with the same options writes nothing, even where a host
    reformatted the file)."""
    out: dict[tuple[str, str, str], Fragment] = {}
    for w in todo:
        for record in previous.files:
            if record.path != str(w.path):
                continue
            for f in record.fragments:
                if (
                    (f.role, f.kind, tuple(f.locator)) == (w.role, w.kind, w.locator)
                    and f.claim == fragments.expected_claim(w)
                    and jsonc.canonical(f.value) == jsonc.canonical(w.value)
                    and fragments.claim(f.kind, texts.get(w.path), f.locator, f.value) == f.claim
                ):
                    out[(record.path, f.role, f.kind)] = f
    return out


def _without(receipt: Receipt, kept: dict[tuple[str, str, str], Fragment]) -> Receipt:
    """`receipt` less the fragments in `kept` (what a re-install takes out)."""
    copy = receipt.model_copy(deep=True)
    for record in copy.files:
        record.fragments = [
            f for f in record.fragments if (record.path, f.role, f.kind) not in kept
        ]
        if not record.fragments:
            record.created = False  # nothing of it goes: the file stays
    copy.files = [r for r in copy.files if r.fragments]
    return copy


def _previous_writer(previous: Receipt | None, path: Path, new: Fragment) -> Fragment | None:
    """The previous install's own fragment with these exact bytes (it keeps its splices)."""
    for record in previous.files if previous else []:
        if record.path == str(path):
            for f in record.fragments:
                if (f.kind, f.locator, f.claim) == (new.kind, new.locator, new.claim):
                    return f
    return None


def _created_before(previous: Receipt | None, path: Path) -> bool:
    return any(r.path == str(path) and r.created for r in (previous.files if previous else []))


def uninstall(job: Job) -> dict[str, Any]:
    """Remove exactly what the receipt records (see the module docstring); the host's report."""
    s = job.setup
    rpath = receipt_path(job.receipts, s.scope, s.root, s.host.id)
    found = read_receipt(job)
    base: dict[str, Any] = {"host": s.host.id, "display_name": s.host.display}
    if found.state == "absent":
        return {
            **base,
            "state": "not-installed",
            "changed": False,
            "entries": [],
            "backups": [],
            "receipt_path": str(rpath),
            "next_steps": [],
        }
    if found.receipt is None:
        raise _modified(
            s.host.id,
            rpath,
            f"the receipt cannot be read ({found.problem}), so nothing was"
            " removed: read it, and delete it by hand if you mean to",
        )
    receipt = found.receipt
    paths = [Path(r.path) for r in receipt.files]
    for p in paths:
        refuse_links(p, s.root)
    before = {p: read_text(p) for p in paths}
    backups: dict[Path, str] = {}
    for record, f, why in edited(drift(receipt, before)):
        if not job.force:
            raise _modified(
                s.host.id, record.path, f"{why}; uninstall never deletes an edit", role=f.role
            )
        text = before[Path(record.path)]
        if text is not None:
            backups[Path(record.path)] = text
    others = _others(job, rpath, strict=True)
    handed = _hand_over(receipt, others)
    after = take_out(receipt, before, others)
    changes = [Change(p, after[p]) for p in paths if after[p] != before[p]]
    dirs = [Path(d) for d in receipt.created_dirs]
    entries = []
    for record in receipt.files:
        for f in record.fragments:
            kept = _claimed(others, record.path, f) is not None
            entries.append(
                {
                    "path": record.path,
                    "role": f.role,
                    "kind": f.kind,
                    "action": "unchanged" if kept else "removed",
                }
            )
    if not job.dry_run:
        stamp = stamp_now()
        ops: list[tuple[Path, Receipt | None]] = [(rpath, None), *handed]
        written = commit(changes, ops, backups=backups, stamp=stamp, remove_dirs=dirs)
        _adopt_dirs(job, dirs)
    else:
        written = []
    return {
        **base,
        "state": "installed",
        "changed": True,  # the receipt goes, whatever else changed
        "entries": entries,
        "backups": written,
        "receipt_path": str(rpath),
        "next_steps": [],
        **({"contents": {str(c.path): c.text for c in changes}} if job.dry_run else {}),
    }


def _hand_over(receipt: Receipt, others: list[tuple[Path, Receipt]]) -> list[tuple[Path, Receipt]]:
    """Give the fragments another receipt shares to that receipt, with our splices (so its
    uninstall can still reverse them exactly) and our created folders above them."""
    changed: dict[Path, Receipt] = {}
    for record in receipt.files:
        for f in record.fragments:
            hit = _claimed(others, record.path, f)
            if hit is None or f.shared:
                continue
            rpath, other = hit
            other = changed.get(rpath, other.model_copy(deep=True))
            for theirs in other.files:
                if theirs.path != record.path:
                    continue
                theirs.created = theirs.created or record.created
                for i, g in enumerate(theirs.fragments):
                    if (g.kind, g.locator, g.claim) == (f.kind, f.locator, f.claim) and g.shared:
                        theirs.fragments[i] = f.model_copy()
            above = [d for d in receipt.created_dirs if Path(d) in Path(record.path).parents]
            other.created_dirs = list(dict.fromkeys([*other.created_dirs, *above]))
            changed[rpath] = other
    return list(changed.items())


def _adopt_dirs(job: Job, dirs: list[Path]) -> None:
    """Folders an uninstall created but could not remove (another install still uses them)
    pass to a remaining receipt, so the last uninstall removes them."""
    left = [str(d) for d in dirs if d.is_dir()]
    if not left:
        return
    from memhtml.integrations.receipt import all_receipts, write

    for path in all_receipts(job.receipts):
        try:
            raw = Receipt.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        raw.created_dirs = list(dict.fromkeys([*raw.created_dirs, *left]))
        write(path, raw)
        return
