"""`publish` over real git repositories: commits, no-op reruns, --out, bad input."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from memhtml.contracts.errors import DirtyTreeError, InvalidFlagError, OutInsideRepoError
from memhtml.ops.publish import is_owned, site_artifacts, site_changes
from memhtml.store.git import blob_sha


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _head(root: Path) -> str:
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def seeded(corpus: Any) -> Any:
    corpus.write(title="Alpha", type="semantic", claim="Alpha drains the VIP.", path="areas/a.html")
    corpus.write(
        title="Beta", type="procedural", claim="Beta follows alpha.", path="areas/ops/b.html"
    )
    corpus.link("areas/ops/b.html", "caused_by", "areas/a.html")
    return corpus


def test_publish_commits_the_site_once_and_a_rerun_commits_nothing(seeded: Any) -> None:
    root: Path = seeded.root
    before = _head(root)
    first = seeded.publish()
    assert first["commit_sha"] == _head(root) != before
    # root, areas, areas/ops, a view per memory, sitemap, css
    assert first["artifacts"] == first["written"] == 7
    assert first["paths"] == [
        "areas/index.html",
        "areas/ops/index.html",
        "index.html",
        "memhtml-view/areas/a.html",
        "memhtml-view/areas/ops/b.html",
        "memhtml.css",
        "sitemap.xml",
    ]
    assert _git(root, "status", "--porcelain") == ""
    subject = _git(root, "log", "-1", "--format=%s")
    assert subject == "memhtml(publish): regenerate 7 generated artifacts"
    again = seeded.publish()
    assert again["commit_sha"] is None and again["written"] == 0 and again["paths"] == []
    assert _head(root) == first["commit_sha"]


def test_the_listings_are_never_indexed_and_the_index_stays_fresh(seeded: Any) -> None:
    seeded.publish()
    paths = {p for (p,) in seeded.conn.execute("SELECT path FROM files")}
    assert paths == {"areas/a.html", "areas/ops/b.html"}
    assert seeded.conn.execute("SELECT count(*) FROM skipped_files").fetchone()[0] == 0
    assert seeded.index.status()["index_fresh"] is True
    hits = seeded.search("alpha listing generated memories")
    assert all(not h.path.endswith("index.html") for h in hits.hits)


def test_a_new_memory_rewrites_only_the_listings_it_changes(seeded: Any) -> None:
    seeded.publish()
    seeded.write(title="Gamma", type="semantic", claim="Gamma is new.", path="areas/ops/g.html")
    report = seeded.publish()
    # The directory's listing, its ancestors' counts, the new view, the sitemap; not the
    # stylesheet, nor the views of memories the new one does not link.
    assert report["paths"] == [
        "areas/index.html",
        "areas/ops/index.html",
        "index.html",
        "memhtml-view/areas/ops/g.html",
        "sitemap.xml",
    ]
    assert report["commit_sha"] is not None


def test_an_archived_memory_is_reachable_and_an_emptied_listing_is_removed(seeded: Any) -> None:
    root: Path = seeded.root
    seeded.publish()
    moved = seeded.archive("areas/ops/b.html", reason="stale")["archive_path"]
    report = seeded.publish()
    assert report["removed"] == ["areas/ops/index.html", "memhtml-view/areas/ops/b.html"]
    assert not (root / "areas/ops/index.html").exists()
    assert "areas/ops/index.html" not in _git(root, "ls-files").splitlines()
    assert (root / "memhtml-view" / moved).is_file()
    listing = (root / moved).parent / "index.html"
    page = listing.read_text(encoding="utf-8")
    assert '<li id="b.html" class="archived">' in page
    assert '<span class="status archived">archived</span>' in page
    # archive/ is reachable from the root, down to the archived memory's listing.
    chain = Path(moved).parent.parts
    for depth in range(len(chain)):
        parent = root.joinpath(*chain[:depth], "index.html")
        assert f'href="{chain[depth]}/index.html"' in parent.read_text(encoding="utf-8")


def test_every_generated_href_resolves_to_a_file_in_the_tree(seeded: Any) -> None:
    root: Path = seeded.root
    seeded.archive("areas/a.html")
    seeded.write(
        title="Odd", type="semantic", claim="Odd names work.", path="areas/x y/café #1.html"
    )
    seeded.publish()
    hrefs = 0
    pages = [*root.rglob("index.html"), *(root / "memhtml-view").rglob("*.html")]
    assert len(pages) > 6
    for generated in pages:
        html = generated.read_text(encoding="utf-8")
        ids = set(re.findall(r' id="([^"]*)"', html))
        for url, fragment in re.findall(r'(?:href|src)="([^"#]*)#?([^"]*)"', html):
            assert not url.startswith(("/", "http:", "https:", "file:")), (generated, url)
            if not url:  # a link within the page
                assert fragment in ids, (generated, fragment)
                continue
            assert (generated.parent / unquote(url)).resolve().is_file(), (generated, url)
            hrefs += 1
    assert hrefs > 40


def test_an_unparseable_file_is_listed_as_such_and_never_linked(seeded: Any) -> None:
    root: Path = seeded.root
    (root / "areas/broken.html").write_bytes(b"\x00\xffnot a memory<script>x</script>")
    (root / "areas/empty").mkdir()
    (root / "areas/empty/also-broken.html").write_text("<!doctype html><p>no article</p>")
    _git(root, "add", "areas/broken.html", "areas/empty/also-broken.html")
    _git(root, "commit", "-q", "-m", "hand commit of two broken files")
    report = seeded.publish()
    assert report["unparseable"] == 2
    page = (root / "areas/index.html").read_text(encoding="utf-8")
    assert '<li id="broken.html"><code>broken.html</code>' in page
    assert 'href="broken.html"' not in page
    assert "unparseable" in (root / "areas/empty/index.html").read_text(encoding="utf-8")
    assert "2 unparseable" in (root / "index.html").read_text(encoding="utf-8")


def test_uncommitted_memory_edits_refuse_a_commit_but_not_an_out(
    seeded: Any, tmp_path: Path
) -> None:
    root: Path = seeded.root
    before = _head(root)
    target = root / "areas/a.html"
    target.write_text(target.read_text().replace("Alpha drains", "Alpha fills"))
    with pytest.raises(DirtyTreeError) as caught:
        seeded.publish()
    assert caught.value.details["paths"] == ["areas/a.html"]
    assert _head(root) == before and not (root / "index.html").exists()
    report = seeded.publish(out=tmp_path / "site")
    assert report["commit_sha"] is None and _head(root) == before
    assert "Alpha fills" in (tmp_path / "site/areas/index.html").read_text(encoding="utf-8")


def test_out_writes_the_site_and_the_memories_and_commits_nothing(
    seeded: Any, tmp_path: Path
) -> None:
    root: Path = seeded.root
    before = _head(root)
    out = tmp_path / "site"
    report = seeded.publish(out=out)
    assert report["out"] == str(out.resolve())
    assert report["commit_sha"] is None and _head(root) == before
    assert _git(root, "status", "--porcelain") == ""
    assert report["written"] == report["artifacts"] == 7 and report["copied"] == 2
    assert (out / "areas/ops/b.html").read_bytes() == (root / "areas/ops/b.html").read_bytes()
    assert (out / "memhtml.css").is_file() and (out / "sitemap.xml").is_file()
    assert {p: (out / p).read_bytes() for p in site_artifacts(seeded.conn)} == site_artifacts(
        seeded.conn
    )
    again = seeded.publish(out=out)
    assert again["written"] == 0 and again["copied"] == 0 and again["paths"] == []


@pytest.mark.parametrize("where", [".", "site", "areas/site"])
def test_an_out_inside_the_corpus_is_refused(seeded: Any, where: str) -> None:
    root: Path = seeded.root
    before = _head(root)
    with pytest.raises(OutInsideRepoError) as caught:
        seeded.publish(out=root / where)
    assert caught.value.code == "ERR_OUT_INSIDE_REPO" and caught.value.exit_code == 2
    assert _head(root) == before and not (root / "index.html").exists()


def test_an_out_that_leads_into_the_corpus_through_a_symlink_is_refused(
    seeded: Any, tmp_path: Path
) -> None:
    root: Path = seeded.root
    (tmp_path / "via").symlink_to(root)
    with pytest.raises(OutInsideRepoError):
        seeded.publish(out=tmp_path / "via" / "site")
    out = tmp_path / "site"
    out.mkdir()
    (out / "areas").symlink_to(root / "areas")
    with pytest.raises(OutInsideRepoError):
        seeded.publish(out=out)
    assert not (root / "areas/index.html").exists()


def test_an_out_that_is_a_file_is_refused(seeded: Any, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidFlagError):
        seeded.publish(out=tmp_path / "file")


def test_a_hand_edited_listing_goes_back_without_a_commit(seeded: Any) -> None:
    root: Path = seeded.root
    sha = seeded.publish()["commit_sha"]
    (root / "areas/index.html").write_text("hand edit")
    report = seeded.publish()
    assert report["paths"] == ["areas/index.html"] and report["commit_sha"] is None
    assert _head(root) == sha and _git(root, "status", "--porcelain") == ""


def test_a_users_staged_work_is_neither_committed_nor_touched(seeded: Any) -> None:
    root: Path = seeded.root
    (root / "notes.txt").write_text("mine")
    _git(root, "add", "notes.txt")
    seeded.publish()
    assert "notes.txt" not in _git(root, "show", "--name-only", "--format=", "HEAD")
    assert _git(root, "diff", "--cached", "--name-only") == "notes.txt"


def test_an_empty_corpus_publishes_a_root_listing(corpus: Any) -> None:
    report = corpus.publish()
    assert report["memories"] == 0 and report["artifacts"] == 3
    assert "Memory holds 0 memories." in (corpus.root / "index.html").read_text(encoding="utf-8")


def test_site_changes_writes_what_differs_and_removes_only_owned_stale_listings() -> None:
    artifacts = {"index.html": b"root", "areas/index.html": b"areas"}
    held = {
        "index.html": blob_sha(b"root"),
        "areas/index.html": blob_sha(b"old"),
        "areas/gone/index.html": blob_sha(b"x"),
        "sitemap.xml": blob_sha(b"s"),
    }
    writes, removals = site_changes(artifacts, held)
    assert writes == {"areas/index.html": b"areas"}
    assert removals == ["areas/gone/index.html", "sitemap.xml"]


@pytest.mark.parametrize(
    ("path", "owned"),
    [
        ("index.html", True),
        ("sitemap.xml", True),
        ("memhtml.css", True),
        ("areas/x/index.html", True),
        ("archive/2025/index.html", True),
        ("README.html", False),
        ("areas/x.html", False),
        ("docs/index.html", False),
        ("areas/sitemap.xml", False),
        ("memhtml-view/areas/x.html", True),
        ("memhtml-view/archive/2025/areas/x.html", True),
        ("memhtml-viewer/x.html", False),
        (".memhtml/sleep/2026-01-02.html", False),
    ],
)
def test_what_publish_owns(path: str, owned: bool) -> None:
    assert is_owned(path) is owned


def test_the_fixture_publish_is_reproducible_across_clones(tmp_path: Path) -> None:
    """Two writes of the same fixture publish byte-identical sites (no timestamps, no order)."""
    import memhtml
    from memhtml.eval.fixture import generate_fixture, write_fixture

    trees = []
    for name in ("one", "two"):
        root = tmp_path / name
        write_fixture(generate_fixture(7, 120, "2026-01-01T00:00:00Z"), root)
        with memhtml.open(root, embedder="fake") as c:
            c.publish()
        trees.append(_git(root, "rev-parse", "HEAD^{tree}"))
    assert trees[0] == trees[1]


def test_publish_never_changes_a_memory_file(seeded: Any) -> None:
    """The views live beside the memories: no memory's bytes, blob or content hash move."""
    root: Path = seeded.root
    seeded.archive("areas/a.html")  # archived memories too
    before = _head(root)
    memories = {
        p: (root / p).read_bytes() for p in _git(root, "ls-files", "areas", "archive").split()
    }
    hashes = dict(seeded.conn.execute("SELECT path, content_hash FROM files"))
    report = seeded.publish()
    changed = _git(root, "diff", "--name-only", before, report["commit_sha"]).splitlines()
    assert changed and not set(changed) & set(memories)
    assert all(is_owned(p) for p in changed)
    assert {p: (root / p).read_bytes() for p in memories} == memories
    assert dict(seeded.conn.execute("SELECT path, content_hash FROM files")) == hashes


def test_the_front_page_lists_the_sleep_reports_the_tree_holds(seeded: Any, tmp_path: Path) -> None:
    root: Path = seeded.root
    report = root / ".memhtml" / "sleep" / "2026-01-02.html"
    report.write_text(
        "<!doctype html><title>Sleep run 2026-01-02</title>"
        "<p><mark>2026-01-02 ran 16 phases: 3 committed, 0 failed, 6 skipped.</mark></p>",
        encoding="utf-8",
    )
    _git(root, "add", ".memhtml/sleep/2026-01-02.html")
    _git(root, "commit", "-q", "-m", "a merged sleep run's report")
    seeded.publish()
    front = (root / "index.html").read_text(encoding="utf-8")
    assert (
        '<a href=".memhtml/sleep/2026-01-02.html"><strong>2026-01-02</strong></a>'
        " — ran 16 phases: 3 committed, 0 failed, 6 skipped." in front
    )
    out = tmp_path / "site"
    seeded.publish(out=out)  # a site written elsewhere carries the reports it links
    assert (out / ".memhtml/sleep/2026-01-02.html").read_bytes() == report.read_bytes()


def test_the_views_merge_as_ours_without_touching_gitattributes(seeded: Any) -> None:
    # The views' merge=ours is pinned in .git/info/attributes (memhtml.store.attributes),
    # which never travels: a publish commits no .gitattributes change a remote would refuse.
    root: Path = seeded.root
    before = (root / ".gitattributes").read_bytes()
    first = seeded.publish()
    assert ".gitattributes" not in _git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert (root / ".gitattributes").read_bytes() == before
    got = _git(root, "check-attr", "merge", "--", "memhtml-view/areas/a.html").strip()
    assert got.endswith("merge: ours")
    assert first["commit_sha"] == _head(root)
    assert seeded.publish()["commit_sha"] is None
    assert _git(root, "status", "--porcelain") == ""


def test_a_users_edit_of_gitattributes_is_left_alone(seeded: Any) -> None:
    root: Path = seeded.root
    attributes = root / ".gitattributes"
    attributes.write_text(attributes.read_text() + "*.pdf binary\n")  # uncommitted
    seeded.publish()
    assert ".gitattributes" not in _git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert attributes.read_text().endswith("*.pdf binary\n")
