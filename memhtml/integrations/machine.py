"""This machine's facts an install records: home, the memhtml binaries, the store, the roots.

The one place the integrations read the environment (HOME, XDG_CONFIG_HOME,
MEMHTML_ROOT and MEMHTML_TRACE_ROOT through `ops`, SHELL), so every other
module takes them as values and a test pins them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from memhtml.contracts.errors import InvalidFlagError, UnknownHostError
from memhtml.integrations.hosts import BY_ID, HOSTS, Host
from memhtml.integrations.render import Commands


def home(environ: Mapping[str, str] | None = None) -> Path:
    """$HOME (absolute), else the account's home."""
    env = os.environ if environ is None else environ
    named = (env.get("HOME") or "").strip()
    return Path(named).absolute() if named else Path.home()


def commands(bare: bool) -> Commands:
    """What a host config runs: this installation's `memhtml` and `memhtml-mcp` scripts by
    absolute path (GUI hosts do not inherit a shell's PATH), or the bare names.

    The scripts sit beside the interpreter in a virtualenv or a pipx install;
    when they are not there (a source checkout run with `python -m`), the
    interpreter runs the modules.
    """
    if bare:
        return Commands(("memhtml",), ("memhtml-mcp",), True)
    bindir = Path(sys.executable).parent
    cli, mcp = bindir / "memhtml", bindir / "memhtml-mcp"
    if cli.is_file() and mcp.is_file():
        return Commands((str(cli),), (str(mcp),), False)
    python = str(Path(sys.executable).absolute())
    return Commands((python, "-m", "memhtml.cli"), (python, "-m", "memhtml.mcp.server"), False)


def store_root(repo: str | None) -> str:
    """The store to record: --repo, else $MEMHTML_ROOT, else ~/memhtml (absolute)."""
    from memhtml.ops.config import resolve_root

    return str(resolve_root(repo))


def trace_root(host: Host) -> str | None:
    """Where this host's transcripts are, when memhtml can index them (Claude Code's)."""
    if host.transcripts is None:
        return None
    from memhtml.ops.traces import trace_root as resolve

    return str(resolve())


def check_host(name: str | None, verb: str) -> str:
    """`name` when it is a host; else ERR_UNKNOWN_HOST naming them all."""
    if name is not None and name in BY_ID:
        return name
    raise UnknownHostError(
        f"unknown host {name!r}: one of {', '.join(HOSTS)}",
        suggestions=[f"memhtml integrations {verb} {h}" for h in HOSTS],
    )


def detected(home_dir: Path) -> list[str]:
    """The hosts whose home folder exists on this machine, in HOSTS order."""
    return [h for h in HOSTS if (home_dir / BY_ID[h].detect).is_dir()]


def project_root(path: str, home_dir: Path) -> Path:
    """`--project PATH` as its git top level; refused when it is no repository, the
    filesystem root, or the home folder (that is user scope)."""

    def refuse(reason: str) -> InvalidFlagError:
        return InvalidFlagError(
            f"--project {path}: {reason}",
            suggestions=[
                "memhtml integrations install HOST --project .",
                "install without --project",
            ],
        )

    start = Path(os.path.expanduser(path or ".")).absolute()
    try:
        probe = subprocess.run(
            ["git", "-C", str(start), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise refuse(f"git could not be run ({exc})") from exc
    top = probe.stdout.strip()
    if probe.returncode != 0 or not top:
        raise refuse("not inside a git repository, so there is no project root to install into")
    root = Path(top).absolute()
    if root == Path(root.anchor):
        raise refuse("its git top level is the filesystem root")
    if root == home_dir or root.resolve() == home_dir.resolve():
        raise refuse("its git top level is your home folder, which is user scope")
    return root


def rc_file(environ: Mapping[str, str], home_dir: Path) -> Path:
    """The shell profile to write: ~/.zshrc under zsh, else ~/.bashrc."""
    return home_dir / (".zshrc" if environ.get("SHELL", "").endswith("zsh") else ".bashrc")
