"""`index migrate` end to end: a fake-embedder store moves to the OpenAI-compatible stand-in.

Real parts throughout: a git memory root, the shipped migrations, the CLI in a
subprocess where a kill matters, and the stand-in on 127.0.0.1 at the network edge.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memhtml
from bench.embed_standin import StandIn
from memhtml.contracts.errors import (
    DiscriminationFailedError,
    EmbedContractError,
    EmbedModelMismatchError,
    InvalidFlagError,
    ModelUnavailableError,
    WriteConflictError,
)
from memhtml.embed import registry
from memhtml.eval.embedders import gate_verdict
from memhtml.ops.migrate import LOCK_NAME, migrate
from memhtml.store.lock import RepoLock

NEW_SPACE = "openai:stand-in-embed@384"
OLD_SPACE = "memhtml-fake-v1@384"
TOPICS = ("pool", "deploy", "cache", "replica", "backup", "canary", "queue")


def claim(i: int) -> str:
    return f"Service {i} drains the {TOPICS[i % 7]} {i % 13} times before the deploy window {i}."


def fill(root: Path, n: int, start: int = 0) -> None:
    c = memhtml.open(root, embedder="fake")
    try:
        ops = [
            {
                "op": "write",
                "type": "semantic",
                "title": f"fact {i}",
                "claim": claim(i),
                "path": f"areas/facts/f{i}.html",
            }
            for i in range(start, start + n)
        ]
        assert c.apply(ops).failure is None
    finally:
        c.close()


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    with StandIn() as server:
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("MEMHTML_EMBED_RETRIES", "0")
        monkeypatch.setenv("MEMHTML_EMBED_BATCH", "8")  # pages of 8: a fault lands mid-way
        registry.clear_cache()
        yield server
        registry.clear_cache()


def run(root: Path, **kw: Any) -> dict[str, Any]:
    c = memhtml.open(root, embedder="fake")
    try:
        return migrate(c, gate=gate_verdict, progress=False, **kw)
    finally:
        c.close()


def state(root: Path) -> dict[str, Any]:
    c = memhtml.open(root, embedder="fake")
    try:
        conn = c.conn
        model, dim, epoch = conn.execute(
            "SELECT embed_model, embed_dim, vector_epoch FROM index_state"
        ).fetchone()
        return {
            "space": f"{model}@{dim}",
            "epoch": epoch,
            "embeddings": conn.execute("SELECT count(*) FROM embeddings").fetchone()[0],
            "models": {r[0] for r in conn.execute("SELECT DISTINCT model FROM embeddings")},
            "chunks": conn.execute("SELECT count(DISTINCT chunk_id) FROM chunks").fetchone()[0],
            "pending": conn.execute("SELECT count(*) FROM pending_vectors").fetchone()[0],
            "staged": conn.execute("SELECT count(*) FROM space_vectors").fetchone()[0],
        }
    finally:
        c.close()


def search(root: Path, embedder: str, query: str = "drains the cache before the deploy") -> Any:
    c = memhtml.open(root, embedder=embedder)
    try:
        return c.search(query, limit=5, explain=True)
    finally:
        c.close()


def assert_vector_search(root: Path, embedder: str) -> None:
    result = search(root, embedder)
    assert not result.degraded, result.degraded_reason
    assert "vector" in result.arms and result.hits
    assert any("vector" in (h.arms or {}) for h in result.hits)


def cli(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "MEMHTML_ROOT": str(root), "MEMHTML_EMBED": "fake"},
        check=False,
    )


def test_a_migration_switches_and_the_old_embedder_is_told_why(repo, standin):
    fill(repo, 40)
    before = state(repo)
    out = run(repo, to="openai")
    assert out["mode"] == "switched" and (out["from"], out["to"]) == (OLD_SPACE, NEW_SPACE)
    assert out["embedded"] == 40 and out["gate"]["passed"] is True
    after = state(repo)
    assert after["space"] == NEW_SPACE and after["epoch"] != before["epoch"]
    assert after["embeddings"] == 40 and after["models"] == {"openai:stand-in-embed"}
    assert after["pending"] == 0 and after["staged"] == 0  # the old space left with the switch
    assert_vector_search(repo, "openai")
    degraded = search(repo, "fake")
    assert degraded.degraded and "migrated from memhtml-fake-v1@384" in degraded.degraded_reason
    c = memhtml.open(repo, embedder="fake")
    try:
        with pytest.raises(EmbedModelMismatchError) as info:
            c.write(type="semantic", title="late", claim="A fact written under the old model.")
        assert "memhtml index migrate --to openai" in info.value.message
        assert any("MEMHTML_EMBED=openai" in s for s in info.value.suggestions)
    finally:
        c.close()
    assert run(repo, to="openai")["mode"] == "noop"
    c = memhtml.open(repo, embedder="fake")
    try:
        vector_space = c.index.status()["vector_space"]
    finally:
        c.close()
    assert not vector_space["matches"] and "migrated from" in vector_space["mismatch"]


def test_a_terminal_is_told_the_estimate_first(repo, standin, capsys):
    fill(repo, 9)
    c = memhtml.open(repo, embedder="fake")
    try:
        migrate(c, to="openai", gate=gate_verdict, progress=True)
    finally:
        c.close()
    err = capsys.readouterr().err
    assert f"migrating to {NEW_SPACE}: 9 chunks of 9 memories to embed" in err
    assert "tokens estimated" in err


def test_status_gives_an_estimate_before_anything_is_embedded(repo, standin):
    fill(repo, 12)
    out = run(repo, status=True, to="openai")
    assert out["migration"] is None and out["target"]["space"] == NEW_SPACE
    est = out["estimate"]
    assert (est["chunks_missing"], est["memories_missing"], est["chunks_covered"]) == (12, 12, 0)
    assert est["tokens_estimate"] > 12 * 10
    assert standin.documents == 0


def test_killed_part_way_it_resumes_and_search_never_degrades(repo, standin):
    """The issue's first "must show": 400 memories, SIGKILL mid-way, --resume."""
    fill(repo, 400)
    store_texts = {claim(i) for i in range(400)}
    standin.delay_s = 0.05
    env = {**standin.environment(), "MEMHTML_EMBED_BATCH": "16", "MEMHTML_EMBED_RETRIES": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memhtml.cli", "index", "migrate", "--to", "openai", "--json"],
        env={**os.environ, **env, "MEMHTML_ROOT": str(repo), "MEMHTML_EMBED": "fake"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    searched = False
    while standin.documents < 160 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
        if standin.documents >= 48 and not searched:  # while it runs, the old space answers
            assert_vector_search(repo, "fake")
            searched = True
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    seen_before_kill = standin.documents
    assert 160 <= seen_before_kill < 400
    assert searched
    mid = state(repo)
    assert mid["space"] == OLD_SPACE and mid["embeddings"] == 400 and mid["pending"] == 0
    assert 0 < mid["staged"] <= seen_before_kill
    assert_vector_search(repo, "fake")
    status = json.loads(cli(repo, "index", "migrate", "--status", env=env).stdout)["data"]
    assert status["migration"]["state"] == "building" and status["running"] is False
    assert status["estimate"]["chunks_covered"] == mid["staged"]

    standin.delay_s = 0.0
    done = cli(repo, "index", "migrate", "--resume", env=env)
    data = json.loads(done.stdout)["data"]
    assert data["mode"] == "switched" and data["reused"] == mid["staged"]
    assert data["migration"]["runs"] == 2 and data["embedded_total"] == 400
    sent = sum(standin.seen[t] for t in store_texts)
    assert sent <= 1.2 * 400  # each memory about once, the page in flight at the kill twice
    assert all(standin.seen[t] >= 1 for t in store_texts)
    after = state(repo)
    assert after["space"] == NEW_SPACE and after["embeddings"] == 400 and after["pending"] == 0
    assert_vector_search(repo, "openai")


def test_a_planted_gate_regression_blocks_the_switch(repo, standin):
    """The issue's second "must show"."""
    fill(repo, 30)
    standin.fault, standin.fault_after = "regress", 30  # the store embeds fine, the gate not
    with pytest.raises(DiscriminationFailedError) as info:
        run(repo, to="openai")
    verdict = info.value.details
    assert verdict["passed"] is False and verdict["new"]["passed"] is False
    assert verdict["old"]["passed"] is True  # the fake embedder passes: a regression
    assert any("--skip-gate" in s for s in info.value.suggestions)
    mid = state(repo)
    assert mid["space"] == OLD_SPACE and mid["embeddings"] == 30 and mid["staged"] == 30
    assert_vector_search(repo, "fake")
    status = run(repo, status=True)
    assert status["migration"]["state"] == "gate_failed"
    assert "ERR_DISCRIMINATION_FAILED" in status["migration"]["last_error"]
    documents = standin.documents
    out = run(repo, resume=True, skip_gate=True)
    assert out["mode"] == "switched" and out["gate"] == {"skipped": True}
    assert standin.documents == documents  # nothing embedded twice
    assert state(repo)["space"] == NEW_SPACE


def test_memories_written_during_the_migration_are_in_the_new_space(repo, standin):
    fill(repo, 20)
    writes: list[int] = []

    def write_meanwhile(server: StandIn) -> None:
        # After the first page (during the build), and once the gate's fixture is being
        # embedded (after the build passes, before the switch): another process writes.
        due = (server.documents >= 1 and not writes) or (
            server.documents >= 60 and len(writes) == 1
        )
        if due:
            writes.append(server.documents)
            i = 1000 + len(writes)
            done = cli(
                repo,
                "write",
                "--type",
                "semantic",
                "--title",
                f"late {i}",
                "--claim",
                claim(i),
                env={},
            )
            assert json.loads(done.stdout)["ok"], done.stdout

    standin.hook = write_meanwhile
    out = run(repo, to="openai")
    assert len(writes) == 2 and out["mode"] == "switched"
    after = state(repo)
    assert after["chunks"] == 22 and after["embeddings"] == 22 and after["pending"] == 0
    assert {claim(1001), claim(1002)} <= set(standin.seen)
    assert_vector_search(repo, "openai")


@pytest.mark.parametrize(
    ("fault", "error", "code"),
    [
        ("dim", EmbedContractError, "ERR_EMBED_CONTRACT"),
        ("nan", EmbedContractError, "ERR_EMBED_CONTRACT"),
        ("rows", EmbedContractError, "ERR_EMBED_CONTRACT"),
        ("html", EmbedContractError, "ERR_EMBED_CONTRACT"),
        ("401", ModelUnavailableError, "ERR_MODEL_UNAVAILABLE"),
        ("hang", ModelUnavailableError, "ERR_MODEL_UNAVAILABLE"),
    ],
)
def test_a_bad_endpoint_pauses_the_migration_and_loses_nothing(
    repo, standin, monkeypatch, fault, error, code
):
    fill(repo, 40)
    monkeypatch.setenv("MEMHTML_EMBED_BATCH", "8")
    monkeypatch.setenv("MEMHTML_EMBED_TIMEOUT", "0.3")
    registry.clear_cache()
    before = state(repo)
    standin.fault, standin.fault_after, standin.hang_s = fault, 16, 1.0
    with pytest.raises(error) as info:
        run(repo, to="openai")
    assert info.value.code == code
    assert any("--resume" in s for s in info.value.suggestions)
    mid = state(repo)
    assert {k: mid[k] for k in ("space", "epoch", "embeddings", "pending")} == {
        k: before[k] for k in ("space", "epoch", "embeddings", "pending")
    }
    assert mid["staged"] == 16  # the pages before the fault, and nothing of the bad one
    assert_vector_search(repo, "fake")
    record = run(repo, status=True)["migration"]
    assert record["state"] == "building" and record["last_error"].startswith(code)
    standin.fault = None
    standin.reset_counts()
    out = run(repo, resume=True)
    assert out["mode"] == "switched" and out["reused"] == 16
    assert sum(standin.seen[claim(i)] for i in range(40)) == 24
    assert state(repo)["space"] == NEW_SPACE


def test_one_migration_at_a_time(repo, standin):
    fill(repo, 5)
    with (
        RepoLock(repo / ".git" / LOCK_NAME).hold(timeout=0),
        pytest.raises(WriteConflictError) as info,
    ):
        run(repo, to="openai")
    assert "another `memhtml index migrate` is running" in info.value.message
    assert standin.documents == 0


def test_abort_drops_the_new_space_and_the_old_one_stays(repo, standin):
    fill(repo, 20)
    standin.fault, standin.fault_after = "500", 8
    with pytest.raises(ModelUnavailableError):
        run(repo, to="openai")
    assert state(repo)["staged"] > 0
    with pytest.raises(InvalidFlagError):
        run(repo, to="local")  # another target while one is open
    out = run(repo, abort=True)
    assert out["mode"] == "aborted" and out["dropped_vectors"] > 0
    after = state(repo)
    assert after["staged"] == 0 and after["space"] == OLD_SPACE and after["embeddings"] == 20
    with pytest.raises(InvalidFlagError):
        run(repo, resume=True)


def test_resume_refuses_an_endpoint_that_changed_its_space(repo, standin, monkeypatch):
    fill(repo, 20)
    standin.fault, standin.fault_after = "500", 8
    with pytest.raises(ModelUnavailableError):
        run(repo, to="openai")
    monkeypatch.setenv("MEMHTML_EMBED_DIM", "256")
    registry.clear_cache()
    standin.fault = None
    with pytest.raises(EmbedModelMismatchError) as info:
        run(repo, resume=True)
    assert NEW_SPACE in info.value.message and "openai:stand-in-embed@256" in info.value.message


def test_keep_old_makes_the_rollback_embed_nothing(repo, standin):
    fill(repo, 25)
    run(repo, to="openai", keep_old=True)
    after = state(repo)
    assert after["space"] == NEW_SPACE and after["staged"] == 25  # the fake space, parked
    status = run(repo, status=True)
    assert status["kept"] == [
        {"space": OLD_SPACE, "model": "memhtml-fake-v1", "dim": 384, "vectors": 25}
    ]
    c = memhtml.open(repo, embedder="openai")
    try:
        back = migrate(c, to="fake", gate=gate_verdict, progress=False)
    finally:
        c.close()
    assert back["mode"] == "switched" and back["embedded"] == 0 and back["reused"] == 25
    rolled = state(repo)
    assert rolled["space"] == OLD_SPACE and rolled["staged"] == 0 and rolled["pending"] == 0
    assert_vector_search(repo, "fake")


def test_drop_old_frees_a_kept_space(repo, standin):
    fill(repo, 10)
    run(repo, to="openai", keep_old=True)
    c = memhtml.open(repo, embedder="openai")
    try:
        out = migrate(c, drop_old=True)
    finally:
        c.close()
    assert [d["space"] for d in out["dropped"]] == [OLD_SPACE]
    assert state(repo)["staged"] == 0


def test_flags_that_do_not_go_together_are_refused(repo, standin):
    fill(repo, 3)
    for kw in ({}, {"abort": True, "to": "openai"}, {"drop_old": True, "resume": True}):
        with pytest.raises(InvalidFlagError):
            run(repo, **kw)
    with pytest.raises(InvalidFlagError):
        run(repo, to="off")
    c = memhtml.open(repo, embedder="fake")
    try:
        with pytest.raises(InvalidFlagError):  # no gate given: only --skip-gate may switch
            migrate(c, to="openai", progress=False)
    finally:
        c.close()


def test_the_cli_reports_a_paused_migration_as_a_typed_failure(repo, standin):
    fill(repo, 10)
    standin.fault = "401"
    done = cli(repo, "index", "migrate", "--to", "openai", env=standin.environment())
    envelope = json.loads(done.stdout)
    assert done.returncode == 1 and envelope["code"] == "ERR_MODEL_UNAVAILABLE"
    assert "MEMHTML_EMBED_API_KEY" in envelope["error"]
    assert any("--resume" in s for s in envelope["suggestions"])
