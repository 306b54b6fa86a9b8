"""The hook engine: a host's event and payload in, the host's own protocol out, never a failure.

A hook runs inside a host's turn, so two rules shape everything here:

- **It never fails.** Garbage on stdin, no store, a locked or broken index, a
  missing model, an exception anywhere: stdout stays empty and the exit code
  is 0 (on `UserPromptSubmit` a non-zero exit is how a hook blocks a prompt).
  What went wrong is one line on stderr, where hosts show hook diagnostics.
- **It is bounded.** Recall waits for the embedding model only until
  `MODEL_WAIT` from the start of the process, then
  answers by keywords. Each event also has a hard limit (`LIMITS`, well
  inside the timeout written into the host's config): a watchdog thread
  writes the best answer ready by then and ends the process, so a locked
  index or a starved machine cannot hold the turn. Stdin is read within half
  of it, so a host that never closes the pipe cannot either.

Stdout carries only the host's protocol (`hosts.Host.output`): Claude Code's
and Codex's `hookSpecificOutput.additionalContext` JSON, Cursor's
`additional_context`, or plain text for OpenCode's plugin. An event whose
answer the host does not read (Cursor's prompt hook, any indexing event)
prints nothing. Recall text names each memory's path and says to read it
before quoting it.
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from memhtml.integrations.hosts import CURSOR_JSON, HOOK_SPECIFIC_JSON, Host, event_of

# Hard limits from process start, seconds: the watchdog's. They are a safety net well inside
# the hosts' own timeouts (10 s written for recall, 30 s for indexing), not the target.
LIMITS: Final = {
    "user-prompt-submit": 2.0,
    "session-start": 3.0,
    "pre-compact": 20.0,
    "session-end": 20.0,
}
# How long recall waits for the embedding model, from process start: what keeps a prompt's
# answer inside half a second. Past it the keyword answer stands. Both scale with a limit
# given by --time-limit-ms or MEMHTML_HOOK_TIME_LIMIT_MS.
MODEL_WAIT: Final = {"user-prompt-submit": 0.4, "session-start": 1.0}
# A keyword answer ready only after this share of the model wait means
# a machine too busy for the model to make it: the keyword answer goes at once.
LATE_SHARE: Final = 0.6
STDIN_LIMIT: Final = 8 << 20  # a payload larger than this is not a hook payload
GIST_CHARS: Final = 240
LIMIT_DEFAULT: Final = 5
BUDGET_DEFAULT: Final = 3000

PROMPT_HEADER: Final = (
    "memhtml recall for this prompt. These are ranked guesses, not citations: read a memory"
    " (memory_read, or `memhtml read PATH`) before you quote or rely on it, and"
    " memory_reinforce it if it helped."
)


def session_header(label: str) -> str:
    """The first line of a session-start answer."""
    return (
        f"memhtml memory for {label}, recalled for this session. These are ranked guesses, not"
        " citations: read a memory (memory_read, or `memhtml read PATH`) before you quote or"
        " rely on it."
    )


def say(message: str) -> None:
    """One diagnostic line on stderr (never stdout: that is the host's channel)."""
    try:
        sys.stderr.write(f"memhtml hook: {message}\n")
        sys.stderr.flush()
    except Exception:  # a closed stderr is no reason to fail a turn
        pass


def process_age() -> float:
    """Seconds since this process started (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


class Answer:
    """The best answer so far; written once, by the engine or by the watchdog at the limit."""

    def __init__(self, render: Callable[[str], str]) -> None:
        self._lock = threading.Lock()
        self._render = render
        self._text = ""
        self._finished = False

    def offer(self, text: str, *, only_if_empty: bool = False) -> None:
        """Replace the answer (a later, better one wins)."""
        with self._lock:
            if not self._finished and not (only_if_empty and self._text):
                self._text = text

    def finish(self) -> str | None:
        """The host's protocol bytes of the answer; None once it was finished already."""
        with self._lock:
            if self._finished:
                return None
            self._finished = True
            return self._render(self._text)


def _watchdog(answer: Answer, deadline: float) -> None:
    """At the deadline, if the engine has not answered: print what is ready, end the process."""

    def fire() -> None:
        time.sleep(max(0.0, deadline - time.monotonic()))
        out = answer.finish()
        if out is None:
            return  # the engine answered first
        try:
            if out:
                os.write(1, out.encode("utf-8"))
            say("the time limit was reached; answered with what was ready")
        finally:
            os._exit(0)

    threading.Thread(target=fire, name="memhtml-hook-watchdog", daemon=True).start()


def read_payload(deadline: float, fd: int = 0) -> Any:
    """The host's JSON payload from `fd`, or None (nothing, garbage, too big, or too late)."""
    try:
        if os.isatty(fd):
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > STDIN_LIMIT:
                return None
            chunks.append(chunk)
        return json.loads(b"".join(chunks).decode("utf-8"))
    except (OSError, ValueError):
        return None


def field(payload: Any, names: tuple[str, ...]) -> str | None:
    """The first non-blank string at one of the dotted `names` (a number indexes a list)."""
    for name in names:
        node = payload
        for part in name.split("."):
            if isinstance(node, dict):
                node = node.get(part)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                node = None
                break
        if isinstance(node, str) and node.strip():
            return node
    return None


def _line(path: str, title: str, gist: str) -> str:
    flat = " ".join(gist.split())
    if len(flat) > GIST_CHARS:
        flat = flat[: GIST_CHARS - 1].rstrip() + "…"
    return f"- {' '.join(title.split())}: {flat} [{path}]"


def render_prompt(hits: list[Any]) -> str:
    """The per-prompt answer: the header and one line per hit (nothing for no hit)."""
    if not hits:
        return ""
    return "\n".join([PROMPT_HEADER, *(_line(h.path, h.title, h.gist) for h in hits)])


def render_session(label: str, hits: list[Any], tasks: list[Any]) -> str:
    """The session-start answer: the pack as index lines, then open tasks."""
    if not hits and not tasks:
        return ""
    lines = [session_header(label), *(_line(h.path, h.title, h.gist) for h in hits)]
    if tasks:
        lines += ["Open tasks:", *(f"- {t.title} ({t.gist}) [{t.path}]" for t in tasks)]
    return "\n".join(lines)


def query_for_cwd(cwd: str) -> str:
    """A session's query: its folder's name and its parent's (the middle of a path is noise)."""
    p = Path(cwd)
    words = [w for w in (p.name, p.parent.name) if w not in ("", ".", "/")]
    return " ".join(dict.fromkeys(words))


def protocol(host: Host, event: str) -> Callable[[str], str]:
    """How `host` reads an answer to `event` (an empty answer is always empty)."""
    kind = host.output.get(event)
    wired = event_of(host, event)

    def render(text: str) -> str:
        text = text.strip()
        if not text or kind is None:
            return ""
        if kind == HOOK_SPECIFIC_JSON:
            name = wired.name if wired else event
            body = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}
            return json.dumps(body, ensure_ascii=False) + "\n"
        if kind == CURSOR_JSON:
            return json.dumps({"additional_context": text}, ensure_ascii=False) + "\n"
        return text + "\n"

    return render


def respond(
    host: Host,
    event: str,
    *,
    repo: str | None,
    trace_root: str | None,
    limit: int,
    budget: int,
    time_limit_ms: int | None,
    owns_process: bool,
    stdin_fd: int = 0,
) -> str:
    """Run one hook; the host's protocol text to print (possibly empty). Never raises."""
    start = time.monotonic() - (process_age() if owns_process else 0.0)
    from memhtml.ops.config import hook_time_limit_ms

    limit_ms = time_limit_ms or hook_time_limit_ms()
    hard = limit_ms / 1000 if limit_ms else LIMITS[event]
    deadline = start + hard
    answer = Answer(protocol(host, event))
    if event in host.output:  # recall: the model loads while the payload and the store are read
        try:
            from memhtml.ops.hook_model import preload
            from memhtml.ops.hook_recall import hybrid

            preload(hybrid, fork=owns_process)  # a child process, before the watchdog thread
        except Exception as exc:  # then the query is embedded later, or not at all
            say(f"{type(exc).__name__}: {exc}")
    if owns_process:
        _watchdog(answer, deadline)
    try:
        _work(
            host,
            event,
            answer,
            repo=repo,
            trace_root=trace_root,
            limit=limit,
            budget=budget,
            start=start,
            hard=hard,
            fd=stdin_fd,
        )
    except BaseException as exc:  # a hook never fails a turn
        say(f"{type(exc).__name__}: {exc}")
    return answer.finish() or ""


def _work(
    host: Host,
    event: str,
    answer: Answer,
    *,
    repo: str | None,
    trace_root: str | None,
    limit: int,
    budget: int,
    start: float,
    hard: float,
    fd: int,
) -> None:
    indexing = event in ("pre-compact", "session-end")
    if not indexing and event not in host.output:
        return  # the host does not read an answer to this event
    if indexing and host.transcripts is None:
        return  # no transcript format memhtml can read for this host
    from memhtml.ops import hook_recall

    payload = read_payload(start + hard * 0.5, fd)
    if payload is None:
        if not indexing:
            return
        payload = {}
    from memhtml.integrations.machine import store_root

    root = Path(store_root(repo))
    if not hook_recall.ready(root):
        say(f"no memhtml store at {root}; nothing recalled")
        return
    # A longer limit (--time-limit-ms, MEMHTML_HOOK_TIME_LIMIT_MS) lengthens the wait with it.
    wait = MODEL_WAIT.get(event, 0.0) * hard / LIMITS[event]
    embed_until = start + wait
    late_after = start + wait * LATE_SHARE
    if event == "user-prompt-submit":
        prompt = field(payload, host.payload.prompt)
        if prompt:
            hook_recall.prompt_hits(
                root,
                prompt,
                limit=limit,
                embed_until=embed_until,
                late_after=late_after,
                offer=lambda hits, _mode: answer.offer(render_prompt(hits)),
                say=say,
            )
    elif event == "session-start":
        cwd = field(payload, host.payload.cwd) or os.getcwd()
        label = Path(cwd).name or cwd
        tasks: list[Any] = []
        hook_recall.session_pack(
            root,
            query_for_cwd(cwd),
            budget=budget,
            embed_until=embed_until,
            late_after=late_after,
            tasks=tasks,
            offer=lambda hits, _mode: answer.offer(render_session(label, hits, tasks)),
            say=say,
        )
        answer.offer(render_session(label, [], tasks), only_if_empty=True)
    else:
        _index(host, payload, root, trace_root, start + hard)


def _index(host: Host, payload: Any, root: Path, trace_root: str | None, deadline: float) -> None:
    from memhtml.ops import hook_recall
    from memhtml.ops.traces import trace_root as resolve

    where = resolve(trace_root)
    transcript = field(payload, host.payload.transcript)
    if transcript and where not in Path(transcript).parents:
        say(f"the session's transcript {transcript} is not under {where}; indexing {where} anyway")
    wait = max(0.0, min(2.0, deadline - time.monotonic() - 1.0))
    hook_recall.index_transcripts(root, str(where), lock_wait=wait)
