"""The receipt: what an install wrote, where, and the exact edit it made to each file.

It is the whole ownership story. `list` reads it, `doctor` re-checks each
claim against the disk, `uninstall` reverses exactly the splices it records
(or, when a host rewrote the file, removes exactly the values it records),
and nothing is ever inferred from a host's config: "an entry that looks like
ours" and "an entry we wrote" are different claims, and only the second
licenses a delete.

Where: `$XDG_CONFIG_HOME/memhtml/integrations/` (default `~/.config/...`),
`<host>.json` for user scope (the original memhtml's path, so its receipt is
recognised and never overwritten) and `projects/<name>-<hash>/<host>.json`
for a repository. Not in the repository: a receipt names this machine's
binaries and store, and a clone that carried it would claim bytes its own
memhtml never wrote. Not in the store: a store can be deleted, and its
integrations must still uninstall. Receipts are written last, atomically,
mode 0600, under a lock that serialises installs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from memhtml.contracts.errors import StorageError
from memhtml.integrations.files import read_text, write_atomic

FORMAT = "memhtml.integration-receipt"
ROLES = ("mcp-entry", "hooks", "instruction-block", "skill", "plugin", "rules")
Kind = Literal["json-member", "json-items", "toml-table", "markdown-block", "file"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpliceRecord(_Model):
    """One edit: `old` replaced by `new`."""

    old: str
    new: str


class Fragment(_Model):
    """One thing of ours in one file."""

    role: Literal["mcp-entry", "hooks", "instruction-block", "skill", "plugin", "rules"]
    kind: Kind
    locator: list[str] = []  # the key path (JSON/TOML); for json-items, the event map's path
    value: Any = None  # what we wrote: the value, {event: [entries]}, the table, the body
    claim: str  # sha256 of what we own, as `fragments.claim` reads it
    prune: dict[str, list[str]] = {}  # where: the outermost key path this install created
    splices: list[SpliceRecord] = []
    shared: bool = False  # identical bytes another install wrote; claimed, not written


class FileRecord(_Model):
    """A file this install touched."""

    path: str
    created: bool
    fragments: list[Fragment]


class CommandsRecord(_Model):
    """The argv prefixes the host config runs."""

    cli: list[str]
    mcp: list[str]
    bare: bool


class Receipt(_Model):
    """An install of one host at one scope."""

    format: Literal["memhtml.integration-receipt"] = "memhtml.integration-receipt"
    version: Literal[1] = 1
    memhtml_version: str
    host: Literal["claude", "codex", "cursor", "opencode"]
    scope: Literal["user", "project"]
    root: str
    memhtml_root: str
    commands: CommandsRecord
    hooks: Literal["all", "session", "none"]
    trace_root: str | None = None
    installed_at: str
    files: list[FileRecord]
    created_dirs: list[str] = []
    backups: list[str] = []


def receipts_dir(home: Path, environ: dict[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/memhtml/integrations` (default `~/.config/...`)."""
    base = environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else home / ".config"
    return root / "memhtml" / "integrations"


def receipt_path(base: Path, scope: str, root: Path, host: str) -> Path:
    """Where the receipt of `host` at `scope` rooted at `root` lives."""
    if scope == "user":
        return base / f"{host}.json"
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-") or "repo"
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:12]
    return base / "projects" / f"{name}-{digest}" / f"{host}.json"


class Inspected:
    """A receipt file: absent, valid (`receipt`), or present and unusable (`problem`)."""

    def __init__(
        self, path: Path, receipt: Receipt | None = None, problem: str | None = None
    ) -> None:
        self.path = path
        self.receipt = receipt
        self.problem = problem

    @property
    def state(self) -> str:
        """absent | valid | invalid"""
        if self.receipt is not None:
            return "valid"
        return "invalid" if self.problem is not None else "absent"


def inspect(path: Path, *, scope: str, root: Path, host: str) -> Inspected:
    """Read the receipt at `path` and check it belongs there (its host, scope and root)."""
    text = read_text(path)
    if text is None:
        return Inspected(path)
    try:
        raw = json.loads(text)
    except ValueError as exc:
        return Inspected(path, problem=f"not valid JSON ({exc})")
    if isinstance(raw, dict) and raw.get("package") == "memhtml" and "entries" in raw:
        return Inspected(
            path,
            problem="it was written by the original memhtml (TypeScript); uninstall with that"
            " tool, or install with --force to take it over",
        )
    try:
        receipt = Receipt.model_validate(raw)
    except ValidationError as exc:
        from memhtml.contracts.plain import sentence

        found = exc.errors(include_url=False)
        return Inspected(path, problem=sentence(found, limit=1, whole="the receipt", drop=()))
    if (receipt.host, receipt.scope, receipt.root) != (host, scope, str(root)):
        return Inspected(
            path,
            problem=f"it names {receipt.host} at {receipt.scope} scope under {receipt.root},"
            f" not {host} at {scope} scope under {root}",
        )
    for record in receipt.files:
        p = Path(record.path)
        if (
            not p.is_absolute()
            or os.path.normpath(p) != str(p)
            or not _under(p, Path(receipt.root))
        ):
            return Inspected(path, problem=f"it claims {record.path}, outside {receipt.root}")
    return Inspected(path, receipt)


def _under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def write(path: Path, receipt: Receipt) -> None:
    """Write the receipt atomically, pretty-printed, readable by its owner only."""
    text = json.dumps(receipt.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    write_atomic(path, text, 0o600)


def all_receipts(base: Path) -> Iterator[Path]:
    """Every receipt file under `base` (user scope first, then projects)."""
    if base.is_dir():
        yield from sorted(p for p in base.glob("*.json") if p.is_file())
        yield from sorted(p for p in base.glob("projects/*/*.json") if p.is_file())


@contextmanager
def locked(home: Path) -> Iterator[None]:
    """Serialise installs and uninstalls on this machine: an advisory lock on the home folder
    itself (every receipt lives below it, and locking it creates no file to clean up)."""
    try:
        fd = os.open(home, os.O_RDONLY)
    except OSError as exc:
        raise StorageError(
            f"could not open {home} to lock it: {exc.strerror or exc}", details={"path": str(home)}
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
