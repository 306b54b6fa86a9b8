"""Archive and correct keep the graph whole; `doctor --fix` repairs what hands broke (§3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .conftest import git


def _links(corpus: Any, path: str) -> list[tuple[str, str]]:
    return [(x["rel"], x["path"]) for x in corpus.read(path, bump=False)["links"]]


def test_correct_carries_the_originals_authored_links(corpus: Any) -> None:
    other = corpus.write(title="other", claim="The other fact.")["path"]
    person = corpus.write(
        title="Ada", claim="Ada runs the ops rota.", path="resources/people/ada.html"
    )["path"]
    fact = corpus.write(title="fact", claim="The limit is 10.")["path"]
    corpus.link(fact, "relates_to", other)
    corpus.link(fact, "about_person", person)
    out = corpus.correct(fact, claim="The limit is 20.")
    links = _links(corpus, out["path"])
    assert ("relates_to", other) in links
    assert ("about_person", person) in links
    assert ("supersedes", out["archive_path"]) in links


def test_archive_relinks_inbound_links_and_stays_healthy(corpus: Any) -> None:
    a = corpus.write(title="a", claim="Fact a.")["path"]
    b = corpus.write(title="b", claim="Fact b.")["path"]
    corpus.link(a, "relates_to", b)
    assert corpus.health()["healthy"]
    moved = corpus.archive(b)
    assert moved["relinked"] == [
        {"src_path": a, "rel": "relates_to", "from": b, "to": moved["archive_path"]}
    ]
    assert _links(corpus, a) == [("relates_to", moved["archive_path"])]
    health = corpus.health()
    assert health["healthy"], health


def test_correct_relinks_inbound_links_to_the_replacement(corpus: Any) -> None:
    a = corpus.write(title="a", claim="Fact a.")["path"]
    b = corpus.write(title="b", claim="The port is 8080.")["path"]
    corpus.link(a, "relates_to", b)
    out = corpus.correct(b, claim="The port is 9090.")
    assert _links(corpus, a) == [("relates_to", out["path"])]
    assert corpus.health()["healthy"]


def test_link_then_archive_in_one_batch_relinks(corpus: Any) -> None:
    a = corpus.write(title="a", claim="Fact a.")["path"]
    b = corpus.write(title="b", claim="Fact b.")["path"]
    outcome = corpus.apply(
        [
            {"op": "link", "src": a, "rel": "relates_to", "dst": b},
            {"op": "archive", "path": b},
        ]
    )
    archived = outcome.results[1]["archive_path"]
    assert _links(corpus, a) == [("relates_to", archived)]
    assert corpus.health()["dangling"] == []


def test_dirty_inbound_source_is_left_and_reported(corpus: Any, repo: Path) -> None:
    a = corpus.write(title="a", claim="Fact a.")["path"]
    b = corpus.write(title="b", claim="Fact b.")["path"]
    corpus.link(a, "relates_to", b)
    (repo / a).write_text((repo / a).read_text() + "\n")  # an uncommitted edit of the source
    out = corpus.archive(b)
    assert out["relinked"] == [] and out["links_left"][0]["src_path"] == a
    assert git(repo, "diff", "--name-only").split() == [a]  # the user's edit is untouched


def test_access_rows_move_with_their_memory(corpus: Any) -> None:
    a = corpus.write(title="a", claim="Fact a.")["path"]
    corpus.read(a)
    moved = corpus.archive(a)["archive_path"]
    rows = dict(corpus.conn.execute("SELECT path, access_count FROM state.access").fetchall())
    assert rows == {moved: 1}
    assert corpus.health()["orphan_access_rows"] == []


def test_doctor_fix_repairs_hand_made_damage_in_one_commit(corpus: Any, repo: Path) -> None:
    a = corpus.write(title="a", claim="Fact a.")["path"]
    b = corpus.write(title="b", claim="Fact b.")["path"]
    c = corpus.write(title="c", claim="Fact c.")["path"]
    corpus.link(a, "relates_to", b)
    corpus.link(a, "supports", c)
    corpus.read(b)
    # By hand: archive b with git mv (no relinking, access rows left behind) ...
    (repo / "archive" / "2020" / "areas" / "inbox").mkdir(parents=True)
    git(repo, "mv", b, f"archive/2020/{b}")
    git(repo, "commit", "-qm", "archived by hand")
    # ... and a link to a path nothing ever held.
    text = (repo / a).read_text()
    (repo / a).write_text(
        text.replace(
            "</head>", '<link rel="memhtml-supports" href="/areas/inbox/nope.html">\n</head>'
        )
    )
    git(repo, "commit", "-qam", "bad link by hand")
    # A rebuild (not an update) sees no move: b's usage rows are orphaned.
    corpus.index.rebuild()
    health = corpus.health()
    assert not health["healthy"] and health["repairable"]
    assert {d["dst_path"] for d in health["dangling"]} == {b, "areas/inbox/nope.html"}

    head_before = git(repo, "rev-parse", "HEAD").strip()
    report = corpus.fix()
    assert [(r["from"], r["to"]) for r in report["relinked"]] == [(b, f"archive/2020/{b}")]
    assert [x["from"] for x in report["links_left"]] == ["areas/inbox/nope.html"]
    assert report["access_moved"] == [{"from": b, "to": f"archive/2020/{b}"}]
    assert git(repo, "rev-list", "--count", f"{head_before}..HEAD").strip() == "1"
    after = corpus.health()
    assert [d["dst_path"] for d in after["dangling"]] == ["areas/inbox/nope.html"]
    assert after["orphan_access_rows"] == []
    # A second run has nothing left to do and commits nothing.
    again = corpus.fix()
    assert again["relinked"] == [] and again["commit_sha"] is None


def test_doctor_reports_path_reuse_in_history(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="x", claim="First fact.")["path"]
    git(repo, "rm", "-q", path)
    git(repo, "commit", "-qm", "gone")
    text = corpus.read(corpus.write(title="y", claim="Second fact.")["path"], bump=False)
    # Reuse the path by hand with a different memory.
    (repo / path).write_text((repo / text["path"]).read_text())
    git(repo, "add", path)
    git(repo, "commit", "-qm", "reuse by hand")
    reuse = corpus.health()["path_reuse"]
    assert [r["path"] for r in reuse] == [path]
