"""The `state` command group: the state plane's sidecars, exported and imported."""

from __future__ import annotations

from typing import Final

from memhtml.surface.spec import Command, Param

H = "memhtml.cli.handlers.state"

STATE_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "state export",
        "Write the state plane (access counts, outcome EWMA, corroboration) to the committed"
        " sidecars, one commit; unchanged rows commit nothing.",
        "state.export",
        f"{H}:export",
        errors=("ERR_WRITE_CONFLICT", "ERR_REPO_REQUIRED", "ERR_GIT"),
        examples=("memhtml state export",),
        details=(
            ".memhtml/state/access.jsonl holds one row a line, sorted by path, in the original"
            " memhtml's format (keys path, accessCount, reinforcementCount, outcomeScore (4"
            " decimals), lastAccessedAt, lastReinforcedAt, updatedAt), so either tool imports"
            " the other's; .memhtml/state/corroboration.jsonl holds sleep's entity and edge"
            " corroboration counters. The bytes are a function of the rows: an unchanged plane"
            " writes nothing and commit_sha is null. An empty plane never empties a committed"
            " sidecar. sleep's state-export phase writes the same bytes nightly."
        ),
    ),
    Command(
        "state import",
        "Merge a sidecar (default: the committed ones) into the state plane, e.g. in a fresh"
        " clone; idempotent, never lowers a newer row.",
        "state.import",
        f"{H}:import_",
        params=(
            Param(
                "file",
                "a sidecar file (default: .memhtml/state/access.jsonl and corroboration.jsonl)",
                positional=True,
                metavar="FILE",
            ),
        ),
        errors=("ERR_INVALID_SIDECAR", "ERR_PATH_NOT_FOUND", "ERR_REPO_REQUIRED"),
        examples=("memhtml state import", "memhtml state import backup/access.jsonl"),
        details=(
            "Every line is validated before anything is written: a malformed line is"
            " ERR_INVALID_SIDECAR (exit 2) naming the file and line, and nothing is imported."
            " The merge keeps the larger count and the later last-access time; the outcome"
            " EWMA comes from the sidecar only when its row is newer (updatedAt). Importing"
            " the same file again restores 0 rows. A committed sidecar arrives by sync, so a"
            " timestamp later than now plus 5 minutes, a count past 64 bits, a line over 16 KiB"
            " or a file over 128 MiB is refused; a count over 1,000,000 is clamped to it"
            " (`clamped`). Only rows naming a memory file of the tree are imported (one git"
            " moved is followed to its new path, `followed`); the others are counted in"
            " `skipped` and listed in `skipped_paths`. A file named corroboration.jsonl is read"
            " as corroboration rows."
        ),
    ),
)
