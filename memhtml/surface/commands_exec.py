"""The `exec` command: code mode, a read-only script over one commit of the corpus."""

from __future__ import annotations

from typing import Final

from memhtml.surface.spec import Command, Param

# The bounds as plain numbers: the table is read on every CLI start, so it must
# not import memhtml.codemode (tested equal to memhtml.codemode.limits).
DEFAULT_TIMEOUT_MS: Final = 30_000
MAX_TIMEOUT_MS: Final = 600_000
DEFAULT_MEMORY_MB: Final = 512

EXEC_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "exec",
        "Run a JavaScript module over the corpus at one commit: read-only, sandboxed, one report.",
        "exec.report",
        "memhtml.cli.handlers.exec:run_script",
        params=(
            Param("stdin", "- reads the script from stdin (also the default)", positional=True),
            Param("file", "the script, an ES module file", metavar="FILE"),
            Param("script", "the script text", metavar="TEXT"),
            Param(
                "sha", "the commit to read (default HEAD, resolved before it runs)", metavar="REF"
            ),
            Param(
                "timeout_ms",
                "wall-time bound; the script is stopped with exit_code 124",
                type="int",
                default=DEFAULT_TIMEOUT_MS,
                minimum=1,
                maximum=MAX_TIMEOUT_MS,
            ),
            Param(
                "memory_mb",
                "memory bound of the script's heap",
                type="int",
                default=DEFAULT_MEMORY_MB,
                minimum=16,
                maximum=4096,
            ),
        ),
        errors=(
            "ERR_INVALID_FLAG",
            "ERR_INPUT_TOO_LARGE",
            "ERR_MISSING_ARGUMENT",
            "ERR_UNEXPECTED_ARGUMENT",
            "ERR_PATH_NOT_FOUND",
            "ERR_INVALID_MEMORY",
            "ERR_REPO_REQUIRED",
            "ERR_GIT",
            "ERR_SANDBOX",
        ),
        examples=(
            'memhtml exec --script \'import { corpus } from "/workspace/lib/corpus.mjs";'
            " console.log(corpus().size)'",
            "memhtml exec --file census.mjs --sha HEAD~3",
            "memhtml exec - < census.mjs",
        ),
        details=(
            "The script runs in QuickJS with the tree of one commit (--sha, else HEAD resolved"
            " first) mounted read-only at /mnt/memhtml through node:fs (readFileSync,"
            " readdirSync, statSync, existsSync; writes fail EROFS; `..` and host paths do not"
            " resolve; symbolic links are not followed) and the helper"
            " /workspace/lib/corpus.mjs (ROOT, walk, memoryAt, corpus, backlinks, chain,"
            " edges). No network, environment, host clock (Date is the commit's time), index"
            " or state. Exactly one of --file, --script, or stdin (- or neither); two doors are"
            " ERR_INVALID_FLAG, a missing --file ERR_PATH_NOT_FOUND, a blank script"
            " ERR_MISSING_ARGUMENT, one over 1,000,000 characters ERR_INPUT_TOO_LARGE (exit 2);"
            " a ref naming no commit is ERR_INVALID_MEMORY."
            " A script that throws or reaches a bound is still a success: exit_code,"
            " stdout, stderr (the stack), duration_ms, files_read, and `limit` {name: time |"
            " memory | output | files, bound, reached, unit}; timed_out with exit_code 124"
            " for time. Output is bounded at 10 MiB, files read at 100,000. The bounds cover"
            " what the script makes happen: HTML is parsed in the sandbox within --memory-mb and"
            " the deadline, a file larger than --memory-mb is not read (out of memory), a path"
            " over 4,096 characters is ENAMETOOLONG. docs/code-mode.md is the cookbook."
        ),
    ),
)
