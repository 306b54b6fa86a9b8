"""Installed distributions, written by hand: a `.dist-info` folder beside its modules.

`importlib.metadata` finds a distribution by its `<name>-<version>.dist-info`
folder on `sys.path` (METADATA for the name and version, entry_points.txt for
the entry points), which is all that `pip install` leaves behind that memhtml
reads. The plugin tests make such a folder in a temporary site directory and put
that directory on the path: the distribution is then installed as far as memhtml
can tell, without touching the test environment.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

HASHBAG = Path(__file__).resolve().parent / "hashbag"
PIP = (sys.executable, "-m", "pip")


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel of the project at `source` (pip and the dev extra's hatchling, offline)."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("*.whl"))
    done = subprocess.run(
        [
            *PIP,
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = set(out.glob("*.whl")) - before
    return wheel


def install(
    site: Path,
    name: str,
    entry_points: Mapping[str, Mapping[str, str]],
    modules: Mapping[str, str] | None = None,
    version: str = "1.0",
) -> Path:
    """Write distribution `name` into `site`: its modules (relative path -> source) and its
    dist-info with `entry_points` (group -> {entry name: "module:attr"}); the dist-info path."""
    for rel, source in (modules or {}).items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    folder = site / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    lines = []
    for group, entries in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in entries.items()]
        lines.append("")
    (folder / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    (folder / "RECORD").write_text("", encoding="utf-8")
    return folder
