"""memhtml's own git attributes, in `.git/info/attributes`, where a commit cannot reach them.

Git reads attributes from `.gitattributes` files in the tree (which any commit,
a remote's included, can change) and from `$GIT_DIR/info/attributes`, which
never travels and takes precedence over every `.gitattributes`
(gitattributes(5), "precedence"): an attribute set or unset there wins, per
attribute, over whatever the tree says. The block below pins every attribute
that changes what git stores or merges:

* `-text -crlf -eol`: no end-of-line conversion, whatever `.gitattributes` or
  `core.autocrlf` say, so a blob is exactly the bytes a write door wrote (its id
  is `blob_sha` of them);
* `-working-tree-encoding -ident -filter`: no re-encoding (a remote's
  `working-tree-encoding=UTF-16LE-BOM` made a write commit mojibake), no `$Id$`
  expansion, no clean or smudge filter;
* `merge=text conflict-marker-size=7`, then `*.html merge=memhtml diff=html` and
  the generated listings and memory views `merge=ours`: the merge drivers are memhtml's (a
  remote's `*.html merge=union` merged a real conflict into one file with two
  claims);

Newer git offers `--attr-source`/`GIT_ATTR_SOURCE` (2.40+), which still layers
`info/attributes` on top, and `core.attributesFile`, which ranks below the
tree's files: neither would win on its own. `ensure` writes the block (idempotent,
keeping a person's own lines) and runs before any git command that stores,
checks out or merges content (`Git.pin_attributes`), so a clone made before
this block existed gets it at its first write.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Final

BEGIN: Final = "# memhtml: begin (these lines win over any .gitattributes; see memhtml docs)"
END: Final = "# memhtml: end"
LINES: Final[tuple[str, ...]] = (
    "* -text -crlf -eol -ident -filter -working-tree-encoding merge=text conflict-marker-size=7",
    "*.html merge=memhtml diff=html",
    "index.html merge=ours",
    "sitemap.xml merge=ours",
    "memhtml-view/** merge=ours",  # publish's memory views (memhtml.html.site_parts.VIEW_DIR)
)
BLOCK: Final = "\n".join((BEGIN, *LINES, END)) + "\n"


def info_path(root: Path) -> Path:
    """`info/attributes` of the repository at `root` (a linked worktree: its common dir)."""
    git_dir = root / ".git"
    if git_dir.is_dir():
        return git_dir / "info" / "attributes"
    out = subprocess.run(
        ["git", "rev-parse", "--git-path", "info/attributes"],
        cwd=root,
        capture_output=True,
        check=False,
    ).stdout.decode("utf-8", "surrogateescape")
    path = Path(out.strip() or ".git/info/attributes")
    return path if path.is_absolute() else root / path


def with_block(text: str) -> str:
    """`text` (an info/attributes file) with memhtml's block last and current.

    A person's own lines stay; an older block of ours is replaced. Last, because
    within one file a later line wins.
    """
    kept: list[str] = []
    inside = False
    for line in text.split("\n"):
        if line == BEGIN:
            inside = True
        elif inside and line == END:
            inside = False
        elif not inside:
            kept.append(line)
    head = "\n".join(kept).rstrip("\n")
    return (head + "\n" if head else "") + BLOCK


def ensure(root: Path) -> bool:
    """Write memhtml's block into the repository's info/attributes when it is not there as
    it should be; True when the file was written."""
    path = info_path(root)
    try:
        current = path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        current = ""
    if current.endswith(BLOCK) and current.count(BEGIN) == 1:
        return False
    from memhtml.store.files import write_atomic

    write_atomic(path, with_block(current).encode("utf-8", "surrogateescape"))
    return True
