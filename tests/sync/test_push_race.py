"""sync's push races: the remote moves between our fetch and our push.

The interleaving is forced by running another clone's sync inside our fetch
(everything else is real git against a bare remote), so the push is rejected
for the reason it would be in the field: a non-fast-forward.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import memhtml.ops.sync as sync_mod
from memhtml.contracts.errors import RemoteError
from memhtml.ops.sync import MAX_ROUNDS, sync
from tests.sync.conftest import git


def claims(corpus: Any) -> set[str]:
    corpus.sync()
    return {
        str(g)
        for (g,) in corpus.conn.execute(
            "SELECT gist FROM files WHERE archived = 0 AND memory_type <> 'task'"
        )
    }


def interleave(monkeypatch: pytest.MonkeyPatch, meanwhile: Any, times: int) -> list[int]:
    """After each of our first `times` fetches, run `meanwhile()` (another clone pushes)."""
    real = sync_mod._fetch
    calls: list[int] = []

    def fetch(git_: Any, remote: str, branch: str) -> str | None:
        theirs = real(git_, remote, branch)
        calls.append(1)
        if len(calls) <= times:
            meanwhile(len(calls))
        return theirs

    monkeypatch.setattr(sync_mod, "_fetch", fetch)
    return calls


def test_a_push_rejected_because_the_remote_moved_fetches_and_retries(
    clones: Any, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = clones("a"), clones("b")
    a.write(title="Drain first", claim="Drain the VIP before a deploy.")
    b.write(title="Pin versions", claim="Pin every dependency version.")

    def b_pushes(_: int) -> None:
        with monkeypatch.context() as inner:
            inner.setattr(sync_mod, "_fetch", real_fetch)
            sync(b)

    real_fetch = sync_mod._fetch
    calls = interleave(monkeypatch, b_pushes, times=1)
    out = sync(a)
    assert len(calls) == 2  # rejected once, fetched again
    assert out["rounds"] == 2 and out["pushed"] is True
    assert out["received"] == 1 and out["sent"] >= 1
    # the remote holds both writes, and a's head is exactly what it pushed
    assert git(remote, "rev-parse", "main") == a.git.head()
    assert claims(a) == {"Drain the VIP before a deploy.", "Pin every dependency version."}
    monkeypatch.undo()
    sync(b)
    assert claims(b) == claims(a)


def test_a_remote_that_keeps_moving_is_a_typed_error_and_loses_nothing(
    clones: Any, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = clones("a"), clones("b")
    a.write(title="Drain first", claim="Drain the VIP before a deploy.")
    start = a.git.head()
    real_fetch = sync_mod._fetch

    def b_writes_and_pushes(n: int) -> None:
        b.write(title=f"Rule {n}", claim=f"Rule number {n} holds for every deploy.")
        with monkeypatch.context() as inner:
            inner.setattr(sync_mod, "_fetch", real_fetch)
            sync(b)

    interleave(monkeypatch, b_writes_and_pushes, times=MAX_ROUNDS)
    with pytest.raises(RemoteError) as err:
        sync(a)
    assert err.value.details["reason"] == "rejected"
    head = a.git.head()
    assert head is not None and start is not None
    # never behind where it started: our commit is an ancestor of where we ended
    subprocess.run(["git", "merge-base", "--is-ancestor", start, head], cwd=a.root, check=True)
    # and it holds everything it fetched, with its own write still there
    got = claims(a)
    assert "Drain the VIP before a deploy." in got
    assert {f"Rule number {n} holds for every deploy." for n in range(1, MAX_ROUNDS)} <= got
    # once the remote is quiet, a plain sync lands it
    monkeypatch.undo()
    out = sync(a)
    assert out["pushed"] is True
    assert git(remote, "rev-parse", "main") == a.git.head()


def test_a_push_the_remote_refuses_is_not_retried_as_a_race(clones: Any, remote: Path) -> None:
    a = clones("a")
    a.write(title="Drain first", claim="Drain the VIP before a deploy.")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    head = a.git.head()
    with pytest.raises(RemoteError) as err:
        sync(a)
    assert err.value.details["reason"] == "push"
    assert "declined" in err.value.message or "protected" in err.value.message
    assert a.git.head() == head
    assert git(remote, "rev-parse", "main") != head


@pytest.mark.parametrize(
    ("stderr", "raced"),
    [
        # what git 2.39 printed when two pushes to one bare repository crossed
        (" ! [rejected]        HEAD -> main (fetch first)", True),
        (" ! [rejected]        HEAD -> main (non-fast-forward)", True),
        (
            "remote: error: cannot lock ref 'refs/heads/main': is at 8de1ffa but expected e56f34f\n"
            " ! [remote rejected] HEAD -> main (failed to update ref)",
            True,
        ),
        (" ! [remote rejected] HEAD -> main (pre-receive hook declined)", False),
        (" ! [remote rejected] HEAD -> main (protected branch hook declined)", False),
    ],
)
def test_a_push_that_lost_a_race_is_retried_and_a_refusal_is_not(stderr: str, raced: bool) -> None:
    from memhtml.ops.sync import push_raced

    assert push_raced(stderr) is raced
