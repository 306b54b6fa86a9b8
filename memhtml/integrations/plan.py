"""What one install wants, host by host: the fragments, their files, their contents.

Pure apart from two questions a renderer cannot answer: which spelling of
OpenCode's config exists (`opencode.json` or `opencode.jsonc`), and whether a
repository already keeps its instructions in `AGENTS.md` (then Claude Code's
block goes there and `CLAUDE.md` gets an `@AGENTS.md` import, so the prose
exists once and both readers see it).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from memhtml.integrations import render
from memhtml.integrations.files import read_text
from memhtml.integrations.fragments import Want
from memhtml.integrations.hosts import SERVER_KEY, SKILL_NAME, Host
from memhtml.integrations.render import Commands

# How long OpenCode's plugin lets one `memhtml hook` run before it answers nothing (the
# hook's own hard limit is 2 s per prompt, 3 s at session start).
PLUGIN_TIMEOUT_MS = 3500


class Setup(NamedTuple):
    """One host at one scope, and what its config should run."""

    host: Host
    scope: str
    root: Path  # $HOME, or the repository's top level
    memhtml_root: str
    commands: Commands
    hooks: str
    trace_root: str | None  # set only for a host whose transcripts memhtml can index


def mcp_path(host: Host, scope: str, root: Path) -> Path:
    """The host's MCP config at `scope` (OpenCode: the .jsonc spelling when only it exists)."""
    rel = host.mcp.place.at(scope)
    assert rel is not None
    path = root / rel
    alt = host.mcp.alternate.at(scope) if host.mcp.alternate else None
    if alt and not path.exists() and (root / alt).exists():
        return root / alt
    return path


def wants(s: Setup) -> list[Want]:
    """Every fragment of this install, in the order they are written."""
    h, cmds = s.host, s.commands
    out = [
        Want(
            "mcp-entry",
            "json-member" if h.mcp.format == "json" else "toml-table",
            mcp_path(h, s.scope, s.root),
            (*h.mcp.container, SERVER_KEY),
            render.mcp_entry(h, cmds, s.memhtml_root),
        )
    ]
    hooks_rel = h.hooks.place.at(s.scope)
    if s.hooks != "none" and hooks_rel is not None:
        if h.hooks.format == "json":
            entries = render.hook_entries(h, cmds, s.hooks, s.memhtml_root, s.trace_root)
            if entries:
                out.append(
                    Want(
                        "hooks",
                        "json-items",
                        s.root / hooks_rel,
                        ("hooks",),
                        entries,
                        h.hooks.version,
                    )
                )
        else:
            plugin = render.opencode_plugin(cmds, s.hooks, s.memhtml_root, PLUGIN_TIMEOUT_MS)
            out.append(Want("plugin", "file", s.root / hooks_rel, (), plugin))
    rel = h.instruction.at(s.scope)
    if rel is not None:
        body = render.instruction_block(cmds, s.memhtml_root)
        if h.instruction_format == "cursor-rule":
            out.append(Want("rules", "file", s.root / rel, (), render.cursor_rule(body)))
        elif s.scope == "project" and h.agents_import and (s.root / "AGENTS.md").exists():
            out.append(Want("instruction-block", "markdown-block", s.root / "AGENTS.md", (), body))
            pointer = read_text(s.root / rel) or ""
            if not any(line.strip() == "@AGENTS.md" for line in pointer.splitlines()):
                out.append(
                    Want("instruction-block", "markdown-block", s.root / rel, (), "@AGENTS.md\n")
                )
        else:
            out.append(Want("instruction-block", "markdown-block", s.root / rel, (), body))
    skill_rel = h.skill.at(s.scope)
    if skill_rel is not None:
        path = s.root / skill_rel / SKILL_NAME / "SKILL.md"
        out.append(Want("skill", "file", path, (), render.skill(cmds, s.memhtml_root)))
    return out
