"""The five `integrations` verbs as functions returning envelope data (the CLI's handlers
call these). None opens a store: `install` is the first command on a fresh machine, and the
store it records may not exist yet."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memhtml import __version__
from memhtml.contracts.dates import format_instant
from memhtml.contracts.errors import MemhtmlError
from memhtml.integrations import machine, render
from memhtml.integrations.fence import SHELL, FenceError
from memhtml.integrations.files import read_text, write_atomic
from memhtml.integrations.hosts import BY_ID, HOSTS
from memhtml.integrations.install import Job, install, settle_all, uninstall
from memhtml.integrations.plan import Setup
from memhtml.integrations.receipt import locked, receipts_dir
from memhtml.integrations.status import doctor, list_rows


def _scope(project: str | None, home: Path) -> tuple[str, Path]:
    if project is None:
        return "user", home
    return "project", machine.project_root(project, home)


def _job(host: str, scope: str, root: Path, **kw: Any) -> Job:
    h = BY_ID[host]
    setup = Setup(
        host=h,
        scope=scope,
        root=root,
        memhtml_root=kw["memhtml_root"],
        commands=kw["commands"],
        hooks=kw["hooks"],
        trace_root=machine.trace_root(h),
    )
    return Job(
        setup,
        kw["base"],
        kw["force"],
        kw["dry_run"],
        __version__,
        format_instant(datetime.now(UTC)),
    )


def install_hosts(
    host: str | None,
    *,
    project: str | None,
    hooks: str,
    bare_command: bool,
    force: bool,
    dry_run: bool,
    repo: str | None,
) -> dict[str, Any]:
    """`integrations install`: the named host, or every host whose home folder exists."""
    home = machine.home()
    scope, root = _scope(project, home)
    hosts = [machine.check_host(host, "install")] if host else machine.detected(home)
    memhtml_root = machine.store_root(repo)
    kw = {
        "memhtml_root": memhtml_root,
        "commands": machine.commands(bare_command),
        "hooks": hooks,
        "base": receipts_dir(home, dict(os.environ)),
        "force": force,
    }
    out: dict[str, Any] = {
        "action": "install",
        "scope": scope,
        "root": str(root),
        "memhtml_root": memhtml_root,
        "dry_run": dry_run,
    }
    if not hosts:
        return {
            **out,
            "changed": False,
            "hosts": [],
            "note": "no coding agent found (none of ~/.claude, ~/.codex, ~/.cursor,"
            " ~/.config/opencode exists); name one: " + ", ".join(HOSTS),
        }
    reports: list[dict[str, Any]] = []
    with locked(home):
        if not dry_run and len(hosts) > 1:  # every refusal is raised before anything is written
            for h in hosts:
                install(_job(h, scope, root, dry_run=True, **kw))
        done: list[str] = []
        for h in hosts:
            try:
                reports.append(install(_job(h, scope, root, dry_run=dry_run, **kw)))
            except MemhtmlError as exc:
                if done:
                    exc.message += f" ({', '.join(done)} installed before this and still are)"
                    exc.suggestions += [f"memhtml integrations uninstall {d}" for d in done]
                raise
            if not dry_run:
                done.append(h)
    from memhtml.integrations.status import store_state

    exists, _ = store_state(memhtml_root)
    if not exists:  # recorded all the same: the hooks stay silent until it exists
        for r in reports:
            r["next_steps"].insert(0, f"memhtml init --repo {memhtml_root}  (no store there yet)")
    return {
        **out,
        "store_exists": exists,
        "changed": any(r["changed"] for r in reports),
        "hosts": reports,
    }


def uninstall_host(host: str, *, project: str | None, force: bool, dry_run: bool) -> dict[str, Any]:
    """`integrations uninstall HOST`."""
    home = machine.home()
    name = machine.check_host(host, "uninstall")
    scope, root = _scope(project, home)
    kw = {
        "memhtml_root": "",
        "commands": render.Commands((), (), False),
        "hooks": "none",
        "base": receipts_dir(home, dict(os.environ)),
        "force": force,
    }
    with locked(home):
        report = uninstall(_job(name, scope, root, dry_run=dry_run, **kw))
    out = {"action": "uninstall", "scope": scope, "root": str(root), "dry_run": dry_run}
    if report["state"] == "not-installed":
        report["note"] = f"{name} has no memhtml install at {scope} scope: nothing to remove"
    return {**out, "changed": report["changed"], "hosts": [report]}


def list_hosts(project: str | None) -> dict[str, Any]:
    """`integrations list`."""
    home = machine.home()
    root = machine.project_root(project, home) if project is not None else None
    base = receipts_dir(home, dict(os.environ))
    with locked(home):  # a receipt a killed install left pending is settled first
        settle_all(base)
    return {
        "home": str(home),
        "project_root": str(root) if root else None,
        "receipts": str(base),
        "detected": machine.detected(home),
        "rows": list_rows(base, home, root),
    }


def doctor_hosts(host: str | None, project: str | None) -> dict[str, Any]:
    """`integrations doctor [HOST]`: the named host, or every host installed at the scope."""
    home = machine.home()
    scope, root = _scope(project, home)
    base = receipts_dir(home, dict(os.environ))
    if host is not None:
        names = [machine.check_host(host, "doctor")]
    else:
        rows = list_rows(base, home, root if scope == "project" else None)
        names = [
            r["host"]
            for r in rows
            if r["scope"] == scope and r["root"] == str(root) and r["state"] != "not-installed"
        ]
    reports = [doctor(BY_ID[n], scope, root, base) for n in names]
    return {
        "scope": scope,
        "root": str(root),
        "healthy": bool(reports) and all(r["healthy"] for r in reports),
        "hosts": reports,
    }


def shell_lines(*, write: bool, rc: str | None, repo: str | None) -> dict[str, Any]:
    """`integrations shell`: the profile lines; with `write`, fenced into the rc file."""
    home = machine.home()
    cmds = machine.commands(False)
    bin_dir = str(Path(cmds.cli[0]).parent)
    snippet = render.shell_snippet(machine.store_root(repo), bin_dir)
    target = Path(os.path.expanduser(rc)).absolute() if rc else machine.rc_file(os.environ, home)
    out: dict[str, Any] = {
        "rc": str(target),
        "snippet": snippet,
        "written": False,
        "changed": False,
    }
    if not write:
        return out
    from memhtml.contracts.errors import IntegrationModifiedError
    from memhtml.integrations import fence

    current = read_text(target)
    try:
        new = (
            fence.replace(current, SHELL, snippet)[0]
            if current
            else fence.append(None, SHELL, snippet)[0]
        )
    except FenceError as exc:
        raise IntegrationModifiedError(
            f"{target}: its memhtml markers are broken ({exc}); fix them by hand",
            details={"path": str(target)},
        ) from exc
    if new != current:
        write_atomic(target, new)
    return {**out, "written": True, "changed": new != current}
