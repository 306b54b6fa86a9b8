"""The five kinds of fragment an install merges into a host's files, and what each kind can do.

For each kind: read the claim (the hash of what we own, as it is on disk
now), say what foreign thing sits where ours would go, apply ours (returning
the splices made), and remove ours by structure when the host rewrote the
file so the splices no longer reverse. Claims hash values, not bytes, for the
JSON and TOML kinds: a host that reformats its config (Claude Code rewrites
`~/.claude.json` all the time) has not edited our entry.

    json-member     one key (an MCP server entry)      ~/.claude.json, mcp.json, opencode.json
    json-items      entries in an event map's arrays   the Claude/Codex/Cursor hooks files
    toml-table      one table                          Codex's config.toml
    markdown-block  a fenced block                     CLAUDE.md, AGENTS.md
    file            a whole file                       SKILL.md, OpenCode's plugin, Cursor's rule
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from memhtml.integrations import fence, jsonc, tomltable
from memhtml.integrations.files import sha256
from memhtml.integrations.hosts import HOOK_EVENTS, HOSTS
from memhtml.integrations.receipt import Fragment, SpliceRecord
from memhtml.integrations.splice import Splice


class Want(NamedTuple):
    """One fragment an install wants in one file."""

    role: str
    kind: str
    path: Path
    locator: tuple[str, ...]
    value: Any  # the JSON value, {event: [entries]}, the TOML table, the block body, the file
    version: int | None = None  # json-items: a top-level {"version": N} the file must carry


class Applied(NamedTuple):
    """The text after applying a want, and the receipt fragment that records it."""

    text: str
    fragment: Fragment


# The command line only `memhtml integrations` writes: `hook <event> --host <host>`.
LOOKS_OURS = re.compile(
    rf"(^|\s)hook\s+({'|'.join(HOOK_EVENTS)})\s+--host\s+({'|'.join(HOSTS)})(\s|$)"
)


def is_json(kind: str) -> bool:
    """Whether the kind lives in a JSON/JSONC file."""
    return kind in ("json-member", "json-items")


def _commands(entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return []
    found = [entry["command"]] if isinstance(entry.get("command"), str) else []
    for handler in entry.get("hooks") or []:
        if isinstance(handler, dict) and isinstance(handler.get("command"), str):
            found.append(handler["command"])
    return found


def looks_like_ours(entry: Any) -> bool:
    """A hook entry whose every command runs `memhtml hook` (ours, or left by a lost receipt)."""
    commands = _commands(entry)
    return bool(commands) and all(LOOKS_OURS.search(c) for c in commands)


def _found_items(text: str | None, locator: tuple[str, ...], value: dict[str, list[Any]]) -> dict:
    found: dict[str, list[Any]] = {}
    for event, entries in value.items():
        current = jsonc.value_at(text, [*locator, event])
        present = {jsonc.canonical(e) for e in current} if isinstance(current, list) else set()
        ours = [e for e in entries if jsonc.canonical(e) in present]
        if ours:
            found[event] = ours
    return found


def claim(
    kind: str, text: str | None, locator: tuple[str, ...] | list[str], value: Any
) -> str | None:
    """The hash of what of ours is at the location now; None when nothing is."""
    if text is None:
        return None
    loc = tuple(locator)
    if kind == "json-member":
        current = jsonc.value_at(text, loc)
        return None if current is None else sha256(jsonc.canonical(current))
    if kind == "json-items":
        found = _found_items(text, loc, value)
        return sha256(jsonc.canonical(found)) if found else None
    if kind == "toml-table":
        current = tomltable.value_at(text, loc)
        return None if current is None else sha256(jsonc.canonical(current))
    if kind == "markdown-block":
        try:
            body = fence.body(text, fence.MARKDOWN)
        except fence.FenceError:
            return None
        return None if body is None else sha256(body)
    return sha256(text)


def expected_claim(want: Want) -> str:
    """The claim `want` will have once written."""
    if want.kind in ("json-member", "toml-table"):
        return sha256(jsonc.canonical(want.value))
    if want.kind == "json-items":
        return sha256(jsonc.canonical({k: v for k, v in want.value.items() if v}))
    if want.kind == "markdown-block":
        return sha256(want.value.rstrip("\n"))
    return sha256(want.value)


def foreign(want: Want, text: str | None) -> str | None:
    """What sits where ours would go and is not identical to ours (None: the way is free)."""
    if text is None:
        return None
    if want.kind in ("json-member", "toml-table"):
        read = jsonc.value_at if want.kind == "json-member" else tomltable.value_at
        current = read(text, want.locator)
        if current is not None and jsonc.canonical(current) != jsonc.canonical(want.value):
            return f"{'.'.join(want.locator)} is already there"
        return None
    if want.kind == "json-items":
        mine = {jsonc.canonical(e) for entries in want.value.values() for e in entries}
        events = jsonc.value_at(text, want.locator)
        for event, entries in (events or {}).items() if isinstance(events, dict) else ():
            for entry in entries if isinstance(entries, list) else ():
                if looks_like_ours(entry) and jsonc.canonical(entry) not in mine:
                    return f"a `memhtml hook` entry under {event} is already there"
        return None
    if want.kind == "markdown-block":
        try:
            body = fence.body(text, fence.MARKDOWN)
        except fence.FenceError as exc:
            return f"its memhtml markers are broken ({exc})"
        if body is not None and body != want.value.rstrip("\n"):
            return "a memhtml block is already there"
        return None
    return None if text == want.value else "the file is already there"


def _record(
    want: Want, splices: list[Splice], prune: dict[str, list[str]], shared: bool
) -> Fragment:
    return Fragment(
        role=want.role,  # type: ignore[arg-type]
        kind=want.kind,  # type: ignore[arg-type]
        locator=list(want.locator),
        value=want.value,
        claim=expected_claim(want),
        prune=prune,
        splices=[SpliceRecord(old=s.old, new=s.new) for s in splices],
        shared=shared,
    )


def apply(want: Want, text: str | None, *, force: bool) -> Applied:
    """Write `want` into `text` (a foreign occupant is replaced only when `force`)."""
    if want.kind == "json-items":
        return _apply_items(want, text, force=force)
    base = text or ""
    if want.kind in ("json-member", "toml-table"):
        read = jsonc.value_at if want.kind == "json-member" else tomltable.value_at
        current = read(text, want.locator)
        if current is not None and jsonc.canonical(current) == jsonc.canonical(want.value):
            return Applied(base, _record(want, [], {}, shared=True))
        if want.kind == "json-member":
            new, splice, created = jsonc.set_value(text, want.locator, want.value)
            prune = {"": [str(k) for k in created]} if created else {}
            return Applied(new, _record(want, [splice], prune, shared=False))
        if current is not None and force:
            stripped = tomltable.remove(base, want.locator, prune=False)
            new, splice, _ = tomltable.add(stripped, want.locator, want.value)
            return Applied(new, _record(want, [Splice(base, new)], {}, shared=False))
        new, splice, made = tomltable.add(text, want.locator, want.value)
        prune = {"": list(want.locator[:-1])} if made else {}
        return Applied(new, _record(want, [splice], prune, shared=False))
    if want.kind == "markdown-block":
        body = fence.body(text, fence.MARKDOWN)
        if body is not None and body == want.value.rstrip("\n"):
            return Applied(base, _record(want, [], {}, shared=True))
        if body is not None:
            new, splice = fence.replace(base, fence.MARKDOWN, want.value)
        else:
            new, splice = fence.append(text, fence.MARKDOWN, want.value)
        return Applied(new, _record(want, [splice], {}, shared=False))
    if text == want.value:
        return Applied(base, _record(want, [], {}, shared=True))
    return Applied(want.value, _record(want, [Splice(base, want.value)], {}, shared=False))


def _apply_items(want: Want, text: str | None, *, force: bool) -> Applied:
    splices: list[Splice] = []
    prune: dict[str, list[str]] = {}
    current = text
    if force and current is not None:
        mine = {jsonc.canonical(e) for entries in want.value.values() for e in entries}
        events = jsonc.value_at(current, want.locator)
        for event in list(events) if isinstance(events, dict) else []:
            before = current
            current = jsonc.remove_items(
                current,
                [*want.locator, event],
                lambda e: looks_like_ours(e) and jsonc.canonical(e) not in mine,
            )
            if current != before:
                splices.append(Splice(before, current))
    if want.version is not None and jsonc.value_at(current, ["version"]) is None:
        current, splice, _ = jsonc.set_value(current, ["version"], want.version)
        splices.append(splice)
        prune["version"] = ["version"]
    already = _found_items(current, want.locator, want.value)
    written = False
    for event, entries in want.value.items():
        missing = [e for e in entries if e not in already.get(event, [])]
        if not missing:
            continue
        current, splice, created = jsonc.append_items(current, [*want.locator, event], missing)
        splices.append(splice)
        written = True
        if created:
            prune[event] = [str(k) for k in created]
    shared = not written and not splices
    return Applied(current or "", _record(want, splices, prune, shared=shared))


def strip(fragment: Fragment, text: str) -> str:
    """`text` without this fragment, by structure (when its splices no longer reverse)."""
    loc = list(fragment.locator)
    if fragment.kind == "json-member":
        return jsonc.remove_member(text, loc, fragment.prune.get(""))
    if fragment.kind == "json-items":
        for event, entries in (fragment.value or {}).items():
            mine = {jsonc.canonical(e) for e in entries}

            def ours(e: Any, m: set[str] = mine) -> bool:
                return jsonc.canonical(e) in m

            text = jsonc.remove_items(text, [*loc, event], ours, fragment.prune.get(event))
        if "version" in fragment.prune and set(jsonc.value_at(text, []) or {}) == {"version"}:
            text = jsonc.remove_member(text, ["version"])
        return text
    if fragment.kind == "toml-table":
        return tomltable.remove(text, loc, prune="" in fragment.prune)
    if fragment.kind == "markdown-block":
        return fence.remove(text, fence.MARKDOWN)
    first = fragment.splices[0].old if fragment.splices else ""
    return first


def is_empty(path: Path, text: str | None) -> bool:
    """Whether a file memhtml created holds nothing any more (blank, or an empty JSON object)."""
    if text is None or not text.strip():
        return True
    if path.suffix in (".json", ".jsonc"):
        try:
            node = jsonc.parse(text)
        except jsonc.JsoncError:
            return False
        return node.kind == "object" and not node.members
    if path.suffix == ".toml":
        try:
            return not tomltable.load(text)
        except tomltable.TomlError:
            return False
    return False
