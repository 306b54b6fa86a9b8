"""A process of the sync load proof: `python load_driver.py MODE ROOT NAME COUNT STOPFILE`.

* `writer`: COUNT `memhtml write` processes one after another; prints `ACK <claim>` for
  each acknowledged write, `FAILED <envelope>` otherwise.
* `syncer`: `memhtml sync` again and again until STOPFILE exists; prints `SYNC <mode>
  <received> <sent>` or `SYNCERR <code> <reason>`.
* `pusher`: a write then a sync, until STOPFILE exists (COUNT writes at most); prints
  the writes as `writer` does and the syncs as `syncer` does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def claim_of(name: str, i: int) -> tuple[str, str]:
    return f"{name} fact {i}", f"Writer {name} recorded fact number {i} (token {name}x{i})."


def _cli(root: str, *argv: str) -> tuple[int, dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *argv, "--repo", root, "--dense"],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        envelope = json.loads(proc.stdout)
    except ValueError:
        envelope = {"ok": False, "code": "NO_ENVELOPE", "stderr": proc.stderr[-500:]}
    return proc.returncode, envelope


def write(root: str, name: str, i: int) -> None:
    title, claim = claim_of(name, i)
    code, envelope = _cli(root, "write", "--type", "semantic", "--title", title, "--claim", claim)
    if code == 0 and envelope.get("ok"):
        print("ACK " + claim, flush=True)
    else:
        print("FAILED " + json.dumps(envelope), flush=True)


def sync(root: str) -> None:
    code, envelope = _cli(root, "sync")
    data = envelope.get("data")
    if code == 0 and isinstance(data, dict):
        print(f"SYNC {data['mode']} {data['received']} {data['sent']}", flush=True)
    else:
        details = envelope.get("details")
        reason = details.get("reason") if isinstance(details, dict) else None
        print(f"SYNCERR {envelope.get('code')} {reason} {json.dumps(envelope)}", flush=True)


def main(mode: str, root: str, name: str, count: int, stop: Path) -> None:
    if mode == "writer":
        for i in range(count):
            write(root, name, i)
    elif mode == "syncer":
        while not stop.exists():
            sync(root)
    elif mode == "pusher":
        i = 0
        while not stop.exists() and i < count:
            write(root, name, i)
            sync(root)
            i += 1
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    mode_, root_, name_, count_, stop_ = sys.argv[1:6]
    main(mode_, root_, name_, int(count_), Path(stop_))
