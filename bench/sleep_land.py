"""What landing a sleep merge in one step costs against `git merge` writing the tree itself.

`sleep merge` used to move main with `git merge --ff-only` / `git merge --no-ff`
(git's checkout writes each file in place; a kill midway leaves a half-written
tree). It now builds the result with plumbing (the tip, or `git merge-tree
--write-tree` + `commit-tree`) and lands it with memhtml.store.land (journal,
atomic files, index entries by blob id, one compare-and-swap). This times only
that step, on copies of one prepared store: a night over the cached synthetic
store (model off, so confidence-decay rewrites every memory's head), and for
the real merge one more write on main. Both ways must leave the same tree and a
clean status.

    python -m bench.sleep_land [--sizes 1000 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import summary, write_result
from bench.stores import fresh_copy

DATE = "2026-03-02"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def _prepare(n: int, where: Path) -> tuple[Path, str]:
    """A store after a night (branch sleep/DATE), main moved by one write; the run id."""
    import memhtml
    from memhtml.sleep import engine

    root = fresh_copy(n, where / "prepared")
    # The copy leaves `.memhtml/` behind, tracked placeholders included: put those back.
    _git(root, "checkout", "--", ".")
    with memhtml.open(root, embedder="off", now=f"{DATE}T10:00:00Z") as corpus:
        corpus.index.rebuild(embed=False)
        night = engine.run(corpus, date=DATE, llm="off", progress=False)
        corpus.write(title="Meanwhile", claim="Main took a write while the night waited.")
    return root, str(night["run_id"])


def _ours(root: Path, run_id: str, real_merge: bool) -> float:
    from memhtml.store.git import Git
    from memhtml.store.land import commit_tree, land, merge_tree

    git = Git(root)
    head = git.head()
    assert head is not None
    tip = _git(root, "rev-parse", f"sleep/{run_id}")
    started = time.perf_counter()
    if real_merge:
        tree, conflicts = merge_tree(git, head, tip)
        assert not conflicts
        target = commit_tree(git, tree, [head, tip], f"memhtml(sleep): merge run {run_id}\n")
    else:
        target = tip
    land(git, root, head, target, f"memhtml(sleep): land {run_id}")
    return (time.perf_counter() - started) * 1000


def _porcelain(root: Path, run_id: str, real_merge: bool) -> float:
    args = ["--no-ff", "--no-edit", "-m", f"merge {run_id}"] if real_merge else ["--ff-only"]
    started = time.perf_counter()
    _git(root, "merge", "--quiet", *args, f"sleep/{run_id}")
    return (time.perf_counter() - started) * 1000


def _size(n: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memhtml-bench-land-") as tmp:
        where = Path(tmp)
        prepared, run_id = _prepare(n, where)
        ff_base = where / "ff-base"  # the fast-forward case: main as the night found it
        shutil.copytree(prepared, ff_base, symlinks=True)
        _git(ff_base, "reset", "-q", "--hard", "HEAD~1")
        changed = len(_git(prepared, "diff", "--name-only", "HEAD", f"sleep/{run_id}").split())
        out: dict[str, Any] = {"memories": n, "files_changed": changed}
        for case, base, real in (("fast-forward", ff_base, False), ("merge", prepared, True)):
            times: dict[str, list[float]] = {"land": [], "git_merge": []}
            trees = set()
            for k in range(repeat):
                for how, fn in (("land", _ours), ("git_merge", _porcelain)):
                    root = where / f"{case}-{how}-{k}"
                    shutil.copytree(base, root, symlinks=True)
                    times[how].append(fn(root, run_id, real))
                    assert _git(root, "status", "--porcelain", "--untracked-files=all") == ""
                    trees.add(_git(root, "rev-parse", "HEAD^{tree}"))
                    shutil.rmtree(root)
            assert len(trees) == 1, f"{case}: the two ways landed different trees"
            out[case] = {how: summary(ts) for how, ts in times.items()}
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("MEMHTML_LLM", "off")
    results = [_size(n, args.repeat) for n in args.sizes]
    write_result(
        "sleep_land",
        {
            "setup": "cached synthetic store, a night with the model off (every memory's head"
            " rewritten), one write on main for the real merge; times in ms of the landing"
            " step only (build + write the tree + move main), each on a fresh copy",
            "repeat": args.repeat,
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
