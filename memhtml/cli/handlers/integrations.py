"""Handlers for the `integrations` group and `hook`: thin calls into memhtml.integrations."""

from __future__ import annotations

import sys
from typing import Any

from memhtml.cli.main import Invocation
from memhtml.surface.spec import RawOutput


def install(
    inv: Invocation,
    host: str | None = None,
    *,
    project: str | None = None,
    hooks: str = "all",
    bare_command: bool = False,
    force: bool = False,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Wire one host (or every detected one)."""
    from memhtml.integrations.api import install_hosts

    return install_hosts(
        host,
        project=project,
        hooks=hooks,
        bare_command=bare_command,
        force=force,
        dry_run=dry_run,
        repo=inv.repo,
    )


def uninstall(
    inv: Invocation,
    host: str,
    *,
    project: str | None = None,
    force: bool = False,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Unwire one host."""
    from memhtml.integrations.api import uninstall_host

    return uninstall_host(host, project=project, force=force, dry_run=dry_run)


def list_(inv: Invocation, project: str | None = None) -> dict[str, Any]:
    """Every host's state."""
    from memhtml.integrations.api import list_hosts

    return list_hosts(project)


def doctor(inv: Invocation, host: str | None = None, project: str | None = None) -> dict[str, Any]:
    """Check a host's wiring."""
    from memhtml.integrations.api import doctor_hosts

    return doctor_hosts(host, project)


def shell(inv: Invocation, write: bool = False, rc: str | None = None) -> dict[str, Any]:
    """Profile lines."""
    from memhtml.integrations.api import shell_lines

    return shell_lines(write=write, rc=rc, repo=inv.repo)


def hook(
    inv: Invocation,
    event: str,
    *,
    host: str,
    trace_root: str | None = None,
    limit: int = 5,
    budget: int = 3000,
    time_limit_ms: int | None = None,
) -> RawOutput:
    """The host's protocol on stdout, never an envelope (see memhtml.integrations.hook)."""
    from memhtml.contracts.errors import UnknownHookEventError, UnknownHostError
    from memhtml.integrations.hook import respond, say
    from memhtml.integrations.hosts import BY_ID, HOOK_EVENTS, HOSTS

    problem: UnknownHookEventError | UnknownHostError | None = None
    if event not in HOOK_EVENTS:
        problem = UnknownHookEventError(
            f"unknown hook event {event!r}: one of {', '.join(HOOK_EVENTS)}",
            suggestions=[f"memhtml hook {e} --host {host}" for e in HOOK_EVENTS],
        )
    elif host not in BY_ID:
        problem = UnknownHostError(
            f"unknown host {host!r}: one of {', '.join(HOSTS)}",
            suggestions=[f"memhtml hook {event} --host {h}" for h in HOSTS],
        )
    if problem is not None:
        if sys.stdin is not None and sys.stdin.isatty():
            raise problem  # a person at a terminal: the typed error
        say(f"{problem.code}: {problem.message}")  # a host: never block its turn
        return RawOutput("")
    return RawOutput(
        respond(
            BY_ID[host],
            event,
            repo=inv.repo,
            trace_root=trace_root,
            limit=limit,
            budget=budget,
            time_limit_ms=time_limit_ms,
            owns_process=inv.owns_process,
        )
    )


def human_list_(data: dict[str, Any]) -> str:
    """One line per host and scope."""
    lines = []
    for r in data["rows"]:
        where = "user" if r["scope"] == "user" else f"project {r['root']}"
        extra = f"  store {r['memhtml_root']}" if r.get("memhtml_root") else ""
        found = "" if r["detected"] else "  (not on this machine)"
        detail = f"  ({r['detail']})" if r.get("detail") else ""
        lines.append(f"{r['host']:9s} {r['state']:14s} {where}{extra}{found}{detail}")
    return "\n".join(lines)


def human_doctor(data: dict[str, Any]) -> str:
    """Each check with a mark."""
    lines = []
    for h in data["hosts"]:
        lines.append(f"{h['host']}: {'healthy' if h['healthy'] else 'NOT healthy'}")
        for c in h["checks"]:
            lines.append(f"  {'ok ' if c['ok'] else 'BAD'} {c['name']}: {c['detail']}")
            lines += [f"      try: {s}" for s in c["suggestions"]]
    return "\n".join(lines) or "no host is installed at this scope"


def human_shell(data: dict[str, Any]) -> str:
    """The snippet itself (eval-able), or what was written."""
    if data["written"]:
        return f"{'updated' if data['changed'] else 'already current'}: {data['rc']}"
    return data["snippet"].rstrip("\n")


def human_install(data: dict[str, Any]) -> str:
    """What was written where, per host, and what to do next."""
    lines = [data["note"]] if data.get("note") else []
    for h in data["hosts"]:
        lines.append(f"{h['display_name']} ({data['scope']} scope), store {data['memhtml_root']}:")
        lines += [f"  {e['action']:9s} {e['path']}  ({e['role']})" for e in h["entries"]]
        lines += [f"  backup    {b}" for b in h["backups"]]
        lines += [f"  next: {step}" for step in h["next_steps"]]
    if data["dry_run"]:
        lines.append("dry run: nothing was written (--json shows the contents)")
    return "\n".join(lines)


def human_uninstall(data: dict[str, Any]) -> str:
    """What was removed (or why nothing was)."""
    h = data["hosts"][0]
    if h["state"] == "not-installed":
        return h.get("note") or f"{h['host']} is not installed at {data['scope']} scope"
    lines = [f"{h['display_name']} ({data['scope']} scope):"]
    lines += [f"  {e['action']:9s} {e['path']}  ({e['role']})" for e in h["entries"]]
    lines += [f"  backup    {b}" for b in h["backups"]]
    return "\n".join(lines)
