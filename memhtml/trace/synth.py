"""Synthetic agent session transcripts, shaped like Claude Code's, for tests and benchmarks.

No real transcript is ever committed: tests and `bench/bench_trace.py` build
their corpora here, deterministically from a seed. A session is a run of
exchanges (a user prompt, assistant text, tool calls and their results with
the `toolUseResult` copy real transcripts carry, thinking), with the
bookkeeping records real files hold (file-history snapshots, an AI title, a
summary, a compaction boundary, a record kind this build does not know) and,
for some sessions, sidechains: inline `isSidechain` records, or a subagent's
sidecar file under `<session>/subagents/agent-<id>.jsonl`.

Every session says one phrase no other session says (`SynthSession.phrase`),
so a search can be checked to find that session and no other.

    sessions = write_corpus(tmp / "projects", sessions=8, seed=1)
    append_exchanges(sessions[0], exchanges=3, seed=2)  # the session goes on
    append_partial_line(sessions[1].path)  # a writer cut mid-line
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

WORDS: Final = [
    "index",
    "cache",
    "query",
    "parser",
    "schema",
    "migration",
    "commit",
    "branch",
    "deploy",
    "rollback",
    "latency",
    "throughput",
    "socket",
    "buffer",
    "thread",
    "lock",
    "mutex",
    "queue",
    "worker",
    "retry",
    "timeout",
    "backoff",
    "config",
    "token",
    "session",
    "cursor",
    "snapshot",
    "replica",
    "shard",
    "partition",
    "vector",
    "embedding",
    "ranking",
    "fixture",
    "assertion",
    "coverage",
    "benchmark",
    "profile",
    "allocation",
    "memory",
    "leak",
    "handle",
    "descriptor",
    "request",
    "response",
    "header",
    "payload",
    "envelope",
    "gateway",
    "proxy",
    "router",
    "endpoint",
    "handler",
    "middleware",
    "serializer",
    "validator",
    "compiler",
    "linker",
    "module",
    "package",
    "dependency",
    "version",
    "release",
    "changelog",
    "pipeline",
    "runner",
    "artifact",
    "container",
    "image",
    "volume",
    "network",
    "cluster",
    "node",
    "pod",
    "service",
    "ingress",
    "certificate",
    "secret",
    "credential",
    "permission",
    "role",
    "policy",
    "audit",
    "metric",
    "counter",
    "gauge",
    "histogram",
    "trace",
    "span",
    "log",
    "warning",
    "error",
    "exception",
    "stack",
    "frame",
    "function",
    "method",
    "class",
    "interface",
    "protocol",
    "adapter",
    "facade",
    "registry",
    "plugin",
    "hook",
]
VERBS: Final = [
    "fix",
    "check",
    "update",
    "refactor",
    "rename",
    "remove",
    "add",
    "test",
    "verify",
    "measure",
    "reduce",
    "explain",
    "rewrite",
    "split",
    "merge",
    "review",
    "document",
    "profile",
    "cache",
    "retry",
    "validate",
    "parse",
]
RARE: Final = [
    "aubergine",
    "zeppelin",
    "quokka",
    "marzipan",
    "obsidian",
    "tamarind",
    "gazebo",
    "kumquat",
    "nebula",
    "origami",
    "pangolin",
    "quasar",
    "saffron",
    "tundra",
    "umbra",
    "vellum",
    "wombat",
    "xenon",
    "yarrow",
    "zircon",
]
TOOLS: Final = ("Bash", "Read", "Edit", "Grep", "Glob", "Write")
MODELS: Final = ("claude-sonnet-4-20250514", "claude-opus-4-20250514")
VERSION: Final = "1.0.51"
BASE_TIME: Final = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)


@dataclass
class SynthSession:
    """One generated session: where it is and what only it says."""

    session_id: str
    slug: str
    path: Path
    phrase: str
    cwd: str
    sidecars: list[Path] = field(default_factory=list)
    last_uuid: str | None = None
    clock: datetime = BASE_TIME
    turns: int = 0


class _Text:
    """Sentences and code-ish lines from a fixed pool, so a 50 MB corpus builds in seconds."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.sentences = [self._sentence() for _ in range(600)]
        self.lines = [self._code_line(i) for i in range(800)]

    def _sentence(self) -> str:
        words = [self.rng.choice(WORDS) for _ in range(self.rng.randint(6, 16))]
        return f"{self.rng.choice(VERBS).capitalize()} the {' '.join(words)}."

    def _code_line(self, i: int) -> str:
        a, b = self.rng.choice(WORDS), self.rng.choice(WORDS)
        shapes = (
            f"def {a}_{b}(self, {b}: int) -> None:",
            f"    return self.{a}.{b}({i})",
            f"{a.upper()}_{b.upper()} = {i}",
            f"# {self.rng.choice(self.sentences)}",
            f"2026-01-05 09:{i % 60:02d}:{i % 59:02d} INFO {a}: {b} ok in {i % 97} ms",
        )
        return shapes[i % len(shapes)]

    def prose(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(self.sentences) for _ in range(self.rng.randint(lo, hi)))

    def code(self, size: int) -> str:
        out: list[str] = []
        total = 0
        while total < size:
            line = self.rng.choice(self.lines)
            out.append(line)
            total += len(line) + 1
        return "\n".join(out)


class _Writer:
    """Appends one session's records, keeping its parent chain and clock."""

    def __init__(self, session: SynthSession, rng: random.Random, text: _Text) -> None:
        self.s = session
        self.rng = rng
        self.text = text
        self.lines: list[str] = []
        self.sidecar_lines: dict[str, list[str]] = {}

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _stamp(self) -> str:
        self.s.clock += timedelta(seconds=self.rng.randint(1, 40))
        return self.s.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.rng.randint(0, 999):03d}Z"

    def _envelope(self, kind: str, *, agent: str | None = None) -> dict[str, Any]:
        rid = self._uuid()
        rec: dict[str, Any] = {
            "parentUuid": self.s.last_uuid,
            "isSidechain": agent is not None,
            "userType": "external",
            "cwd": self.s.cwd,
            "sessionId": self.s.session_id,
            "version": VERSION,
            "gitBranch": "main",
            "type": kind,
            "uuid": rid,
            "timestamp": self._stamp(),
        }
        if agent is not None:
            rec["agentId"] = agent
        self.s.last_uuid = rid
        self.s.turns += 1
        return rec

    def _emit(self, rec: dict[str, Any], agent: str | None = None) -> None:
        line = json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
        if agent is not None and agent in self.sidecar_lines:
            self.sidecar_lines[agent].append(line)
        else:
            self.lines.append(line)

    def user(self, text: str, *, agent: str | None = None) -> None:
        rec = self._envelope("user", agent=agent)
        rec["message"] = {"role": "user", "content": text}
        rec["promptId"] = self._uuid()
        self._emit(rec, agent)

    def assistant(self, content: list[dict[str, Any]], *, agent: str | None = None) -> None:
        rec = self._envelope("assistant", agent=agent)
        rec["message"] = {
            "id": "msg_" + self._uuid().replace("-", "")[:24],
            "type": "message",
            "role": "assistant",
            "model": self.rng.choice(MODELS),
            "content": content,
            "stop_reason": None,
            "usage": {"input_tokens": self.rng.randint(10, 9000), "output_tokens": 120},
        }
        rec["requestId"] = "req_" + self._uuid().replace("-", "")[:24]
        self._emit(rec, agent)

    def tool_round(self, size: int, *, agent: str | None = None) -> None:
        tool = self.rng.choice(TOOLS)
        tid = "toolu_" + self._uuid().replace("-", "")[:24]
        arg = {"command": f"pytest -q tests/{self.rng.choice(WORDS)}"}
        if tool != "Bash":
            arg = {"file_path": f"{self.s.cwd}/src/{self.rng.choice(WORDS)}.py"}
        self.assistant([{"type": "tool_use", "id": tid, "name": tool, "input": arg}], agent=agent)
        output = self.text.code(size)
        rec = self._envelope("user", agent=agent)
        rec["message"] = {
            "role": "user",
            "content": [{"tool_use_id": tid, "type": "tool_result", "content": output}],
        }
        rec["toolUseResult"] = {"stdout": output, "stderr": "", "interrupted": False}
        self._emit(rec, agent)

    def exchange(self, *, tool_bytes: tuple[int, int], phrase: str | None = None) -> None:
        prompt = self.text.prose(1, 3)
        if phrase:
            prompt += f" Remember the {phrase} when you are done."
        self.user(prompt)
        if self.rng.random() < 0.3:
            thought = self.text.prose(1, 2)
            self.assistant([{"type": "thinking", "thinking": thought, "signature": "sig"}])
        self.assistant([{"type": "text", "text": self.text.prose(1, 4)}])
        for _ in range(self.rng.randint(1, 4)):
            self.tool_round(self.rng.randint(*tool_bytes))
        if self.rng.random() < 0.4:
            snap = {"messageId": self._uuid(), "snapshot": {"trackedFileBackups": {}}}
            self._emit({"type": "file-history-snapshot", **snap, "isSnapshotUpdate": False})
        self.assistant([{"type": "text", "text": self.text.prose(1, 3)}])

    def sidechain(self, agent: str, *, sidecar: bool, tool_bytes: tuple[int, int]) -> None:
        if sidecar:
            self.sidecar_lines.setdefault(agent, [])
        parent = self.s.last_uuid
        self.s.last_uuid = None
        self.user(f"Subtask: {self.text.prose(1, 1)}", agent=agent)
        self.assistant([{"type": "text", "text": self.text.prose(1, 2)}], agent=agent)
        self.tool_round(self.rng.randint(*tool_bytes), agent=agent)
        self.assistant([{"type": "text", "text": self.text.prose(1, 2)}], agent=agent)
        self.s.last_uuid = parent

    def flush(self) -> int:
        written = _append(self.s.path, self.lines)
        for agent, lines in self.sidecar_lines.items():
            folder = self.s.path.parent / self.s.session_id / "subagents"
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"agent-{agent}.jsonl"
            if target not in self.s.sidecars:
                self.s.sidecars.append(target)
                meta = {"agentType": "general-purpose"}
                (folder / f"agent-{agent}.meta.json").write_text(json.dumps(meta))
            written += _append(target, lines)
        self.lines, self.sidecar_lines = [], {}
        return written


def _append(path: Path, lines: list[str]) -> int:
    if not lines:
        return 0
    data = ("\n".join(lines) + "\n").encode("utf-8")
    with path.open("ab") as fh:
        fh.write(data)
    return len(data)


def phrase_for(index: int) -> str:
    """The phrase only session `index` says."""
    n = len(RARE)
    return f"{RARE[index % n]} {RARE[(index // n + 3 * index + 1) % n]} handshake {index}"


def write_session(
    projects: Path,
    index: int,
    *,
    seed: int = 0,
    session_bytes: int = 40_000,
    tool_bytes: tuple[int, int] = (200, 3_000),
) -> SynthSession:
    """One session of about `session_bytes` (sidecars aside) under `projects/<slug>/`."""
    rng = random.Random(f"{seed}:{index}")
    text = _Text(rng)
    slug = f"-home-dev-project-{index % 5}"
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    folder = projects / slug
    folder.mkdir(parents=True, exist_ok=True)
    session = SynthSession(
        session_id=sid,
        slug=slug,
        path=folder / f"{sid}.jsonl",
        phrase=phrase_for(index),
        cwd=f"/home/dev/project-{index % 5}",
        clock=BASE_TIME + timedelta(hours=3 * index),
    )
    w = _Writer(session, rng, text)
    if index % 4 == 1:  # a resumed session starts with its predecessor's summary
        w._emit({"type": "summary", "summary": text.prose(1, 1), "leafUuid": w._uuid()})
    said = False
    exchanges = 0
    size = 0
    while size < session_bytes or not said:
        say = not said and (exchanges >= 2 or size > session_bytes // 2)
        w.exchange(tool_bytes=tool_bytes, phrase=session.phrase if say else None)
        said = said or say
        exchanges += 1
        if exchanges == 1:  # a record kind this build does not know
            w._emit({"type": "progress", "sessionId": sid, "data": {"step": exchanges}})
        if exchanges == 2:
            w._emit({"type": "ai-title", "sessionId": sid, "aiTitle": text.prose(1, 1)[:60]})
            if index % 3 == 0:
                agent = f"a{index:04d}"
                w.sidechain(agent, sidecar=index % 2 == 0, tool_bytes=tool_bytes)
        if exchanges == 3 and index % 5 == 2:
            rec = w._envelope("system")
            rec.update(subtype="compact_boundary", content="Conversation compacted", level="info")
            w._emit(rec)
        size += w.flush()
    return session


def write_corpus(
    projects: Path,
    *,
    sessions: int = 8,
    seed: int = 0,
    session_bytes: int = 40_000,
    tool_bytes: tuple[int, int] = (200, 3_000),
) -> list[SynthSession]:
    """`sessions` sessions under `projects` (a folder shaped like ~/.claude/projects)."""
    return [
        write_session(projects, i, seed=seed, session_bytes=session_bytes, tool_bytes=tool_bytes)
        for i in range(sessions)
    ]


def append_exchanges(
    session: SynthSession,
    *,
    exchanges: int = 2,
    seed: int = 1,
    phrase: str | None = None,
    tool_bytes: tuple[int, int] = (200, 3_000),
) -> int:
    """The session goes on: `exchanges` more exchanges appended; the bytes appended."""
    rng = random.Random(f"{seed}:{session.session_id}:{session.turns}")
    w = _Writer(session, rng, _Text(rng))
    for i in range(exchanges):
        w.exchange(tool_bytes=tool_bytes, phrase=phrase if i == 0 else None)
    return w.flush()


def append_partial_line(path: Path) -> bytes:
    """A record cut mid-line (no newline): a writer mid-write, or killed. Returns its rest."""
    line = json.dumps(
        {
            "type": "user",
            "sessionId": path.stem,
            "uuid": "cut-" + path.stem[:8],
            "timestamp": "2026-02-01T00:00:00.000Z",
            "message": {"role": "user", "content": "a line the writer had not finished"},
        },
        separators=(",", ":"),
    ).encode()
    cut = len(line) // 2
    with path.open("ab") as fh:
        fh.write(line[:cut])
    return line[cut:] + b"\n"
