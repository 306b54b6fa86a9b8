"""Typed errors. Each class carries exactly one ``ERR_*`` code.

Errors are raised in the core and turned into envelopes and exit codes only at
the adapters (CLI, MCP). Agents branch on the code, never on the message, so
codes are append-only. Expected outcomes (deduped, skipped, degraded, not
found in a search) are values, not exceptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar


class MemhtmlError(Exception):
    """Base of every typed failure; carries a code, an exit code and suggestions."""

    code: ClassVar[str] = "ERR_UNKNOWN"
    exit_code: ClassVar[int] = 1
    summary: ClassVar[str] = "an unexpected failure"

    def __init__(
        self,
        message: str,
        *,
        suggestions: Sequence[str] = (),
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.suggestions = list(suggestions)
        self.details = details or {}


class UsageError(MemhtmlError):
    """The command line itself is wrong; exit 2."""

    code = "ERR_INVALID_FLAG"
    exit_code = 2
    summary = "a flag is unknown or its value is invalid"


class UnknownCommandError(UsageError):
    """No command of that name exists."""

    code = "ERR_UNKNOWN_COMMAND"
    summary = "no command of that name"


class MissingArgumentError(UsageError):
    """A required argument or flag was not given."""

    code = "ERR_MISSING_ARGUMENT"
    summary = "a required argument or flag is missing"


class InvalidFlagError(UsageError):
    """A flag is unknown, or its value does not parse."""

    code = "ERR_INVALID_FLAG"
    summary = "a flag is unknown or its value is invalid"


class UnexpectedArgumentError(UsageError):
    """More positional arguments than the command takes."""

    code = "ERR_UNEXPECTED_ARGUMENT"
    summary = "an extra positional argument"


class InvalidOpError(UsageError):
    """A JSONL op line is not JSON or not a valid op; nothing was executed."""

    code = "ERR_INVALID_OP"
    summary = "an op in a batch is malformed (nothing ran)"


class RepoRequiredError(MemhtmlError):
    """The command needs an initialized memhtml repository and found none."""

    code = "ERR_REPO_REQUIRED"
    summary = "no memhtml repository at the root"


class PathNotFoundError(MemhtmlError):
    """The named memory (or commit/path pair) does not exist."""

    code = "ERR_PATH_NOT_FOUND"
    summary = "the memory path does not exist"


class InvalidPathError(MemhtmlError):
    """Not a valid memory path: absolute, `..`, outside the buckets, or escaping the root."""

    code = "ERR_INVALID_PATH"
    summary = "the path is not a valid root-relative memory path"


class InvalidMemoryError(MemhtmlError):
    """A memory breaks the format (violations listed in details) or a field value is invalid."""

    code = "ERR_INVALID_MEMORY"
    summary = "the memory violates the file format or vocabulary"


class DuplicateContentError(MemhtmlError):
    """Content identical to an active memory where a duplicate cannot be deduped away."""

    code = "ERR_DUPLICATE_CONTENT"
    summary = "an active memory already holds this content"


class WriteConflictError(MemhtmlError):
    """The repository lock could not be had in time, or a write would clobber another."""

    code = "ERR_WRITE_CONFLICT"
    summary = "another writer holds the store; retry"


class DirtyTreeError(MemhtmlError):
    """The operation needs a clean tree (or clean target files) and found uncommitted edits."""

    code = "ERR_DIRTY_TREE"
    summary = "uncommitted edits block the operation"


class IndexStaleError(MemhtmlError):
    """The index does not reflect HEAD where the operation needs it to."""

    code = "ERR_INDEX_STALE"
    summary = "the index is behind the tree; run `memhtml index update`"


class EmbedModelMismatchError(MemhtmlError):
    """The index holds vectors of another model; mixing vector spaces is refused."""

    code = "ERR_EMBED_MODEL_MISMATCH"
    summary = "the index was built with another embedding model"


class ModelUnavailableError(MemhtmlError):
    """The embedding or language model cannot be loaded or reached."""

    code = "ERR_MODEL_UNAVAILABLE"
    summary = "the model is missing or unreachable"


class StorageError(MemhtmlError):
    """The index or state database failed (corrupt, locked past the bound, unwritable)."""

    code = "ERR_STORAGE"
    summary = "the index or state database failed"


class GitError(MemhtmlError):
    """A git operation failed."""

    code = "ERR_GIT"
    summary = "a git operation failed"


class DiscriminationFailedError(MemhtmlError):
    """The discrimination gate found an inversion or an MRR below the floor."""

    code = "ERR_DISCRIMINATION_FAILED"
    summary = "retrieval could not tell a target from its controls"


class RebuildNoEmbedRefusedError(MemhtmlError):
    """A rebuild without embedding would discard existing vectors; needs --force."""

    code = "ERR_REBUILD_NO_EMBED_REFUSED"
    summary = "rebuild --no-embed over a store with vectors needs --force"


class DocStaleError(MemhtmlError):
    """A generated document (AGENTS.md) does not match what its source would generate."""

    code = "ERR_DOC_STALE"
    summary = "a generated document is out of date"


class UnknownError(MemhtmlError):
    """Anything not anticipated; the adapters wrap stray exceptions in it."""

    code = "ERR_UNKNOWN"
    summary = "an unexpected failure"


def _all_error_classes() -> list[type[MemhtmlError]]:
    seen: list[type[MemhtmlError]] = []
    stack: list[type[MemhtmlError]] = [MemhtmlError]
    while stack:
        cls = stack.pop()
        if cls not in seen:
            seen.append(cls)
            stack.extend(cls.__subclasses__())
    return seen


def error_codes() -> dict[str, str]:
    """Every error code with its one-line meaning, sorted by code (for the manifest)."""
    out: dict[str, str] = {}
    for cls in _all_error_classes():
        out.setdefault(cls.code, cls.summary)
    return dict(sorted(out.items()))


class InputTooLargeError(UsageError):
    """An input (a search or recall query) is over its size limit; refused before any work."""

    code = "ERR_INPUT_TOO_LARGE"
    summary = "an input is over its size limit (the message names the limit)"


class ExtraRequiredError(MemhtmlError):
    """The command needs an optional extra (e.g. `research`) that is not installed."""

    code = "ERR_EXTRA_REQUIRED"
    summary = "an optional extra is not installed (pip install 'memhtml[<extra>]')"


class PartialFailureError(MemhtmlError):
    """A batch run with continue-on-error committed some ops while others failed.

    `details` is the whole batch result (per-op results, summary, commit_sha),
    so a script can tell what landed from what did not.
    """

    code = "ERR_PARTIAL_FAILURE"
    summary = "some ops of a batch failed; the others were committed (see details)"


class LlmContractViolationError(MemhtmlError):
    """A language model's answer did not decode or validate against the requested schema.

    Raised by an ``llm`` backend; the model caller retries it a bounded number
    of times and then refuses the call as a value (nothing is half-applied).
    """

    code = "ERR_LLM_CONTRACT"
    summary = "a language model answered outside the requested schema"


class ConflictError(MemhtmlError):
    """A write states another value for a fact an active memory (or an earlier op) holds.

    Raised only under `apply --strict` (MCP `strict`), which holds such a
    write instead of committing it; `details` names both paths and claims.
    Without it a conflict is a reported value, never an error.
    """

    code = "ERR_CONFLICT"
    summary = "a write conflicts with an active memory's value for the same fact (held: --strict)"


class InvalidSidecarError(UsageError):
    """A state sidecar line is not a valid row: `state import` names it and imports nothing."""

    code = "ERR_INVALID_SIDECAR"
    summary = "a state sidecar line is malformed (nothing was imported; the message names it)"


class SyncConflictError(MemhtmlError):
    """Both sides changed one memory's article, or an earlier sync's merge is unresolved."""

    code = "ERR_SYNC_CONFLICT"
    summary = "a sync merge needs a person: both sides changed a memory (resolve or sync --abort)"


class RemoteError(MemhtmlError):
    """No remote, an unreachable or unrelated remote, a push the remote kept rejecting, or
    incoming commits a memory must not take (`details.reason`: refused, deletions)."""

    code = "ERR_REMOTE"
    summary = (
        "the git remote is missing, unreachable, unrelated, kept rejecting the push, or brings"
        " what a memory must not hold"
    )


class OutInsideRepoError(UsageError):
    """`publish --out` names a directory inside the memory root (or one that writes into it).

    A site written into the corpus would be files no commit accounts for;
    publishing into the repository is `publish` without `--out`.
    """

    code = "ERR_OUT_INSIDE_REPO"
    summary = "an --out directory lies inside the memory root (publish without --out commits)"


class SandboxError(MemhtmlError):
    """The code-mode sandbox could not run a script: its runtime is missing, or it died unreported.

    A script that throws or reaches a bound is a report (`exec.report`), never
    this error; this is the runtime itself failing.
    """

    code = "ERR_SANDBOX"
    summary = "the code-mode sandbox could not start or died without a report"


class ScriptNotFoundError(PathNotFoundError):
    """`exec --file` names no readable file: a usage error (exit 2), as in the original."""

    exit_code = 2


class SecretFoundError(MemhtmlError):
    """A memory would hold a credential (an API key, a token, a private key, a password).

    `details` names the field (title, claim, body, tag, entity, facet, link,
    path, ...) and the kind of secret (a rule id of memhtml.domain.secrets),
    never the secret itself. The caller may insist with `--allow-secret`
    (MCP and ops: `allow_secret`).
    """

    code = "ERR_SECRET_DETECTED"
    summary = "a memory would hold a credential (remove it, or pass --allow-secret)"


class DiskFullError(MemhtmlError):
    """The file system (or the user's quota) holding the store has no room left.

    ENOSPC or EDQUOT from a file write, a git command that says so, or SQLite's
    SQLITE_FULL. The message names the path and the file system to free space
    on; a write door answering this committed nothing and left nothing behind
    (once the commit has landed, a door answers success with a warning instead).
    """

    code = "ERR_DISK_FULL"
    summary = "the disk (or quota) holding the store is full: free space where it says, retry"


class ArchivedMemoryError(InvalidMemoryError):
    """The target is an archived memory: archived versions are history, never edited in place.

    `details.live_path` names the live memory it became (through
    `memhtml-superseded-by`), when one does: act on that one.
    """

    code = "ERR_ARCHIVED"
    summary = "the memory is archived; act on the live memory it became (details.live_path)"


class AmbiguousIdError(MemhtmlError):
    """An id prefix (a session id, like git's short hashes) matches several ids.

    `details.candidates` lists some of them (capped), `details.count` how many.
    """

    code = "ERR_AMBIGUOUS_ID"
    summary = "an id prefix matches several ids; give more characters (details.candidates)"


class EmbedContractError(ModelUnavailableError):
    """An embedding endpoint answered, but not with usable vectors: another width than the
    space's, fewer or more rows than texts sent, NaN or infinite values, or a body that is
    not the JSON of an embeddings reply (an HTML page from a proxy, say).

    Retrying does not help (the endpoint serves another model, or is not the embeddings
    API); a caller that treats the model as unavailable (search narrows to the lexical
    arms, a write keeps its lexical rows) may still catch it as ``ModelUnavailableError``.
    """

    code = "ERR_EMBED_CONTRACT"
    summary = "an embedding endpoint answered with unusable vectors (width, rows, NaN, not JSON)"


class UnknownHostError(UsageError):
    """A coding agent named on the command line is not one `integrations` can wire."""

    code = "ERR_UNKNOWN_HOST"
    summary = "the host is not one of claude, codex, cursor, opencode"


class UnknownHookEventError(UsageError):
    """`memhtml hook` named an event outside its vocabulary (typed by hand, or a broken config)."""

    code = "ERR_UNKNOWN_HOOK_EVENT"
    summary = "the hook event is not session-start, user-prompt-submit, pre-compact or session-end"


class IntegrationModifiedError(MemhtmlError):
    """What an integration's receipt owns no longer matches the disk, or something not ours is
    where ours would go: refused (nothing written) so a person's edit is never overwritten.

    `details` names the host, the path and what differs; `--force` overrides, keeping the
    prior bytes beside the file as a backup the report names.
    """

    code = "ERR_INTEGRATION_MODIFIED"
    summary = "a host config memhtml wrote (or would write) was changed by someone else (--force)"


class HostConfigInvalidError(MemhtmlError):
    """A coding agent's own config file does not parse (JSON, JSONC or TOML): refused and left
    untouched, because any edit would have to guess at the rest of the file."""

    code = "ERR_HOST_CONFIG_INVALID"
    summary = "a host's config file does not parse; nothing was written (fix the file it names)"


class UnhealthyError(MemhtmlError):
    """`doctor --strict` found the store (or a validated file) not healthy; the report is in
    details. Advisory findings (overdue tasks, stale blockers, untyped entities) never raise it."""

    code = "ERR_UNHEALTHY"
    summary = "doctor --strict: the store or a file is not healthy (details: the report)"


class UnknownChangeError(UsageError):
    """A change id that is not one of the run's changes (a typo, another run's change, a page
    older than the branch), or a refusal to lift that does not stand; nothing changed."""

    code = "ERR_UNKNOWN_CHANGE"
    summary = "no such change in that sleep run, or no such standing refusal (main unchanged)"
