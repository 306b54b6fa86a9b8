"""Secrets never travel (issue 29, item 6): a transcript's credentials stay out of the trace
plane, out of search answers, out of every model prompt, and out of main, the branch's
commit messages and a published site after a whole night with the fake model."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memhtml.eval.secret_samples import positives, tokens
from memhtml.ops.traces import index_traces, open_traces, search_traces
from memhtml.sleep import engine
from memhtml.sleep.merge import merge
from memhtml.trace.store import TraceStore, plane_path
from tests.sleep.model_script import caller

DATE = "2027-01-01"
SID = "6f1c2d0e-0000-4000-8000-000000000001"
# The kinds a transcript typically carries, one sentence each.
SAID = [text for kind in sorted(positives()) for text in positives()[kind][:2]]


def secrets() -> list[str]:
    """The bytes that must never appear: every bare token (a private key by its body line)."""
    out = []
    for kind, tok in tokens().items():
        if kind == "private-key":
            out.append(tok.splitlines()[1])
        elif kind == "generic-password" or kind == "generic-credential-uri":
            out.append(tok)
        else:
            out.append(tok)
    return out


def leaked(text: str) -> list[str]:
    return [s[:12] for s in secrets() if s in text]


def _record(kind: str, n: int, content: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"u-{n}",
        "parentUuid": f"u-{n - 1}" if n else None,
        "sessionId": SID,
        "timestamp": "2026-02-01T10:00:00.000Z",
        "cwd": "/home/dev/shop",
        "message": {"role": kind, "content": content},
    }


def write_transcript(projects: Path) -> Path:
    folder = projects / "-home-dev-shop"
    folder.mkdir(parents=True)
    lines: list[dict[str, Any]] = [
        {
            "type": "ai-title",
            "sessionId": SID,
            "aiTitle": f"Deploy with {tokens()['aws-access-token']}",
        }
    ]
    n = 0
    for said in SAID:
        n += 1
        lines.append(_record("user", n, f"The deploy failed again; I exported this: {said}"))
        n += 1
        lines.append(
            _record(
                "assistant",
                n,
                [
                    {
                        "type": "text",
                        "text": f"Noted: {said} was used for the deploy of the checkout service.",
                    }
                ],
            )
        )
        n += 1
        lines.append(
            _record(
                "user",
                n,
                [{"type": "tool_result", "tool_use_id": f"t{n}", "content": f"env dump: {said}"}],
            )
        )
    path = folder / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert path.stat().st_size > 8 * 1024
    return projects


def plane_bytes(root: Path) -> bytes:
    db = plane_path(root)
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


@pytest.fixture
def traced(fixed: Any, tmp_path: Path) -> Any:
    projects = write_transcript(tmp_path / "claude" / "projects")
    report = index_traces(fixed, root=projects, progress=False)
    assert report["turns_written"] >= len(SAID) * 3
    return fixed


def test_the_plane_and_search_hold_no_secret(traced: Any) -> None:
    raw = plane_bytes(traced.root)
    assert [s[:12] for s in secrets() if s.encode() in raw] == []
    assert b"[redacted:aws-access-token]" in raw
    answer = search_traces(traced, "deploy exported")
    assert answer["hits"], answer
    assert leaked(json.dumps(answer)) == []
    assert any("[redacted:" in h["snippet"] for h in answer["hits"])
    store = open_traces(traced)
    assert store is not None
    with store:
        for turn in store.turns(SID):
            assert leaked(store.full_text(turn)) == []  # the uncapped re-read too
        assert leaked(json.dumps(store.sessions(), default=str)) == []


def test_a_plane_built_before_redaction_is_discarded_whole(tmp_path: Path) -> None:
    from memhtml.trace.store import _migration_files

    path = tmp_path / ".memhtml" / "traces" / "traces.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    first = _migration_files()[0]
    conn.executescript(first.read_text())
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    conn.execute("INSERT INTO schema_migrations VALUES (?, '2026-01-01T00:00:00Z')", (first.name,))
    tok = tokens()["github-pat"]
    conn.execute("INSERT INTO trace_meta VALUES ('leak', ?)", (tok,))
    conn.commit()
    conn.close()
    assert tok.encode() in path.read_bytes()
    with TraceStore.open(path) as store:
        assert store.reset is not None and "redacted" in store.reset
    assert tok.encode() not in b"".join(p.read_bytes() for p in path.parent.glob("traces.db*"))


def test_a_night_with_the_fake_model_lets_no_secret_through(traced: Any, tmp_path: Path) -> None:
    aws = tokens()["aws-access-token"]
    # A memory someone stored on purpose: phases send memories to the model, the seam redacts.
    traced.write(title="Vault note", claim=f"The old id {aws} was rotated away.", allow_secret=True)
    traced.write(
        title="Checkout deploy",
        claim="The checkout deploy reads its credentials from the vault.",
        body="Someone will rotate the staging keys before Friday.",
    )

    def respond(call: Any) -> dict[str, Any]:
        if call.tool_name != "trace_consolidation":
            return {}
        # A model that repeats a credential (it saw one, or made one up) in every field.
        return {
            "candidates": [
                {
                    "kind": "procedural",
                    "claim": f"Deploys of the checkout service use the key {aws}.",
                    "gist": "Seen in the session.",
                    "quotes": ["The deploy failed again", "for the deploy of the checkout"],
                }
            ],
            "commitments": [
                {
                    "statement": f"Rotate {aws} before Friday.",
                    "actor": "agent",
                    "quote": "The deploy failed again",
                    "confidence": 0.95,
                }
            ],
        }

    llm = caller(respond)
    night = engine.run(traced, date=DATE, llm=llm, progress=False)
    prompts = [c.prompt + c.system for c in llm.model.calls]
    assert prompts and any("[redacted:" in p for p in prompts)
    assert [leaked(p) for p in prompts if leaked(p)] == []
    phase = next(p for p in night["phases"] if p["phase"] == "trace-consolidation")
    assert phase["status"] == "ok", phase
    assert phase["counts"]["secrets_skipped"] >= 2, phase["counts"]  # the memory and the task
    branch = f"sleep/{night['run_id']}"
    history = subprocess.run(
        ["git", "-C", str(traced.root), "log", "-p", f"HEAD..{branch}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert leaked(history) == []
    assert merge(traced, night["run_id"])["merged"] is True
    out = tmp_path / "site"
    traced.publish(out=str(out))
    pages = "".join(
        p.read_text(errors="replace") for p in out.rglob("*.html") if "vault-note" not in p.name
    )
    assert leaked(pages) == []
