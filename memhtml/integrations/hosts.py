"""What each coding agent is, as data: where its files are, its events, its payloads, its protocol.

Every vendor fact lives here and nowhere else: the installer reads a `Host`
and knows only "a JSON key", "a TOML table", "a Markdown block", "a whole
file"; the hook engine reads `payload` and `output` and knows only "a field"
and "a protocol". A fifth host is a table entry. The sources each entry was
checked against are in `Host.sources` (and docs/integrations.md).

NamedTuples, not dataclasses: the hook imports this module on every prompt,
and a frozen dataclass costs a millisecond or two to create.
"""

from __future__ import annotations

from typing import Final, NamedTuple

HOSTS: Final = ("claude", "codex", "cursor", "opencode")
HOOK_EVENTS: Final = ("session-start", "user-prompt-submit", "pre-compact", "session-end")
HOOK_MODES: Final = ("all", "session", "none")
SCOPES: Final = ("user", "project")
SERVER_KEY: Final = "memhtml"  # the MCP server's name in every host's server map
SKILL_NAME: Final = "memhtml"  # the skill's directory name, equal to its frontmatter `name`

# Protocols a hook answers in (Host.output): the host's JSON with `additionalContext`
# (Claude Code and Codex share the shape), Cursor's `additional_context`, or plain text.
HOOK_SPECIFIC_JSON: Final = "hook-specific-json"
CURSOR_JSON: Final = "cursor-json"
TEXT: Final = "text"


class Place(NamedTuple):
    """A path relative to the scope's root ($HOME, or the repository); None: none at that scope."""

    user: str | None
    project: str | None

    def at(self, scope: str) -> str | None:
        """The relative path at `scope`."""
        return self.user if scope == "user" else self.project


class McpSpec(NamedTuple):
    """Where the host keeps MCP servers and the shape of one entry."""

    place: Place
    format: str  # "json" (JSON or JSONC) | "toml"
    container: tuple[str, ...]  # the server map's key path; SERVER_KEY goes under it
    shape: str  # "claude" | "cursor" | "opencode" | "codex"
    alternate: Place | None = None  # a second spelling used when only it exists (opencode.jsonc)


class HookEvent(NamedTuple):
    """One of our events as the host names it, with the timeout written into its config."""

    event: str  # ours (HOOK_EVENTS)
    name: str  # the host's
    timeout: int  # seconds: the host's backstop; the engine's own bound is far shorter
    modes: tuple[str, ...]  # the --hooks modes that install it
    transcripts: bool = False  # only where the host's transcripts can be indexed


class HooksSpec(NamedTuple):
    """Where the host's hooks live and how one entry looks."""

    place: Place
    format: str  # "json" (an event map of arrays) | "plugin" (a generated JS module)
    entry: str  # "group" ({hooks: [{type, command, timeout}]}) | "flat" ({command, timeout})
    events: tuple[HookEvent, ...]
    version: int | None = None  # a top-level {"version": N} the file must carry (Cursor)


class Payload(NamedTuple):
    """Where the host's hook payload keeps each field; the first present one wins.

    A dotted part that is a number indexes a list (`workspace_roots.0`).
    """

    prompt: tuple[str, ...]
    cwd: tuple[str, ...]
    session: tuple[str, ...]
    transcript: tuple[str, ...]


class Host(NamedTuple):
    """One coding agent."""

    id: str
    display: str
    detect: str  # a home-relative folder the host creates on first run
    mcp: McpSpec
    hooks: HooksSpec
    instruction: Place  # a file the host always reads (a fenced block), None where it has none
    instruction_format: str  # "markdown" | "cursor-rule" (a whole .mdc file of ours)
    agents_import: bool  # project scope: use an existing AGENTS.md, import it from CLAUDE.md
    skill: Place  # the folder that holds skills/<SKILL_NAME>/SKILL.md
    payload: Payload
    output: dict[str, str]  # event -> protocol, for the events whose answer the host reads
    transcripts: str | None  # the transcript format memhtml can index for this host
    next_steps: tuple[str, ...]
    sources: tuple[tuple[str, str], ...]  # (what, where it was checked)


_GROUP_PAYLOAD = Payload(
    prompt=("prompt",), cwd=("cwd",), session=("session_id",), transcript=("transcript_path",)
)

CLAUDE: Final = Host(
    id="claude",
    display="Claude Code",
    detect=".claude",
    mcp=McpSpec(Place(".claude.json", ".mcp.json"), "json", ("mcpServers",), "claude"),
    hooks=HooksSpec(
        Place(".claude/settings.json", ".claude/settings.json"),
        "json",
        "group",
        (
            HookEvent("session-start", "SessionStart", 10, ("all", "session")),
            HookEvent("user-prompt-submit", "UserPromptSubmit", 10, ("all",)),
            HookEvent("pre-compact", "PreCompact", 30, ("all",), transcripts=True),
            HookEvent("session-end", "SessionEnd", 30, ("all",), transcripts=True),
        ),
    ),
    instruction=Place(".claude/CLAUDE.md", "CLAUDE.md"),
    instruction_format="markdown",
    agents_import=True,
    skill=Place(".claude/skills", ".claude/skills"),
    payload=_GROUP_PAYLOAD,
    output={"session-start": HOOK_SPECIFIC_JSON, "user-prompt-submit": HOOK_SPECIFIC_JSON},
    transcripts="claude",
    next_steps=(
        "Restart Claude Code (or run /hooks) so it reads the new hooks; `claude mcp get memhtml`"
        " shows the server.",
    ),
    sources=(
        ("hooks: events, payload fields, JSON output", "https://code.claude.com/docs/en/hooks"),
        ("settings files and scopes", "https://code.claude.com/docs/en/settings"),
        ("MCP servers in ~/.claude.json and .mcp.json", "https://code.claude.com/docs/en/mcp"),
        ("skills", "https://code.claude.com/docs/en/skills"),
        ("CLAUDE.md and @imports", "https://code.claude.com/docs/en/memory"),
    ),
)

CODEX: Final = Host(
    id="codex",
    display="Codex CLI",
    detect=".codex",
    mcp=McpSpec(
        Place(".codex/config.toml", ".codex/config.toml"), "toml", ("mcp_servers",), "codex"
    ),
    hooks=HooksSpec(
        Place(".codex/hooks.json", ".codex/hooks.json"),
        "json",
        "group",
        (
            HookEvent("session-start", "SessionStart", 10, ("all", "session")),
            HookEvent("user-prompt-submit", "UserPromptSubmit", 10, ("all",)),
        ),
    ),
    instruction=Place(".codex/AGENTS.md", "AGENTS.md"),
    instruction_format="markdown",
    agents_import=False,
    skill=Place(".agents/skills", ".agents/skills"),
    payload=_GROUP_PAYLOAD,
    output={"session-start": HOOK_SPECIFIC_JSON, "user-prompt-submit": HOOK_SPECIFIC_JSON},
    transcripts=None,
    next_steps=(
        "Restart Codex, then open /hooks and trust the memhtml hooks: Codex runs a hook only"
        " once you trust it, and asks again after any edit.",
    ),
    sources=(
        ("hooks.json, events, trust", "https://developers.openai.com/codex/hooks"),
        (
            "hook payload and output schemas",
            "https://github.com/openai/codex/tree/main/codex-rs/hooks/schema/generated",
        ),
        ("config.toml [mcp_servers]", "https://developers.openai.com/codex/mcp"),
        ("AGENTS.md", "https://developers.openai.com/codex/guides/agents-md"),
        ("skills in ~/.agents/skills", "https://developers.openai.com/codex/skills"),
    ),
)

CURSOR: Final = Host(
    id="cursor",
    display="Cursor",
    detect=".cursor",
    mcp=McpSpec(Place(".cursor/mcp.json", ".cursor/mcp.json"), "json", ("mcpServers",), "cursor"),
    hooks=HooksSpec(
        Place(".cursor/hooks.json", ".cursor/hooks.json"),
        "json",
        "flat",
        (HookEvent("session-start", "sessionStart", 10, ("all", "session")),),
        version=1,
    ),
    instruction=Place(None, ".cursor/rules/memhtml.mdc"),
    instruction_format="cursor-rule",
    agents_import=False,
    skill=Place(".agents/skills", ".agents/skills"),
    payload=Payload(
        prompt=("prompt",),
        cwd=("cwd", "workspace_roots.0"),
        session=("session_id", "conversation_id"),
        transcript=("transcript_path",),
    ),
    output={"session-start": CURSOR_JSON},
    transcripts=None,
    next_steps=("Restart Cursor so it reads mcp.json; hooks.json is reloaded on save.",),
    sources=(
        ("hooks.json, sessionStart and additional_context", "https://cursor.com/docs/agent/hooks"),
        ("mcp.json", "https://cursor.com/docs/context/mcp"),
        ("project rules (.mdc)", "https://cursor.com/docs/context/rules"),
        ("skills in ~/.agents/skills", "https://cursor.com/docs/skills.md"),
    ),
)

OPENCODE: Final = Host(
    id="opencode",
    display="OpenCode",
    detect=".config/opencode",
    mcp=McpSpec(
        Place(".config/opencode/opencode.json", "opencode.json"),
        "json",
        ("mcp",),
        "opencode",
        alternate=Place(".config/opencode/opencode.jsonc", "opencode.jsonc"),
    ),
    hooks=HooksSpec(
        Place(".config/opencode/plugins/memhtml.js", ".opencode/plugins/memhtml.js"),
        "plugin",
        "plugin",
        (
            HookEvent("session-start", "experimental.chat.system.transform", 2, ("all", "session")),
            HookEvent("user-prompt-submit", "chat.message", 2, ("all",)),
        ),
    ),
    instruction=Place(".config/opencode/AGENTS.md", "AGENTS.md"),
    instruction_format="markdown",
    agents_import=False,
    skill=Place(".agents/skills", ".agents/skills"),
    payload=Payload(
        prompt=("prompt",), cwd=("cwd",), session=("session_id",), transcript=("transcript_path",)
    ),
    output={"session-start": TEXT, "user-prompt-submit": TEXT},
    transcripts=None,
    next_steps=("Restart OpenCode: plugins and opencode.json load at start-up.",),
    sources=(
        (
            "config: mcp (type local, command array, environment)",
            "https://opencode.ai/docs/mcp-servers/",
        ),
        ("plugins and their hooks", "https://opencode.ai/docs/plugins/"),
        ("AGENTS.md rules", "https://opencode.ai/docs/rules/"),
        ("skills", "https://opencode.ai/docs/skills/"),
    ),
)

BY_ID: Final[dict[str, Host]] = {h.id: h for h in (CLAUDE, CODEX, CURSOR, OPENCODE)}


def host(host_id: str) -> Host:
    """The host called `host_id` (the caller checked it is one of HOSTS)."""
    return BY_ID[host_id]


def event_of(host: Host, event: str) -> HookEvent | None:
    """The host's wiring of one of our events, or None when it has none."""
    for e in host.hooks.events:
        if e.event == event:
            return e
    return None
