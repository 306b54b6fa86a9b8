"""A git merge driver for memory files: head-only edits merge without conflict markers.

Registered by `memhtml init` for `*.html`. Git calls it with the ancestor,
ours and theirs versions (%O %A %B) and expects the merged result written to
%A, exit 0 when clean and non-zero when a conflict remains.

- When only one side changed the article (everything but the head's memhtml
  metas and links), that side's article wins; when both changed it
  differently, the file is a real conflict and gets git's own markers.
- Head metas and links merge as a three-way set merge: additions and removals
  from both sides apply. A scalar meta changed differently on both sides takes
  the later value for datetimes (memhtml-updated, ...) and is a real conflict
  otherwise. The advisory content hash follows the article that won.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from memhtml.contracts.vocab import DATETIME_METAS, SCALAR_METAS, normalize_rel

HASH_META = "memhtml-content-hash"


def _split(text: str) -> tuple[dict[str, str], set[str], set[tuple[str, str]], str]:
    """(scalar metas, repeatable 'name=value' keys, links (rel, path), the rest of the file)."""
    from memhtml.html import head_items

    scalars: dict[str, str] = {}
    repeatables: set[str] = set()
    links: set[tuple[str, str]] = set()
    rest = text
    for item in head_items(text):
        rest = rest.replace(item.line, "", 1)
        if item.kind == "link":
            token, _, href = item.key.partition(" ")
            rel = normalize_rel(token)
            if rel is not None and href.startswith("/"):
                links.add((rel, href[1:]))
        elif item.key in SCALAR_METAS:
            scalars[item.key] = item.value
        else:
            repeatables.add(item.key)
    return scalars, repeatables, links, rest


def _merge_sets(base: set[str] | set[tuple[str, str]], ours, theirs):  # type: ignore[no-untyped-def]
    return (base | (ours - base) | (theirs - base)) - (base - ours) - (base - theirs)


def merge_texts(base: str, ours: str, theirs: str) -> str | None:
    """The merged file, or None when a real conflict remains."""
    from memhtml.html import add_link, add_meta, remove_link, remove_meta, set_meta

    b_s, b_r, b_l, b_rest = _split(base)
    o_s, o_r, o_l, o_rest = _split(ours)
    t_s, t_r, t_l, t_rest = _split(theirs)
    if t_rest in (o_rest, b_rest):
        start, article_side = ours, o_s
    elif o_rest == b_rest:
        start, article_side = theirs, t_s
    else:
        return None
    merged_scalars: dict[str, str] = {}
    for name in set(b_s) | set(o_s) | set(t_s):
        bv, ov, tv = b_s.get(name), o_s.get(name), t_s.get(name)
        if name == HASH_META:
            value = article_side.get(name)
        elif tv in (ov, bv):
            value = ov
        elif ov == bv:
            value = tv
        elif name in DATETIME_METAS and ov is not None and tv is not None:
            value = max(ov, tv)
        else:
            return None
        if value is not None:
            merged_scalars[name] = value
    merged_rep = _merge_sets(b_r, o_r, t_r)
    merged_links = _merge_sets(b_l, o_l, t_l)

    text = start
    cur_s, cur_r, cur_l, _ = _split(text)
    for name in sorted(set(cur_s) | set(merged_scalars)):
        if cur_s.get(name) != merged_scalars.get(name):
            text = set_meta(text, name, merged_scalars.get(name))
    for key in sorted(cur_r - merged_rep):
        name, _, value = key.partition("=")
        text = remove_meta(text, name, value)
    for key in sorted(merged_rep - cur_r):
        name, _, value = key.partition("=")
        text = add_meta(text, name, value)
    for rel, path in sorted(cur_l - merged_links):
        text = remove_link(text, rel, path)
    for rel, path in sorted(merged_links - cur_l):
        text = add_link(text, rel, path)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """git calls: <driver> %O %A %B %P. Writes the result to %A."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3:
        print("usage: python -m memhtml.store.mergedriver BASE OURS THEIRS [PATH]", file=sys.stderr)
        return 2
    base_p, ours_p, theirs_p = (Path(a) for a in args[:3])
    try:
        merged = merge_texts(
            base_p.read_text(encoding="utf-8"),
            ours_p.read_text(encoding="utf-8"),
            theirs_p.read_text(encoding="utf-8"),
        )
    except Exception as exc:  # a driver must never leave git without an answer
        print(f"memhtml merge driver: falling back to a line merge ({exc})", file=sys.stderr)
        merged = None
    if merged is not None:
        ours_p.write_text(merged, encoding="utf-8")
        return 0
    # A real conflict: git's own line merge with markers, written to ours.
    proc = subprocess.run(
        [
            "git",
            "merge-file",
            "-L",
            "ours",
            "-L",
            "base",
            "-L",
            "theirs",
            str(ours_p),
            str(base_p),
            str(theirs_p),
        ],
        check=False,
    )
    return 1 if proc.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
