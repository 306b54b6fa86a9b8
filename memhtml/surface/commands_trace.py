"""The `trace` command group: index session transcripts, search them, link them to memories."""

from __future__ import annotations

from typing import Final

from memhtml.surface.spec import Command, Param

H = "memhtml.cli.handlers.trace"
_SESSION_ID_DETAILS: Final = (
    "--session-id takes the full id or, like a git hash, a unique prefix of at least 4"
    " characters (what `trace search` prints on a terminal is enough), looked up among the"
    " sessions memories were written or read under and the indexed transcripts; data.session_id"
    " is the full id. A prefix of several ids is ERR_AMBIGUOUS_ID (details.candidates, at most"
    " 10, and details.count), one of none ERR_PATH_NOT_FOUND, a shorter one that is not itself"
    " an id ERR_INVALID_FLAG. The doors that record a session (write, correct, apply, read"
    " --session-id) store the id exactly as given."
)

TRACE_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "trace index",
        "Index agent session transcripts; a re-run reads only the bytes appended since.",
        "trace.report",
        f"{H}:index",
        params=(
            Param(
                "root",
                "transcript root (default: $MEMHTML_TRACE_ROOT, else ~/.claude/projects)",
                metavar="DIR",
            ),
        ),
        errors=("ERR_WRITE_CONFLICT", "ERR_STORAGE"),
        examples=("memhtml trace index", "memhtml trace index --root ~/.claude"),
        details=(
            "Reads <root>/<slug>/<session>.jsonl and <root>/<slug>/<session>/subagents/"
            "agent-<id>.jsonl (a root with a projects/ folder is read below it) into"
            " .memhtml/traces/traces.db, a projection: delete it and re-run for the same rows."
            " Each file keeps a watermark (size, mtime, byte offset): an unchanged file is"
            " skipped, a grown one read from its offset (tailed, appended_bytes), a truncated"
            " or rewritten one re-read whole (rescanned, rescan_reasons), a vanished one"
            " forgotten (removed). Bad input is never fatal: invalid JSON or UTF-8 lines, lines"
            " over 16 MiB, an unfinished last line, unreadable or vanishing files and a missing"
            " root are counted in problem_counts and listed in problems with their reason."
            " Progress goes to stderr on a terminal only."
        ),
    ),
    Command(
        "trace search",
        "Search transcript turns (BM25): session, time, role and a snippet per hit.",
        "trace.sessions",
        f"{H}:search",
        params=(
            Param(
                "query",
                'words to find ("quoted words" are a phrase)',
                positional=True,
                required=True,
            ),
            Param(
                "session_id",
                "only this session's turns (its id, or a unique prefix of 4+ characters)",
                metavar="ID",
            ),
            Param("since", "only turns at or after this date or instant", metavar="DATETIME"),
            Param("cwd", "only sessions run in this working directory", metavar="DIR"),
            Param(
                "limit", "at most this many hits", type="int", default=20, minimum=1, maximum=200
            ),
        ),
        errors=(
            "ERR_INVALID_FLAG",
            "ERR_INPUT_TOO_LARGE",
            "ERR_AMBIGUOUS_ID",
            "ERR_PATH_NOT_FOUND",
            "ERR_STORAGE",
        ),
        examples=(
            'memhtml trace search "flaky test" --since 2026-01-01',
            "memhtml trace search migration --session-id 6f1c2d0e --limit 5",
        ),
        details=(
            "Every word must occur in a turn (match: all); when no turn has them all, any word"
            " counts (match: any). hits carry session_id, timestamp, role (user, assistant,"
            " tool_use, tool_result, thinking, system, summary, attachment), a snippet with the"
            " match between « and », and file_path/line_no/byte_at to find the line; sessions"
            " lists the hits' sessions (first prompt, AI title, start). A query with no word"
            " lists recent sessions (degraded: true). Before the first `trace index` the"
            " answer is empty with indexed: false. " + _SESSION_ID_DETAILS
        ),
    ),
    Command(
        "trace links",
        "Which memories a session wrote, corrected or read, or a memory's sessions.",
        "trace.links",
        f"{H}:links",
        params=(
            Param(
                "session_id",
                "links of this session (its id, or a unique prefix of 4+ characters)",
                metavar="ID",
            ),
            Param("path", "links of this memory (a leading / is dropped)", metavar="PATH"),
        ),
        errors=("ERR_INVALID_MEMORY", "ERR_INVALID_PATH", "ERR_AMBIGUOUS_ID", "ERR_PATH_NOT_FOUND"),
        examples=(
            "memhtml trace links --session-id 6f1c2d0e",
            "memhtml trace links --path areas/inbox/wal-mode.html",
        ),
        details=(
            "Needs --session-id or --path (ERR_INVALID_MEMORY otherwise); given both, a link"
            " matches both."
            " wrote and corrected come from the memhtml-session, memhtml-prompt and"
            " memhtml-turn metas the write doors stamp (write/apply/task add/correct"
            " --session-id), so they follow a memory into archive/ and survive any rebuild;"
            " read comes from `read --session-id`. Newest first (at), then path."
            " session_indexed says whether the session's transcript is in the trace plane. "
            + _SESSION_ID_DETAILS
        ),
    ),
)
