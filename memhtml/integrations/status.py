"""`list` and `doctor`: what is installed, and whether what the receipt says still works.

`list` reads receipts and re-checks their claims; it never looks for
something that merely resembles our entry in a host's config (a hand-written
`mcpServers.memhtml` is `not-installed`: nothing recorded it, so nothing can
uninstall it). `doctor` goes further for one host: the binaries the config
names, the store, every fragment, then it runs what the host would run: the
hook with a probe payload in the host's own shape, and an MCP `initialize`
handshake with the server the entry names. It never creates anything: a
store that is missing is reported, not scaffolded by the probe.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from memhtml.integrations import tomltable
from memhtml.integrations.files import read_text
from memhtml.integrations.hosts import BY_ID, HOOK_SPECIFIC_JSON, HOSTS, TEXT, Host
from memhtml.integrations.install import drift
from memhtml.integrations.receipt import Receipt, inspect, receipt_path
from memhtml.integrations.render import hook_argv, shell_join

PROBE_TIMEOUT_S = 15.0
HANDSHAKE_TIMEOUT_S = 15.0


def store_state(root: str) -> tuple[bool, str]:
    from memhtml.ops.corpus import is_initialised

    path = Path(root)
    if not path.is_dir():
        return False, f"{root} does not exist"
    if not (path / ".git").exists() or not is_initialised(path):
        return False, f"{root} exists but is not a memhtml store (`memhtml init --repo {root}`)"
    return True, f"{root} is a memhtml store"


def row(host: Host, scope: str, root: Path, base: Path, home_dir: Path) -> dict[str, Any]:
    """One host at one scope: not-installed, installed or modified."""
    path = receipt_path(base, scope, root, host.id)
    found = inspect(path, scope=scope, root=root, host=host.id)
    out: dict[str, Any] = {
        "host": host.id,
        "display_name": host.display,
        "scope": scope,
        "root": str(root),
        "detected": (home_dir / host.detect).is_dir(),
        "receipt_path": str(path),
    }
    if found.state == "absent":
        return {**out, "state": "not-installed"}
    if found.receipt is None:
        return {
            **out,
            "state": "modified",
            "detail": f"the receipt cannot be read: {found.problem}",
        }
    r = found.receipt
    bad = drift(r, {})
    exists, _ = store_state(r.memhtml_root)
    out.update(
        state="modified" if bad else "installed",
        memhtml_root=r.memhtml_root,
        store_exists=exists,
        hooks=r.hooks,
        installed_at=r.installed_at,
        version=r.memhtml_version,
        files=[f.path for f in r.files],
    )
    if bad:
        record, _, why = bad[0]
        out["detail"] = f"{record.path}: {why}"
    return out


def list_rows(base: Path, home_dir: Path, project: Path | None) -> list[dict[str, Any]]:
    """Every host at user scope, and at the named project (and any other project with a
    receipt on this machine)."""
    rows = [row(BY_ID[h], "user", home_dir, base, home_dir) for h in HOSTS]
    roots: list[Path] = [project] if project is not None else []
    for path in sorted(base.glob("projects/*/*.json")) if base.is_dir() else []:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            root = Path(raw["root"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if root not in roots:
            roots.append(root)
    for root in roots:
        for h in HOSTS:
            r = row(BY_ID[h], "project", root, base, home_dir)
            if root == project or r["state"] != "not-installed":
                rows.append(r)
    return rows


def _check(name: str, ok: bool, detail: str, suggestions: list[str] | None = None) -> dict:
    return {"name": name, "ok": ok, "detail": detail, "suggestions": suggestions or []}


def _binary(argv0: str) -> tuple[bool, str]:
    found = (
        shutil.which(argv0)
        if os.sep not in argv0
        else (argv0 if os.access(argv0, os.X_OK) else None)
    )
    return (True, found) if found else (False, f"{argv0} is not there (or not executable)")


def _version(cli: list[str], env: dict[str, str]) -> tuple[bool, str | None, str]:
    try:
        out = subprocess.run(
            [*cli, "manifest", "--dense"],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            check=False,
        )
        return True, json.loads(out.stdout)["data"]["version"], ""
    except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired) as exc:
        return False, None, f"`{shell_join(cli)} manifest` did not answer ({type(exc).__name__})"


def probe_payload(host: Host, event: str, cwd: str) -> dict[str, Any]:
    """A hook payload in the host's own field names, for `doctor` and the tests."""
    p = host.payload
    payload: dict[str, Any] = {
        "hook_event_name": next((e.name for e in host.hooks.events if e.event == event), event),
        p.session[0]: "memhtml-doctor-probe",
    }
    cwd_field = p.cwd[0]
    payload[cwd_field] = cwd
    if event == "user-prompt-submit":
        payload[p.prompt[0]] = "what do we know about this project?"
    return payload


def _parses(host: Host, event: str, stdout: str) -> bool:
    if not stdout.strip():
        return True
    protocol = host.output.get(event)
    if protocol == TEXT:
        return True
    try:
        data = json.loads(stdout)
    except ValueError:
        return False
    if protocol == HOOK_SPECIFIC_JSON:
        return isinstance(data.get("hookSpecificOutput", {}).get("additionalContext"), str)
    return isinstance(data.get("additional_context"), str)


def _probe(host: Host, r: Receipt, event: str, env: dict[str, str]) -> dict[str, Any]:
    argv = hook_argv(
        _commands(r),
        event,
        host.id,
        r.memhtml_root,
        r.trace_root if event in ("pre-compact", "session-end") else None,
    )
    payload = json.dumps(probe_payload(host, event, r.memhtml_root))
    started = time.perf_counter()
    try:
        out = subprocess.run(
            ["/bin/sh", "-c", shell_join(argv)],
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _check(f"hook:{event}", False, f"the hook did not finish ({type(exc).__name__})")
    ms = (time.perf_counter() - started) * 1000
    ok = out.returncode == 0 and _parses(host, event, out.stdout)
    said = (
        "answered with recall"
        if out.stdout.strip()
        else "answered nothing (an empty store or no match)"
    )
    detail = (
        f"exit {out.returncode} in {ms:.0f} ms; {said}"
        if ok
        else (
            f"exit {out.returncode}; stdout is not {host.output.get(event, 'empty')}:"
            f" {out.stdout[:200]!r}"
        )
    )
    return _check(
        f"hook:{event}", ok, detail, [] if ok else [f"memhtml integrations install {host.id}"]
    )


def _commands(r: Receipt) -> Any:
    from memhtml.integrations.render import Commands

    return Commands(tuple(r.commands.cli), tuple(r.commands.mcp), r.commands.bare)


def handshake(mcp: list[str], env: dict[str, str]) -> tuple[bool, str]:
    """Start the MCP server the entry names and complete `initialize`; the server is killed."""
    lines = (
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "memhtml-doctor", "version": "0"},
                },
            }
        )
        + "\n"
    )
    try:
        proc = subprocess.Popen(
            mcp,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
    except OSError as exc:
        return False, f"could not start {mcp[0]}: {exc.strerror or exc}"
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(lines)
        proc.stdin.flush()
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
        import select

        while time.monotonic() < deadline:
            ready, _, _ = select.select(
                [proc.stdout], [], [], max(0.0, deadline - time.monotonic())
            )
            if not ready:
                break
            line = proc.stdout.readline()
            if not line:
                return False, "the server exited before answering initialize"
            try:
                info = json.loads(line)["result"]["serverInfo"]
            except (ValueError, KeyError, TypeError):
                continue
            name = info.get("name")
            return name == "memhtml", f"{name} {info.get('version', '?')} answered initialize"
        return False, f"no initialize answer within {HANDSHAKE_TIMEOUT_S:.0f} s"
    finally:
        proc.kill()
        proc.wait()


def _codex_trust(r: Receipt) -> dict[str, Any]:
    hooks = next((f for f in r.files if f.path.endswith("hooks.json")), None)
    config = Path(r.root) / ".codex" / "config.toml"
    states = tomltable.value_at(read_text(config), ["hooks", "state"]) or {}
    if hooks is None:
        return _check("hook-trust", True, "no hooks were installed")
    from memhtml.integrations import jsonc

    events = jsonc.value_at(read_text(Path(hooks.path)), ["hooks"]) or {}
    keys = []
    for frag in hooks.fragments:
        for name, entries in (frag.value or {}).items():
            group = events.get(name, []) if isinstance(events, dict) else []
            for i, entry in enumerate(group):
                if entry in entries:
                    label = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
                    keys.append(f"{hooks.path}:{label}:{i}:0")
    trusted = [k for k in keys if isinstance(states.get(k), dict) and states[k].get("trusted_hash")]
    if keys and len(trusted) == len(keys):
        return _check("hook-trust", True, "Codex has a trust decision for each memhtml hook")
    return _check(
        "hook-trust",
        True,
        f"{len(keys) - len(trusted)} of {len(keys)} memhtml hooks have no trust decision yet: Codex"
        " runs them only after you trust them in /hooks (informational)",
    )


def doctor(host: Host, scope: str, root: Path, base: Path) -> dict[str, Any]:
    """Every check for one host at one scope."""
    path = receipt_path(base, scope, root, host.id)
    found = inspect(path, scope=scope, root=root, host=host.id)
    install = f"memhtml integrations install {host.id}" + (
        " --project ." if scope == "project" else ""
    )
    if found.receipt is None:
        detail = (
            f"no receipt at {path}: {host.id} is not installed at {scope} scope"
            if found.state == "absent"
            else f"the receipt at {path} cannot be read: {found.problem}"
        )
        return {
            "host": host.id,
            "healthy": False,
            "checks": [_check("receipt", False, detail, [install])],
        }
    r = found.receipt
    env = {**os.environ, "MEMHTML_ROOT": r.memhtml_root}
    checks = [
        _check("receipt", True, f"{path}, written {r.installed_at} by memhtml {r.memhtml_version}")
    ]
    for name, argv in (("cli", r.commands.cli), ("mcp-server", r.commands.mcp)):
        ok, detail = _binary(argv[0])
        checks.append(_check(f"binary:{name}", ok, detail, [] if ok else [install]))
    ok, version, why = _version(r.commands.cli, env)
    same = ok and version == r.memhtml_version
    checks.append(
        _check(
            "cli-version",
            same,
            why
            or (
                f"{version}, as installed"
                if same
                else f"the CLI reports {version}, the receipt {r.memhtml_version}: reinstall"
            ),
            [] if same else [install],
        )
    )
    store_ok, store_detail = store_state(r.memhtml_root)
    checks.append(
        _check(
            "store",
            store_ok,
            store_detail,
            [] if store_ok else [f"memhtml init --repo {r.memhtml_root}"],
        )
    )
    bad = {(rec.path, f.role): why for rec, f, why in drift(r, {})}
    for record in r.files:
        for f in record.fragments:
            problem = bad.get((record.path, f.role))
            checks.append(
                _check(
                    f"entry:{f.role}",
                    problem is None,
                    f"{record.path}: " + (problem or "matches the receipt"),
                    []
                    if problem is None
                    else [f"{install} --force", f"memhtml integrations uninstall {host.id}"],
                )
            )
    if r.hooks != "none":
        for e in host.hooks.events:
            if r.hooks in e.modes and e.event in host.output:
                checks.append(_probe(host, r, e.event, env))
    if r.trace_root is not None:
        there = Path(r.trace_root).is_dir()
        checks.append(
            _check(
                "trace-root",
                True,
                f"{r.trace_root} "
                + (
                    "exists"
                    if there
                    else "does not exist yet: the indexing hooks read it once sessions are written"
                ),
            )
        )
    if store_ok:
        ok, detail = handshake(r.commands.mcp, env)
        checks.append(_check("mcp-handshake", ok, detail, [] if ok else [install]))
    else:
        checks.append(
            _check(
                "mcp-handshake",
                False,
                "not attempted: the store is missing",
                [f"memhtml init --repo {r.memhtml_root}"],
            )
        )
    if host.id == "codex":
        checks.append(_codex_trust(r))
    return {"host": host.id, "healthy": all(c["ok"] for c in checks), "checks": checks}
