"""The `integrations` group and `hook`: wiring memhtml into coding agents (memhtml.integrations)."""

from __future__ import annotations

from typing import Final

from memhtml.surface.spec import Command, Param

H = "memhtml.cli.handlers.integrations"
HOSTS_TEXT = "claude, codex, cursor or opencode"

_PROJECT = Param(
    "project",
    "repository scope: the repository at this path (its git top level) instead of your home",
    metavar="DIR",
)
_FORCE = Param(
    "force",
    "overwrite what someone else changed or put where ours goes; the prior bytes are kept"
    " beside the file as a backup the report names",
    type="bool",
    default=False,
)
_DRY_RUN = Param(
    "dry_run",
    "report every file and entry, with the contents, and write nothing",
    type="bool",
    default=False,
)

INTEGRATION_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "integrations install",
        "Wire a coding agent to this store: its MCP entry, hooks, instruction block and skill,"
        " merged into its own files and recorded in a receipt.",
        "integrations.report",
        f"{H}:install",
        params=(
            Param(
                "host",
                f"{HOSTS_TEXT}; none: every host whose home folder exists (~/.claude, ~/.codex,"
                " ~/.cursor, ~/.config/opencode)",
                positional=True,
            ),
            _PROJECT,
            Param(
                "hooks",
                "all: session-start recall, per-prompt recall where the host can inject it, and"
                " transcript indexing before compaction and at session end where memhtml reads"
                " the host's transcripts; session: session-start recall only; none: no hook",
                choices=("all", "session", "none"),
                default="all",
            ),
            Param(
                "bare_command",
                "write `memhtml` / `memhtml-mcp` instead of this installation's absolute paths"
                " (GUI hosts do not inherit a shell's PATH)",
                type="bool",
                default=False,
            ),
            _FORCE,
            _DRY_RUN,
        ),
        needs_repo=False,
        errors=(
            "ERR_UNKNOWN_HOST",
            "ERR_INVALID_FLAG",
            "ERR_INTEGRATION_MODIFIED",
            "ERR_HOST_CONFIG_INVALID",
            "ERR_STORAGE",
        ),
        examples=(
            "memhtml integrations install",
            "memhtml integrations install claude --repo ~/memhtml",
            "memhtml integrations install codex --hooks session",
            "memhtml integrations install cursor --project .",
            "memhtml integrations install opencode --dry-run",
        ),
        details=(
            "--repo (else MEMHTML_ROOT, else ~/memhtml) is the store recorded into the host's"
            " config; it need not exist yet and is never opened. Every addition is a fragment"
            " merged into the user's own file (a JSON key, entries in a hooks array, a TOML"
            " table, a fenced Markdown block) or a file of ours (a skill, OpenCode's plugin,"
            " Cursor's rule); nothing the user wrote is replaced. The receipt"
            " ($XDG_CONFIG_HOME/memhtml/integrations/) records each edit so uninstall reverses"
            " exactly that. A config that does not parse is refused untouched"
            " (ERR_HOST_CONFIG_INVALID); an edit of ours by someone else, or something not ours"
            " where ours goes, is refused (ERR_INTEGRATION_MODIFIED) unless --force. Running it"
            " again with the same options writes nothing. With several hosts, every refusal is"
            " found before any host is written."
        ),
    ),
    Command(
        "integrations uninstall",
        "Remove exactly what install wrote for one host, byte for byte while the files allow.",
        "integrations.report",
        f"{H}:uninstall",
        params=(
            Param("host", HOSTS_TEXT, positional=True, required=True),
            _PROJECT,
            _FORCE,
            _DRY_RUN,
        ),
        needs_repo=False,
        errors=("ERR_UNKNOWN_HOST", "ERR_INVALID_FLAG", "ERR_INTEGRATION_MODIFIED", "ERR_STORAGE"),
        examples=(
            "memhtml integrations uninstall claude",
            "memhtml integrations uninstall cursor --project .",
        ),
        details=(
            "Each file's recorded edits are reversed while the text install wrote is still"
            " there (the file comes back byte for byte, whatever else changed in it); when a"
            " host rewrote the file, each entry is removed by its key. An entry of ours that"
            " someone edited is refused (ERR_INTEGRATION_MODIFIED) unless --force, which keeps"
            " a backup. A file another host's install shares (AGENTS.md, ~/.agents/skills) stays"
            " with that install. Without a receipt: state not-installed, nothing changed."
        ),
    ),
    Command(
        "integrations list",
        "Each host's state at user scope (and at the named and recorded projects).",
        "integrations.list",
        f"{H}:list_",
        params=(_PROJECT,),
        needs_repo=False,
        errors=("ERR_INVALID_FLAG",),
        examples=("memhtml integrations list", "memhtml integrations list --project ."),
        details=(
            "state: not-installed (no receipt), installed (every recorded entry is on disk as"
            " written), modified (something recorded was edited or removed, or the receipt"
            " cannot be read; detail says what). detected: the host's home folder exists."
        ),
    ),
    Command(
        "integrations doctor",
        "Check a host's wiring end to end: binaries, store, entries, a probe of each hook and"
        " an MCP handshake.",
        "integrations.doctor",
        f"{H}:doctor",
        params=(
            Param(
                "host", f"{HOSTS_TEXT}; none: every host installed at the scope", positional=True
            ),
            _PROJECT,
        ),
        needs_repo=False,
        errors=("ERR_UNKNOWN_HOST", "ERR_INVALID_FLAG"),
        examples=("memhtml integrations doctor", "memhtml integrations doctor claude"),
        details=(
            "Runs each installed recall hook exactly as the host would (its command line, a"
            " payload in the host's field names) and checks the exit code, the time and the"
            " protocol of its answer; starts the MCP server the entry names and completes"
            " `initialize`. A missing store is reported, never created."
        ),
    ),
    Command(
        "integrations shell",
        "Shell profile lines: MEMHTML_ROOT and this memhtml on PATH; --write fences them into"
        " your rc file.",
        "integrations.shell",
        f"{H}:shell",
        params=(
            Param(
                "write",
                "put the lines into the rc file between # MEMHTML:START / # MEMHTML:END"
                " (replacing an earlier block)",
                type="bool",
                default=False,
            ),
            Param("rc", "the rc file (default ~/.zshrc under zsh, else ~/.bashrc)", metavar="FILE"),
        ),
        needs_repo=False,
        errors=("ERR_INTEGRATION_MODIFIED", "ERR_STORAGE"),
        examples=("memhtml integrations shell", "memhtml integrations shell --write"),
    ),
    Command(
        "hook",
        "What installed hooks run: a host's payload in, recall or indexing, its protocol out.",
        "hook.output",
        f"{H}:hook",
        params=(
            Param(
                "event",
                "session-start, user-prompt-submit, pre-compact or session-end",
                positional=True,
                required=True,
            ),
            Param("host", f"whose payload and protocol: {HOSTS_TEXT}", required=True),
            Param(
                "trace_root",
                "transcripts to index on pre-compact and session-end (default:"
                " $MEMHTML_TRACE_ROOT, else ~/.claude/projects)",
                metavar="DIR",
            ),
            Param(
                "limit",
                "memories on a per-prompt recall",
                type="int",
                default=5,
                minimum=1,
                maximum=50,
            ),
            Param(
                "budget",
                "characters of the session-start pack",
                type="int",
                default=3000,
                minimum=0,
                maximum=100000,
            ),
            Param(
                "time_limit_ms",
                "hard bound from process start (default: 2000 per prompt, 3000 at session"
                " start, 20000 for indexing; the model is awaited 400 / 1000 ms at most)",
                type="int",
                minimum=50,
                maximum=120000,
            ),
        ),
        needs_repo=False,
        errors=("ERR_UNKNOWN_HOOK_EVENT", "ERR_UNKNOWN_HOST"),
        examples=(
            'echo \'{"prompt": "how do we deploy?"}\' | memhtml hook user-prompt-submit --host'
            " claude",
            "memhtml hook session-start --host codex --repo ~/memhtml < payload.json",
            "memhtml hook pre-compact --host claude --trace-root ~/.claude/projects",
        ),
        details=(
            "Stdout is never an envelope: it is the host's protocol (Claude Code and Codex:"
            " hookSpecificOutput.additionalContext JSON; Cursor: additional_context JSON;"
            " OpenCode: text), empty when there is nothing to say or the host reads no answer"
            " to the event. Any failure (garbage on stdin, no store, a locked index, a missing"
            " model) prints nothing and exits 0; one line on stderr says why. Per-prompt recall"
            " answers by keywords at once and by the hybrid search when the embedding model"
            " loads in time. An unknown event or host is a typed error when a person runs it at"
            " a terminal, and a stderr line with exit 0 when a host runs it."
        ),
    ),
)
