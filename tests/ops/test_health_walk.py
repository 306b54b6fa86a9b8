"""doctor walks the memory folders once (memhtml.ops.health): what it reads and reports."""

from __future__ import annotations

import os
from typing import Any


def test_one_walk_finds_memories_and_unseen_files_and_follows_no_link(corpus: Any, repo) -> None:
    kept = corpus.write(title="walk one", claim="The walk reads this memory.")
    folder = repo / "areas" / "walk"
    folder.mkdir(parents=True)
    (folder / "odd.html").mkdir()  # a folder named like a memory: not a file to read
    (folder / "Loud.HTML").write_text("<p>not read</p>")
    (folder / "broken.html").write_text("<html>no head</html>")
    os.symlink(repo / "areas" / "inbox", folder / "linked")  # not followed: no duplicate
    report = corpus.health()
    assert [u["path"] for u in report["unseen"]] == ["areas/walk/Loud.HTML"]
    assert [u["path"] for u in report["unparseable"]] == ["areas/walk/broken.html"]
    assert kept["path"].startswith("areas/inbox/")
    assert not any("linked" in u["path"] for u in report["unparseable"] + report["unseen"])
