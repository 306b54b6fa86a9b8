"""A path is an identity: a path any memory ever held is never handed to another (§2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .conftest import git


def test_archived_path_is_not_reused_by_a_new_write(corpus: Any) -> None:
    old = corpus.write(title="deploy window", claim="Deploys happen on Tuesdays.")["path"]
    assert old == "areas/inbox/deploy-window.html"
    archived = corpus.archive(old)["archive_path"]
    new = corpus.write(title="deploy window", claim="The window is two hours long.")["path"]
    assert new != old
    resolved = corpus.resolve(old)
    assert resolved["live"] is False
    assert resolved["resolved"] == archived


def test_correction_chains_never_loop(corpus: Any) -> None:
    first = corpus.write(title="fact", claim="The limit is 10.")["path"]
    second = corpus.correct(first, claim="The limit is 20.")["path"]
    third = corpus.correct(second, claim="The limit is 30.")["path"]
    assert len({first, second, third}) == 3
    chain = corpus.resolve(first)
    assert chain["live"] is True and chain["resolved"] == third
    hops = [step["to"] for step in chain["chain"]]
    assert len(hops) == len(set(hops))


def test_explicit_path_of_a_retired_memory_gets_a_suffix(corpus: Any) -> None:
    old = corpus.write(title="x", claim="One.", path="areas/ops/x.html")["path"]
    corpus.archive(old)
    again = corpus.write(title="x", claim="Two.", path="areas/ops/x.html")["path"]
    assert again == "areas/ops/x-2.html"


def test_hand_deleted_path_is_retired(corpus: Any, repo: Path) -> None:
    old = corpus.write(title="gone", claim="This fact was deleted by hand.")["path"]
    git(repo, "rm", "-q", old)
    git(repo, "commit", "-qm", "delete by hand")
    assert corpus.write(title="gone", claim="An unrelated fact.")["path"] != old


def test_uncommitted_deletion_does_not_free_the_path(corpus: Any, repo: Path) -> None:
    old = corpus.write(title="held", claim="HEAD still holds this.")["path"]
    (repo / old).unlink()
    assert corpus.write(title="held", claim="A different fact.")["path"] != old


def test_rebuilt_index_still_knows_retired_paths(corpus: Any, repo: Path) -> None:
    old = corpus.write(title="moved", claim="Moved by hand.")["path"]
    git(repo, "mv", old, "areas/inbox/elsewhere.html")
    git(repo, "commit", "-qm", "move by hand")
    corpus.index.rebuild()
    assert corpus.write(title="moved", claim="Another fact.")["path"] != old


def test_a_git_repository_that_was_never_initialised_is_refused(tmp_path: Path) -> None:
    import pytest

    import memhtml
    from memhtml.contracts.errors import RepoRequiredError

    code_repo = tmp_path / "code"
    code_repo.mkdir()
    git(code_repo, "init", "-q")
    with pytest.raises(RepoRequiredError) as err:
        memhtml.open(code_repo, embedder="fake")
    assert "memhtml init" in err.value.suggestions[0]
    assert not (code_repo / ".memhtml").exists()
    assert not (code_repo / "areas").exists()
