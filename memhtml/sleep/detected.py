"""Detected tasks: what a sleep detector proposes to a person, under one discipline.

Detectors (edge-typing's contradictions, task-detection's open commitments,
trace-consolidation's commitments) do not act on what they find: they open a
`task` memory for a person, and close it again when the finding stops
appearing (SLEEP-FACTS 4.1). The rules, in the order a proposal meets them:

1. **One task per finding.** The key is `det-` + 12 hex of
   sha256(detector + finding), normalized; the file is
   `areas/inbox/tasks/<key>-<slug>.html`. A finding whose task is open is
   `refreshed` (its `memhtml-updated` restamped; nothing else changes).
2. **A person's "no" stands.** A detected task a person closed (status done,
   without the `machine-closed` tag, live or archived) is a standing
   dismissal: the same finding is `dismissed`, never reopened.
3. **Evidence is checked against the corpus.** A quote must appear verbatim
   in the file it cites; a measurement must say what was measured; a session
   finding must name its session. Otherwise `unverified`, and nothing is
   written.
4. **One open task per frame.** A finding whose subject (the sentence it
   quotes) has the frame key (what it is about, `memhtml.domain.frame`) of
   an open detected task's quote is `framed`. Templated claims ("confirm:
   <path> records ...") are not framed: they would all share one frame.
5. **Ten a night.** At most DETECTED_TASK_CAP tasks are opened per run
   across every detector (the run's earlier phases' `tasks_minted` count
   against it); past it a finding is `capped`.

Tasks are authored `agent:sleep`, tagged `detected` and the detector's name,
in that order. Closing (`sweep`) sets status `done`, adds `machine-closed`
and archives the task; a detector may sweep only on a full-strength night
(no refused batch), so a model outage never closes a person's queue.

Where we differ: the original gives a resumed run a fresh ten; here the cap
counts the whole run, resumes included. Its standing dismissals are archived
files only, since its `task status done` archives; ours leaves a done task in
place, so a live done task dismisses too.
"""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

from memhtml.contracts.errors import MemhtmlError
from memhtml.contracts.paths import path_to_href, slugify
from memhtml.contracts.vocab import INBOX_DIR, TASKS_SUBDIR
from memhtml.html import add_meta, parse_memory, set_meta
from memhtml.sleep.phase import SleepContext, Touched

DETECTED_TASK_CAP: Final = 10
DETECTION_PREFIX: Final = "det-"
DIGEST_CHARS: Final = 12
DETECTED_TAG: Final = "detected"
MACHINE_CLOSED_TAG: Final = "machine-closed"
TASK_DIR: Final = f"{INBOX_DIR}/{TASKS_SUBDIR}"
SLEEP_AUTHOR: Final = "agent:sleep"
MINTED_COUNT: Final = "tasks_minted"  # the count every detecting phase reports
_KEY_OF_FILE: Final = re.compile(r"^(det-[0-9a-f]{12})-")
_STEM_MAX: Final = 80 - len(DETECTION_PREFIX) - DIGEST_CHARS - 1

Outcome = Literal["minted", "refreshed", "capped", "unverified", "framed", "dismissed", "secret"]


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).lower().split())


def detection_key(detector: str, finding: str) -> str:
    """`det-` + the first 12 hex of sha256(norm(detector) + " " + norm(finding))."""
    digest = hashlib.sha256(f"{_norm(detector)} {_norm(finding)}".encode()).hexdigest()
    return DETECTION_PREFIX + digest[:DIGEST_CHARS]


def key_of(path: str) -> str | None:
    """The detection key a detected task's file name carries (None: not a detected task)."""
    m = _KEY_OF_FILE.match(path.rsplit("/", 1)[-1])
    return m.group(1) if m else None


def task_path(key: str, title: str) -> str:
    """`areas/inbox/tasks/<key>-<slug>.html`, the slug cut so the name stays in budget."""
    return f"{TASK_DIR}/{key}-{slugify(title, max_len=_STEM_MAX)}.html"


@dataclass(frozen=True)
class Evidence:
    """Why a detector believes its finding: a verbatim quote, a measurement, or a session."""

    kind: Literal["quote", "measurement", "session"]
    path: str = ""  # quote: the file quoted
    quote: str = ""
    detail: str = ""  # measurement: what was measured
    session_id: str = ""  # session: the session and what it said
    statement: str = ""


@dataclass(frozen=True)
class Finding:
    """One thing a detector proposes a person decide."""

    detector: str
    finding: str  # what makes it the same finding night after night (the key's input)
    title: str
    claim: str
    evidence: Evidence
    detail: str = ""
    due: str | None = None
    subject: str = ""  # the sentence framed for rule 4 (a quote, a statement); "" skips it

    @property
    def key(self) -> str:
        """The detection key."""
        return detection_key(self.detector, self.finding)


def _code(text: str) -> str:
    return f"<code>{html.escape(text)}</code>"


def article_html(f: Finding, run_id: str) -> str:
    """The task's article: the claim, the detail, the evidence, and where it came from."""
    ev = f.evidence
    parts = [f"<p><mark>{html.escape(f.claim)}</mark></p>"]
    if f.detail.strip():
        parts.append(f"<p>{html.escape(f.detail.strip())}</p>")
    if ev.kind == "quote":
        cite = html.escape(path_to_href(ev.path), quote=True)
        parts.append(
            f"<p>Evidence, verbatim from {_code(ev.path)}:"
            f' <q cite="{cite}">{html.escape(ev.quote.strip())}</q></p>'
        )
    elif ev.kind == "session":
        parts.append(
            f"<p>Evidence, from session {_code(ev.session_id)}: {html.escape(ev.statement)}"
            " The verbatim line is in the commit that opened this task; a transcript span is"
            " not stored in the corpus.</p>"
        )
    else:
        parts.append(f"<p>Evidence, measured over the corpus: {html.escape(ev.detail)}</p>")
    parts.append(
        f"<p>Detected by {_code(f.detector)} on run {_code(run_id)}. This is a proposal for a"
        " human to decide, not a finding the corpus asserts. It closes itself when the detector"
        " stops seeing it.</p>"
    )
    return "\n".join(parts)


@dataclass
class Detections:
    """One detector's findings for one phase: mint, refresh, and sweep what vanished."""

    ctx: SleepContext
    detector: str
    counts: dict[str, int] = field(default_factory=dict)
    live: set[str] = field(default_factory=set)  # every key the detector saw tonight
    touched: list[Touched] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    _open: dict[str, str] = field(default_factory=dict)  # key -> path of this detector
    _open_frames: dict[str, str] = field(default_factory=dict)  # frame key -> path (all)

    def __post_init__(self) -> None:
        for name in ("minted", "refreshed", "capped", "unverified", "framed", "dismissed"):
            self.counts.setdefault(f"tasks_{name}", 0)
        self.counts.setdefault("tasks_closed", 0)
        for path, tags in self._open_tasks():
            key = key_of(path)
            if key is None:
                continue
            if self.detector in tags:
                self._open[key] = path
            frame = _frame(_quoted(self.ctx, path))
            if frame is not None:
                self._open_frames.setdefault(frame, path)

    def _open_tasks(self) -> list[tuple[str, set[str]]]:
        conn = self.ctx.conn
        rows = conn.execute(
            "SELECT f.path, (SELECT group_concat(tag, char(31)) FROM file_tags t"
            " WHERE t.path = f.path) FROM files f WHERE f.memory_type = 'task' AND f.archived = 0"
            " AND f.path LIKE ? AND coalesce(f.task_status, 'todo') <> 'done' ORDER BY f.path",
            (f"{TASK_DIR}/{DETECTION_PREFIX}%",),
        ).fetchall()
        out = []
        for path, tags_raw in rows:
            tags = set(str(tags_raw or "").split("\x1f"))
            if DETECTED_TAG in tags:
                out.append((str(path), tags))
        return out

    def remaining(self) -> int:
        """Tasks this run may still open (the cap counts every earlier phase's mints)."""
        earlier = sum(int(r.get("counts", {}).get(MINTED_COUNT, 0)) for r in self.ctx.results)
        return max(0, DETECTED_TASK_CAP - earlier - self.counts[MINTED_COUNT])

    def _dismissed(self, key: str) -> bool:
        pattern = f"%{TASK_DIR}/{key}-%"
        for path, tags_raw in self.ctx.conn.execute(
            "SELECT f.path, (SELECT group_concat(tag, char(31)) FROM file_tags t"
            " WHERE t.path = f.path) FROM files f WHERE f.memory_type = 'task'"
            " AND f.task_status = 'done' AND (f.path LIKE ? OR f.origin_path LIKE ?)",
            (pattern, pattern),
        ):
            tags = set(str(tags_raw or "").split("\x1f"))
            if DETECTED_TAG in tags and MACHINE_CLOSED_TAG not in tags and path:
                return True
        return False

    def _verified(self, ev: Evidence) -> bool:
        if ev.kind == "measurement":
            return bool(ev.detail.strip())
        if ev.kind == "session":
            return bool(ev.session_id.strip() and ev.statement.strip())
        from memhtml.sleep.phases._model import verbatim

        view = self.ctx.view
        if not ev.path or not view.exists(ev.path):
            return False
        doc = parse_memory(view.read(ev.path))
        return doc.ok and (verbatim(ev.quote, doc.body_text) or verbatim(ev.quote, doc.title))

    def propose(self, f: Finding) -> Outcome:
        """Meet the rules in order; stage the task (or the refresh) when they allow it."""
        key = f.key
        self.live.add(key)
        outcome = self._decide(f, key)
        self.counts[f"tasks_{outcome}"] = self.counts.get(f"tasks_{outcome}", 0) + 1
        return outcome

    def _decide(self, f: Finding, key: str) -> Outcome:
        ctx = self.ctx
        if key in self._open:
            path = self._open[key]
            if not ctx.dry_run and ctx.view.exists(path):
                from memhtml.sleep.phases._shared import stamp

                if stamp(ctx, path, lambda t: set_meta(t, "memhtml-updated", ctx.at)):
                    self.touched.append(Touched(path, "rewritten"))
            return "refreshed"
        if self._dismissed(key):
            return "dismissed"
        if not self._verified(f.evidence):
            return "unverified"
        frame = _frame(f.subject)
        if frame is not None and frame in self._open_frames:
            return "framed"
        if self.remaining() <= 0:
            return "capped"
        path = task_path(key, f.title)
        if not ctx.dry_run:
            from memhtml.contracts.errors import SecretFoundError

            try:
                path = self._write(f, path)
            except SecretFoundError:  # a finding quoting a credential is skipped, counted
                return "secret"
            self.touched.append(Touched(path, "created"))
        self.lines.append(f"open {path}: {f.claim}")
        self._open[key] = path
        if frame is not None:
            self._open_frames[frame] = path
        return "minted"

    def _write(self, f: Finding, path: str) -> str:
        from memhtml.contracts.ops import WriteOp
        from memhtml.contracts.paths import memory_path
        from memhtml.contracts.vocab import DEFAULT_TASK_STATUS

        op = WriteOp(
            title=f.title,
            type="task",
            article_html=article_html(f, self.ctx.run_id),
            path=memory_path(path),
            tag=[DETECTED_TAG, f.detector],
            author=SLEEP_AUTHOR,
            task_status=DEFAULT_TASK_STATUS,
            due=f.due,
            session_id=f.evidence.session_id or None,
        )
        return str(self.ctx.planner.write(op)["path"])

    def sweep(self) -> list[str]:
        """Close and archive this detector's open tasks whose finding was not seen tonight."""
        return self.close({k for k in self._open if k not in self.live}, "no longer detected")

    def close(self, keys: set[str], why: str) -> list[str]:
        """Close and archive this detector's open tasks with these keys (a sweep, or a
        completion the detector saw): status done, tagged machine-closed, archived."""
        from memhtml.ops.fold import archive
        from memhtml.sleep.phases._shared import stamp

        ctx = self.ctx
        closed = []
        for key, path in sorted(self._open.items()):
            if key not in keys or not ctx.view.exists(path):
                continue
            if not ctx.dry_run:

                def close(text: str) -> str:
                    text = set_meta(text, "memhtml-task-status", "done")
                    text = set_meta(text, "memhtml-updated", ctx.at)
                    return add_meta(text, "memhtml-tag", MACHINE_CLOSED_TAG)

                try:
                    stamp(ctx, path, close)
                except MemhtmlError:
                    continue
                moved = archive(ctx, path, f"detected task: {why}")
                if moved is None:
                    continue
                self.touched.append(Touched(moved.to, "archived", from_path=path))
            closed.append(path)
            self.lines.append(f"close {path}: {why}")
        self.counts["tasks_closed"] += len(closed)
        return closed

    def changed(self) -> bool:
        """True when a task was opened, refreshed or closed."""
        return any(self.counts[f"tasks_{k}"] for k in ("minted", "refreshed", "closed"))


def _frame(subject: str) -> str | None:
    if not subject.strip():
        return None
    from memhtml.domain.frame import frame_key

    return frame_key(subject)


_QUOTE: Final = re.compile(r"<q\b[^>]*>(.*?)</q>", re.DOTALL)


def _quoted(ctx: SleepContext, path: str) -> str:
    """The verbatim evidence a detected task quotes ("" when it quotes none)."""
    if not ctx.view.exists(path):
        return ""
    m = _QUOTE.search(ctx.view.read(path).decode("utf-8", "replace"))
    return html.unescape(re.sub(r"<[^>]+>", "", m.group(1))) if m else ""


def keys_seen(findings: Iterable[Finding]) -> set[str]:
    """The detection keys of `findings`."""
    return {f.key for f in findings}
