"""One transcript line in, one typed value out: a turn, a file fact, or a problem.

Pure code (no I/O). The record format is Claude Code's session JSONL: one
JSON object per line with a `type`. Turn kinds (`user`, `assistant`,
`system`, `attachment`) carry `message` content blocks; `summary` carries a
`summary` string; `ai-title` refines the session's title; bookkeeping kinds
(file-history snapshots, queue operations, ...) are counted and not read; any
other kind is kept as a raw row, capped, so a new kind is never lost and never
a crash. Nothing here raises on any input: `fold_line` answers every byte
string with a value (tested with hypothesis).

Text is capped when stored (`TEXT_LIMIT`, `TOOL_TEXT_LIMIT`); `text_chars`
keeps the full length, so a reader that needs every character (verifying a
quote) re-reads the line from the transcript by its byte offset.

Every text this module answers is redacted (memhtml.domain.secrets): an API
key, a token, a private-key block or a password in a transcript is replaced
by `[redacted:<rule>]` before it reaches the plane, a search or a prompt. A
capped text is redacted with a margin past the cap, so a secret the cap
would cut is still recognised whole; `line_text` redacts the whole text, so
a capped text is still its prefix.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from memhtml.contracts.dates import normalize_datetime
from memhtml.domain.secrets import redact

# The kinds the original reads (SURFACES-FACTS 1.3) plus `summary`, which we keep as a turn.
TURN_KINDS: Final = frozenset({"user", "assistant", "system", "attachment"})
META_KINDS: Final = frozenset({"ai-title", "agent-name", "pr-link"})
SKIP_KINDS: Final = frozenset(
    {
        "last-prompt",
        "mode",
        "permission-mode",
        "queue-operation",
        "file-history-snapshot",
        "file-history-delta",
    }
)
ROLES: Final = (
    "user",
    "assistant",
    "tool_use",
    "tool_result",
    "thinking",
    "system",
    "summary",
    "attachment",
    "raw",
)
TEXT_LIMIT: Final = 20_000  # characters of a user, assistant, system or summary turn stored
TOOL_TEXT_LIMIT: Final = 2_000  # of a tool call, a tool result or an attachment
RAW_LIMIT: Final = 2_000  # of an unknown record kind's JSON
DETAIL_LIMIT: Final = 200  # of a problem's detail
# Characters past a cap that are redacted with the kept text: more than the longest secret a
# rule bounds (a private-key block is redacted to the end of what was kept).
REDACT_MARGIN: Final = 512
SYNTHETIC_MODEL: Final = "<synthetic>"
# The format's own spelling (UTC, milliseconds), range-checked by the pattern alone.
_INSTANT_MS: Final = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"
    r"(?:\.\d+)?Z\Z"
)
# Bookkeeping records this large are recognised by their first bytes and never parsed.
_SKIP_PREFIXES: Final = tuple(
    f'{{"type":"{kind}"'.encode() for kind in ("file-history-snapshot", "queue-operation")
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One stored row of a transcript: a turn, a summary, or an unknown record kept raw."""

    line_no: int
    byte_at: int
    kind: str  # the record's `type`
    role: str  # one of ROLES
    uuid: str | None = None
    parent_uuid: str | None = None
    prompt_id: str | None = None
    agent_id: str | None = None
    sidechain: bool = False
    timestamp: str | None = None  # canonical YYYY-MM-DDThh:mm:ssZ
    model: str | None = None
    tool_names: str | None = None  # comma-separated tool names a tool_use turn called
    tool_ids: str | None = None  # comma-separated tool_use ids (calls and results pair by id)
    text: str = ""
    text_chars: int = 0
    raw: str | None = None


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What a record says about the session as a whole (first or last value wins per field)."""

    cwd: str | None = None
    git_branch: str | None = None
    entrypoint: str | None = None
    version: str | None = None
    ai_title: str | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """A line that could not be read, and why."""

    line_no: int
    byte_at: int
    reason: str  # invalid_json, invalid_utf8, not_an_object, line_too_long
    detail: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """A bookkeeping record, counted and not read."""

    kind: str


# Everything `fold_line` can answer; None is a blank line.
Folded = tuple[Turn | None, FileFacts | None] | Problem | Skipped | None


def _str(value: Any) -> str | None:
    """A non-empty string, or None (the format's fields are read defensively)."""
    return clean_text(value) if isinstance(value, str) and value else None


def _told(value: Any) -> str | None:
    """`_str` for a field that carries what someone wrote (a title, a folder): redacted."""
    text = _str(value)
    return redact(text) if text is not None else None


def clean_text(text: str) -> str:
    """`text` with lone surrogates (valid JSON escapes, invalid UTF-8) replaced."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _capped(text: str, limit: int) -> tuple[str, int]:
    """The redacted text cut to `limit`, and the full text's length."""
    text = clean_text(text)
    if len(text) <= limit:
        return redact(text), len(text)
    return redact(text[: limit + REDACT_MARGIN])[:limit], len(text)


def canonical_timestamp(value: Any) -> str | None:
    """A record's timestamp as the stored instant grammar (seconds, UTC), or None."""
    if not isinstance(value, str):
        return None
    if _INSTANT_MS.match(value):  # the format's own spelling: cut the fraction
        return value[:19] + "Z"
    normalized = normalize_datetime(value)
    if normalized is None or len(normalized) == 10:
        return None
    return normalized


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        return ""


def _block_text(content: Any) -> str:
    """The text of a tool result's content: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "image":
                    parts.append("[image]")
        return "\n".join(parts)
    return ""


def _content(kind: str, record: dict[str, Any]) -> tuple[str, str, dict[str, str | None]]:
    """(role, full text, extras) of a turn record, from its message content blocks."""
    message = record.get("message")
    message = message if isinstance(message, dict) else {}
    content = message.get("content")
    if kind == "system":
        text = record.get("content")
        return "system", text if isinstance(text, str) else _block_text(content), {}
    if kind == "attachment":
        att = record.get("attachment")
        raw = att.get("content", att) if isinstance(att, dict) else record.get("content")
        return "attachment", _compact(raw) if raw is not None else "", {}
    if isinstance(content, str):
        return kind if kind in ("user", "assistant") else "raw", content, {}
    texts: list[str] = []
    thinking: list[str] = []
    uses: list[str] = []
    results: list[str] = []
    names: list[str] = []
    ids: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif btype == "thinking" and isinstance(block.get("thinking"), str):
            thinking.append(block["thinking"])
        elif btype == "tool_use":
            name = _str(block.get("name")) or "tool"
            names.append(name)
            if (tid := _str(block.get("id"))) is not None:
                ids.append(tid)
            uses.append(f"{name}: {_compact(block.get('input'))}")
        elif btype == "tool_result":
            if (tid := _str(block.get("tool_use_id"))) is not None:
                ids.append(tid)
            results.append(_block_text(block.get("content")))
        elif btype == "image":
            texts.append("[image]")
    extras: dict[str, str | None] = {
        "tool_names": ",".join(names) or None,
        "tool_ids": ",".join(ids) or None,
    }
    if texts:
        return kind if kind in ("user", "assistant") else "raw", "\n".join(texts), extras
    if uses:
        return "tool_use", "\n".join(uses), extras
    if results:
        return "tool_result", "\n".join(results), extras
    if thinking:
        return "thinking", "\n".join(thinking), extras
    return kind if kind in ("user", "assistant") else "raw", "", extras


def _facts(record: dict[str, Any]) -> FileFacts | None:
    cwd, branch = record.get("cwd"), record.get("gitBranch")
    entry, version = record.get("entrypoint"), record.get("version")
    title = record.get("aiTitle") if record.get("type") == "ai-title" else None
    if not (cwd or branch or entry or version or title):
        return None
    return FileFacts(_told(cwd), _told(branch), _str(entry), _str(version), _told(title))


def decode(line: bytes) -> dict[str, Any] | str:
    """The line's JSON object, or the reason it is not one (`reason: detail`)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid_utf8: {exc.reason} at byte {exc.start}"
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"invalid_json: {exc}"
    except RecursionError:
        return "invalid_json: nested too deeply"
    if not isinstance(value, dict):
        return f"not_an_object: a JSON {type(value).__name__}"
    if not isinstance(value.get("type"), str):
        return "not_an_object: no string `type`"
    return value


def fold_line(line: bytes, line_no: int, byte_at: int, *, agent_id: str | None = None) -> Folded:
    """What one complete line (without its newline) contributes; never raises.

    `agent_id` is the sidecar's agent id when the file is a subagent transcript:
    its turns are sidechain turns of that agent even if a record omits it.
    """
    if line.startswith(_SKIP_PREFIXES):
        return Skipped(line[9 : line.index(b'"', 9)].decode())
    if not line.strip():
        return None
    decoded = decode(line)
    if isinstance(decoded, str):
        reason, _, detail = decoded.partition(": ")
        return Problem(line_no, byte_at, reason, detail[:DETAIL_LIMIT])
    try:
        return _fold_record(decoded, line_no, byte_at, agent_id)
    except (RecursionError, MemoryError):  # a pathological value deep inside a record
        return Problem(line_no, byte_at, "invalid_json", "a value this parser cannot hold")


def _fold_record(
    record: dict[str, Any], line_no: int, byte_at: int, file_agent: str | None
) -> Folded:
    kind: str = record["type"]
    if kind in SKIP_KINDS:
        return Skipped(kind)
    if kind in META_KINDS:
        return None, _facts(record)
    agent = _str(record.get("agentId")) or file_agent
    sidechain = record.get("isSidechain") is True or file_agent is not None
    stamp = canonical_timestamp(record.get("timestamp"))
    if kind == "summary":
        text, chars = _capped(_str(record.get("summary")) or "", TEXT_LIMIT)
        turn = Turn(
            line_no,
            byte_at,
            kind,
            "summary",
            parent_uuid=_str(record.get("leafUuid")),
            timestamp=stamp,
            text=text,
            text_chars=chars,
        )
        return turn, None
    if kind not in TURN_KINDS:
        raw, _ = _capped(_compact(record), RAW_LIMIT)
        return Turn(
            line_no, byte_at, redact(clean_text(kind)[:100]), "raw", timestamp=stamp, raw=raw
        ), None
    role, full, extras = _content(kind, record)
    limit = TEXT_LIMIT if role in ("user", "assistant", "system", "thinking") else TOOL_TEXT_LIMIT
    text, chars = _capped(full, limit)
    message = record.get("message")
    model = _str(message.get("model")) if isinstance(message, dict) else None
    turn = Turn(
        line_no,
        byte_at,
        kind,
        role,
        uuid=_str(record.get("uuid")),
        parent_uuid=_str(record.get("parentUuid")),
        prompt_id=_str(record.get("promptId")) if kind == "user" else None,
        agent_id=agent,
        sidechain=sidechain,
        timestamp=stamp,
        model=model if kind == "assistant" else None,
        tool_names=extras.get("tool_names"),
        tool_ids=extras.get("tool_ids"),
        text=text,
        text_chars=chars,
    )
    return turn, _facts(record)


def line_text(line: bytes) -> str | None:
    """The whole text of a turn or summary line, uncapped; None when the line is neither."""
    decoded = decode(line)
    if isinstance(decoded, str):
        return None
    kind = decoded["type"]
    try:
        if kind == "summary":
            return redact(_str(decoded.get("summary")) or "")
        if kind in TURN_KINDS:
            return redact(clean_text(_content(kind, decoded)[1]))
    except RecursionError:
        return None
    return None


def merge_facts(old: FileFacts, new: FileFacts | None) -> FileFacts:
    """Fold a later record's facts in: identity from the first, current state from the last.

    `cwd` and `entrypoint` keep their first value; `git_branch`, `version` and
    `ai_title` take the latest. The same rule merges a tail into what a file's
    earlier bytes said, so a tail read and a whole re-read agree.
    """
    if new is None:
        return old
    return FileFacts(
        cwd=old.cwd or new.cwd,
        git_branch=new.git_branch or old.git_branch,
        entrypoint=old.entrypoint or new.entrypoint,
        version=new.version or old.version,
        ai_title=new.ai_title or old.ai_title,
    )
