"""The text an install writes: MCP entries, hook entries, the instruction block, the skill,
Cursor's rule, OpenCode's plugin, and the shell snippet. Pure functions of their inputs.

The instruction block and the skill say the same rules (`DISCIPLINE`): the
block is always in the agent's context, so it stays short; the skill loads
when its description matches the task, so it carries the command table too.
Both are the same for every host of one install, so hosts that share a file
(`AGENTS.md`, `~/.agents/skills`) share identical bytes.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any, NamedTuple

from memhtml.integrations.hosts import SERVER_KEY, SKILL_NAME, Host


class Commands(NamedTuple):
    """How a host runs memhtml: argv prefixes of the CLI and of the MCP server."""

    cli: tuple[str, ...]
    mcp: tuple[str, ...]
    bare: bool


def shell_join(argv: Sequence[str]) -> str:
    """One POSIX shell string (hosts run a hook's `command` through `sh -c`)."""
    return shlex.join(argv)


def hook_argv(
    cmds: Commands, event: str, host: str, memhtml_root: str, trace_root: str | None
) -> list[str]:
    """`memhtml hook EVENT --host HOST --repo ROOT [--trace-root DIR]`.

    `--repo` is always written: a host spawns hooks from its own environment,
    where MEMHTML_ROOT is rarely set.
    """
    argv = [*cmds.cli, "hook", event, "--host", host, "--repo", memhtml_root]
    if trace_root is not None:
        argv += ["--trace-root", trace_root]
    return argv


def mcp_entry(host: Host, cmds: Commands, memhtml_root: str) -> dict[str, Any]:
    """The host's MCP server entry; the store travels in its environment (a GUI host
    inherits no shell environment)."""
    env = {"MEMHTML_ROOT": memhtml_root}
    command, args = cmds.mcp[0], list(cmds.mcp[1:])
    if host.mcp.shape == "opencode":
        return {"type": "local", "command": list(cmds.mcp), "environment": env, "enabled": True}
    entry: dict[str, Any] = {"type": "stdio"} if host.mcp.shape == "claude" else {}
    entry["command"] = command
    if args:
        entry["args"] = args
    entry["env"] = env
    return entry


def hook_entries(
    host: Host, cmds: Commands, mode: str, memhtml_root: str, trace_root: str | None
) -> dict[str, list[dict[str, Any]]]:
    """The host's hook entries by the host's event name, for `--hooks mode`."""
    out: dict[str, list[dict[str, Any]]] = {}
    for e in host.hooks.events:
        if mode not in e.modes or (e.transcripts and trace_root is None):
            continue
        root = trace_root if e.transcripts else None
        command = shell_join(hook_argv(cmds, e.event, host.id, memhtml_root, root))
        if host.hooks.entry == "group":
            handler = {"type": "command", "command": command, "timeout": e.timeout}
            out[e.name] = [{"hooks": [handler]}]
        else:
            out[e.name] = [{"command": command, "timeout": e.timeout}]
    return out


MCP_TOOLS = ("memory_search", "memory_recall", "memory_read", "memory_reinforce", "memory_write")

DISCIPLINE = (
    "Look before you answer. When a task could touch an earlier decision, an incident, a"
    " person, a preference or a system someone looked up before, search the store first:"
    ' `memory_search` (MCP) or `memhtml search "..." --dense` (CLI), asked in plain prose.'
    " For a context pack use `memory_recall` / `memhtml recall` with a character budget"
    " (`budget_chars`, `--budget`; 6000 covers most questions).",
    "A hit is a ranking, not a source. Its snippet is the passage that matched your words,"
    " which may not be the sentence you need: open each memory you will rely on with"
    " `memory_read` / `memhtml read PATH` before you quote it, cite it or act on it, and"
    " cite it by its path.",
    "A memory says what was true when it was written. Check that a file, flag or endpoint"
    " it names still exists before you recommend it. A path that is gone was archived, not"
    " deleted: `memory_resolve` / `memhtml resolve PATH` follows it to what replaced it, and"
    " `include_archived` / `--include-archived` searches the archive.",
    "Say what helped. When a memory helped, call `memory_reinforce` / `memhtml reinforce PATH"
    " --signal positive`; when it misled you, `negative`. Reads and these signals are what"
    " teach the ranker; a hit you only saw teaches it nothing.",
    "Write down what will matter next time, one fact per memory: a decision and its reason,"
    " a correction, an incident and its fix, a stated preference, a fact you had to look up."
    " Not transcripts or session summaries, nothing the code in front of you already says,"
    " and never a secret (a key, a token, a password). To replace a fact, `memory_correct` /"
    " `memhtml correct PATH` rather than a second memory.",
)


def instruction_block(cmds: Commands, memhtml_root: str) -> str:
    """The block in a host's instruction file (inside the markers)."""
    cli = shell_join(cmds.cli)
    tools = ", ".join(f"`{t}`" for t in MCP_TOOLS)
    lines = [
        "## memhtml memory",
        "",
        f"You have a long-term memory store at `{memhtml_root}`: the MCP server `{SERVER_KEY}`"
        f" ({tools}, ...) and the CLI `{cli}` (`{cli} manifest` lists every command).",
        "",
    ]
    for paragraph in DISCIPLINE:
        lines += [paragraph, ""]
    lines.append("Written by `memhtml integrations install`; edit outside the markers.")
    return "\n".join(lines) + "\n"


def cursor_rule(block: str) -> str:
    """Cursor's rule file: `.mdc` with `alwaysApply`, so every request carries it."""
    return (
        "---\n"
        'description: "memhtml long-term memory: search before answering, read before quoting"\n'
        "alwaysApply: true\n"
        "---\n\n" + block
    )


_SKILL_ROWS = (
    ("Search", 'search "a question in prose" --dense', "memory_search"),
    ("A context pack", 'recall "the question" --budget 6000', "memory_recall"),
    ("Read one memory", "read PATH", "memory_read"),
    ("Say it helped", "reinforce PATH --signal positive", "memory_reinforce"),
    ("Write a fact", 'write --type semantic --title "..." --claim "..."', "memory_write"),
    ("Replace a fact", 'correct PATH --claim "..."', "memory_correct"),
    ("Follow a moved path", "resolve PATH", "memory_resolve"),
)


def skill(cmds: Commands, memhtml_root: str) -> str:
    """`SKILL.md`: the rules, the commands, the contract."""
    cli = shell_join(cmds.cli)
    lines = [
        "---",
        f"name: {SKILL_NAME}",
        "description: Search, read and write the memhtml long-term memory store. Use before"
        " answering about earlier decisions, incidents, people, preferences or systems, and"
        " after learning a fact worth keeping.",
        "---",
        "",
        "# memhtml memory",
        "",
        f"The store at `{memhtml_root}` is a git repository of one-fact HTML files, reached"
        f" through the `{SERVER_KEY}` MCP server or the CLI `{cli}`.",
        "",
        "## How to use it",
        "",
    ]
    for paragraph in DISCIPLINE:
        lines += [paragraph, ""]
    lines += ["## Commands", "", "| To | CLI | MCP tool |", "| --- | --- | --- |"]
    lines += [f"| {a} | `{cli} {b}` | `{c}` |" for a, b, c in _SKILL_ROWS]
    lines += [
        "",
        "## Contract",
        "",
        "Each command prints one JSON envelope on stdout (logs go to stderr): branch on"
        " `code`, never on the message; exit 0 is success, 2 a usage error, 1 a failure."
        f" `{cli} manifest` describes every command, flag, response type and error code.",
        "",
    ]
    return "\n".join(lines)


_PLUGIN_BODY = """
// Every failure is an empty answer, and an empty answer changes nothing.
const run = (args, payload) =>
  new Promise((resolve) => {
    let child
    try {
      child = execFile(COMMAND, args, { timeout: TIMEOUT_MS, maxBuffer: 1 << 20 }, (error, out) =>
        resolve(error ? "" : String(out ?? "").trim()),
      )
    } catch {
      resolve("")
      return
    }
    child.on("error", () => resolve(""))
    if (child.stdin) {
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify(payload))
    }
  })

// What the person typed: the message's own text parts, not parts a plugin added.
const textOf = (parts) =>
  (Array.isArray(parts) ? parts : [])
    .filter((p) => p && p.type === "text" && typeof p.text === "string" && !p.synthetic)
    .map((p) => p.text)
    .join("\\n")
    .trim()

// OpenCode part ids start with "prt_" and sort by time (12 hex digits of ms * 4096 + n).
let counter = 0
const partId = () =>
  "prt_" +
  (BigInt(Date.now()) * 4096n + BigInt(counter++ % 4096)).toString(16).padStart(12, "0") +
  randomBytes(7).toString("hex")

export const MemhtmlPlugin = async ({ directory }) => {
  // One session-start recall per session, shared by every model call of that session.
  const packs = new Map()
  const pack = (sessionID) => {
    if (!packs.has(sessionID)) {
      packs.set(sessionID, run(SESSION_ARGS, { session_id: sessionID, cwd: directory }))
    }
    return packs.get(sessionID)
  }
  return {
    "experimental.chat.system.transform": async (input, output) => {
      const id = input && input.sessionID
      if (!id || !output || !Array.isArray(output.system)) return
      const text = await pack(id)
      if (text) output.system.push(text)
    },
    "experimental.session.compacting": async (input, output) => {
      const id = input && input.sessionID
      if (!id || !output || !Array.isArray(output.context)) return
      const text = await pack(id)
      if (text) output.context.push(text)
    },
"""

_PLUGIN_PROMPT = """    "chat.message": async (input, output) => {
      const message = output && output.message
      if (!message || !Array.isArray(output.parts)) return
      const prompt = textOf(output.parts)
      if (!prompt) return
      const text = await run(PROMPT_ARGS, { session_id: input.sessionID, prompt, cwd: directory })
      if (!text) return
      output.parts.push({
        id: partId(),
        sessionID: message.sessionID ?? input.sessionID,
        messageID: message.id,
        type: "text",
        text,
        synthetic: true,
      })
    },
"""


def opencode_plugin(cmds: Commands, mode: str, memhtml_root: str, timeout_ms: int) -> str:
    """OpenCode's plugin (its hooks are a JS module): it shells out to `memhtml hook` and
    imports nothing of memhtml's, so a moved memhtml cannot stop OpenCode from starting."""
    session = hook_argv(cmds, "session-start", "opencode", memhtml_root, None)
    head = [
        "// Written by `memhtml integrations install opencode`; `memhtml integrations uninstall"
        " opencode` removes it.",
        f"// It wires OpenCode sessions to the memhtml store at {json.dumps(memhtml_root)}:"
        " session-start recall",
        "// in the system prompt and the compaction context"
        + (", per-prompt recall on each message." if mode == "all" else "."),
        'import { execFile } from "node:child_process"',
        'import { randomBytes } from "node:crypto"',
        "",
        f"const TIMEOUT_MS = {int(timeout_ms)}",
        f"const COMMAND = {json.dumps(session[0])}",
        f"const SESSION_ARGS = {json.dumps(session[1:])}",
    ]
    if mode == "all":
        prompt = hook_argv(cmds, "user-prompt-submit", "opencode", memhtml_root, None)
        head.append(f"const PROMPT_ARGS = {json.dumps(prompt[1:])}")
    body = _PLUGIN_BODY + (_PLUGIN_PROMPT if mode == "all" else "") + "  }\n}\n"
    return "\n".join(head) + "\n" + body


def shell_snippet(memhtml_root: str, bin_dir: str) -> str:
    """Lines for a shell profile: the store, and this memhtml on PATH (once per shell)."""

    def quoted(value: str) -> str:
        for ch in ("\\", '"', "$", "`"):
            value = value.replace(ch, "\\" + ch)
        return value

    return (
        "# The memhtml store every memhtml command and MCP server opens by default.\n"
        f'export MEMHTML_ROOT="{quoted(memhtml_root)}"\n'
        "# This memhtml on PATH, however often the profile is sourced.\n"
        f'case ":$PATH:" in *":{quoted(bin_dir)}:"*) ;; *) export PATH="{quoted(bin_dir)}:$PATH";;'
        " esac\n"
    )
