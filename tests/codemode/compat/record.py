"""Re-record what the original memhtml's guest answers over the compatibility tree.

    python -m tests.codemode.compat.record [path/to/original.sh]

Builds the tree (`tree/`, symbolic link included) into a fresh git repository,
runs `probe.mjs` with the original's `memhtml exec` (default
/work/shared/tools/original.sh: the published 0.15.1 build, from npm) and
writes its stdout to `original.json` beside this file, with the tree's id and the
version. tests/codemode/test_compat.py runs the same probe with ours over a
commit of the same tree (it checks the tree id) and compares.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE / "tree"
PROBE = HERE / "probe.mjs"
RECORDED = HERE / "original.json"
ORIGINAL = Path("/work/shared/tools/original.sh")
IDENTITY = {
    "GIT_AUTHOR_NAME": "compat",
    "GIT_AUTHOR_EMAIL": "compat@localhost",
    "GIT_COMMITTER_NAME": "compat",
    "GIT_COMMITTER_EMAIL": "compat@localhost",
    "GIT_AUTHOR_DATE": "2026-12-05T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-12-05T00:00:00Z",
}


def build(root: Path) -> str:
    """`tree/` as the first commit of a new repository at `root`; the commit's tree id."""
    shutil.copytree(TREE, root, symlinks=True)
    env = {**os.environ, **IDENTITY}

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    git("init", "-q", "--initial-branch=main")
    git("add", "-A")
    git("commit", "-q", "--no-verify", "-m", "compat tree")
    return git("rev-parse", "HEAD^{tree}")


def main(original: Path = ORIGINAL) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        tree = build(root)
        env = {**os.environ, "MEMHTML_ROOT": str(root)}
        manifest = subprocess.run(
            [str(original), "manifest"], env=env, capture_output=True, text=True, check=True
        ).stdout
        version = "memhtml " + json.loads(manifest)["data"]["version"]
        done = subprocess.run(
            [str(original), "exec", "--file", str(PROBE)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        data = json.loads(done.stdout)["data"]
        if data["exitCode"] != 0:
            raise SystemExit(f"the probe failed under the original:\n{data['stderr']}")
        answer = json.loads(data["stdout"])
    RECORDED.write_text(
        json.dumps({"original": version, "tree": tree, "answer": answer}, indent=1) + "\n",
        encoding="utf-8",
    )
    print(f"recorded {RECORDED} ({version}, tree {tree})")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ORIGINAL)
