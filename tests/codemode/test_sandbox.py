"""Escape attempts fail with a typed error and no effect; every bound stops a script and says so.

No timing assertions: a bound is asserted by the report (`limit`, `timed_out`,
the exit code), never by how long the run took.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memhtml.codemode.limits import TIMEOUT_EXIT_CODE
from tests.codemode.conftest import Run, answer, commit, memory_html

ATTEMPT = """import * as fs from "node:fs"
const attempt = (fn) => {
  try { return ["ok", fn()] } catch (e) { return [e.code ?? e.name, String(e.message)] }
}
"""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def _untouched(root: Path, head: str) -> None:
    assert _git(root, "status", "--porcelain", "--ignored") == ""
    assert _git(root, "rev-parse", "HEAD") == head


@pytest.fixture
def small(repo: Path) -> tuple[Path, str]:
    """A root with one memory and two committed symbolic links that point out of the tree."""
    (repo / "areas").mkdir(parents=True, exist_ok=True)
    os.symlink("/etc/passwd", repo / "areas" / "passwd.html")
    os.symlink("../../../../../etc/hostname", repo / "areas" / "climb.html")
    head = commit(repo, {"areas/real.html": memory_html("A real memory.")})
    return repo, head


def test_host_paths_and_traversal_do_not_resolve(small: tuple[Path, str], run: Run) -> None:
    root, head = small
    seen = answer(
        run(
            root,
            ATTEMPT
            + """console.log(JSON.stringify({
  passwd: attempt(() => fs.readFileSync("/etc/passwd", "utf8")),
  climb: attempt(() => fs.readFileSync("/mnt/memhtml/../../../etc/hostname", "utf8")),
  relative: attempt(() => fs.readFileSync("../../../etc/passwd", "utf8")),
  proc: attempt(() => fs.readdirSync("/proc/self")),
  exists: fs.existsSync("/etc/passwd") }))""",
        )
    )
    for key in ("passwd", "climb", "relative", "proc"):
        assert seen[key][0] == "ENOENT", (key, seen[key])
    assert seen["exists"] is False
    _untouched(root, head)


def test_symbolic_links_are_entries_never_followed(small: tuple[Path, str], run: Run) -> None:
    root, head = small
    seen = answer(
        run(
            root,
            ATTEMPT
            + """import { corpus } from "/workspace/lib/corpus.mjs"
const link = "/mnt/memhtml/areas/passwd.html"
console.log(JSON.stringify({
  read: attempt(() => fs.readFileSync(link, "utf8")),
  climb: attempt(() => fs.readFileSync("/mnt/memhtml/areas/climb.html")),
  stat: [fs.statSync(link).isSymbolicLink, fs.statSync(link).isFile],
  listed: fs.readdirSync("/mnt/memhtml/areas").filter((n) => n.endsWith(".html")),
  corpus: [...corpus().keys()] }))""",
        )
    )
    assert seen["read"][0] == "ELOOP" and "root:" not in seen["read"][1]
    assert seen["climb"][0] == "ELOOP"
    assert seen["stat"] == [True, False]
    assert seen["listed"] == ["climb.html", "passwd.html", "real.html"]
    assert seen["corpus"] == ["/README.html", "/areas/real.html"]
    _untouched(root, head)


def test_writes_are_refused_with_erofs(small: tuple[Path, str], run: Run) -> None:
    root, head = small
    seen = answer(
        run(
            root,
            ATTEMPT
            + """console.log(JSON.stringify([
  attempt(() => fs.writeFileSync("/mnt/memhtml/pwn.html", "x")),
  attempt(() => fs.writeFileSync("/mnt/memhtml/areas/real.html", "x")),
  attempt(() => fs.appendFileSync("/workspace/out.txt", "x")),
  attempt(() => fs.mkdirSync("/mnt/memhtml/new")),
  attempt(() => fs.unlinkSync("/mnt/memhtml/areas/real.html")),
  attempt(() => fs.readFileSync("/mnt/memhtml/areas/real.html", { flag: "w" })),
  await fs.promises.writeFile("/tmp/x", "x").then(() => ["ok"], (e) => [e.code]) ]))""",
        )
    )
    assert [outcome[0] for outcome in seen] == ["EROFS"] * 7
    _untouched(root, head)


@pytest.mark.parametrize(
    "module", ["node:child_process", "child_process", "os", "std", "node:net", "/etc/passwd"]
)
def test_importing_a_host_module_fails_before_the_script_runs(
    small: tuple[Path, str], run: Run, module: str
) -> None:
    root, head = small
    report = run(root, f'console.log("ran")\nimport * as m from "{module}"\nconsole.log(m)')
    assert report.exit_code == 1
    assert report.stdout == ""  # imports are hoisted: nothing of the script ran
    assert "ERR_MODULE_NOT_FOUND" in report.stderr or "Cannot find module" in report.stderr
    dynamic = run(root, f'console.log(await import("{module}").then(() => "ok", (e) => e.code))')
    assert dynamic.stdout == "ERR_MODULE_NOT_FOUND\n"
    _untouched(root, head)


def test_eval_of_a_host_binding_finds_nothing(small: tuple[Path, str], run: Run) -> None:
    root, head = small
    seen = answer(
        run(
            root,
            ATTEMPT
            + """const names = ["__memhtml_host", "__memhtml_write", "__memhtml_control",
  "__memhtml_boot", "require", "module", "std", "os", "performance", "Deno", "Bun"]
console.log(JSON.stringify({
  evals: names.map((n) => attempt(() => eval(`${n}("read", "{}")`))[0]),
  fn: attempt(() => new Function("return require('fs')")())[0],
  globals: names.filter((n) => n in globalThis),
  env: Object.keys(process.env),
  fetch: await fetch("https://example.com").then(() => "reached", (e) => String(e)) }))""",
        )
    )
    assert set(seen["evals"]) == {"ReferenceError"}
    assert seen["fn"] == "ReferenceError"
    assert seen["globals"] == []
    assert seen["env"] == []
    assert "Network access not configured" in seen["fetch"]
    _untouched(root, head)


def test_an_infinite_loop_is_cut_off_at_the_bound(small: tuple[Path, str], run: Run) -> None:
    root, head = small
    report = run(root, 'console.log("before")\nlet n = 0\nfor (;;) { n++ }', timeout_ms=500)
    assert report.timed_out is True
    assert report.exit_code == TIMEOUT_EXIT_CODE
    assert report.limit is not None and report.limit.name == "time" and report.limit.bound == 500
    assert report.stdout == "before\n"  # what it printed before the bound is kept
    assert "exceeded 500ms limit" in report.stderr
    _untouched(root, head)


def test_allocating_2_gb_stops_at_the_memory_bound(small: tuple[Path, str], run: Run) -> None:
    root, head = small
    for script in (
        "const a = new Uint8Array(2 * 1024 ** 3 - 1); console.log(a.length)",
        "const held = []; for (;;) held.push(new ArrayBuffer(64 * 1024 * 1024))",
    ):
        report = run(root, script, memory_mb=256)
        assert report.exit_code == 1
        assert report.limit is not None and report.limit.name == "memory", report.stderr
        assert report.limit.bound == 256
        assert "out of memory" in report.stderr
    _untouched(root, head)


def test_printing_100_mb_stops_at_the_output_bound(small: tuple[Path, str], run: Run) -> None:
    root, head = small
    for script in (
        "console.log('x'.repeat(100 * 1024 * 1024))",
        "for (let i = 0; i < 100; i++) console.log('y'.repeat(1024 * 1024))",
    ):
        report = run(root, script, max_output_bytes=4 * 1024 * 1024)
        assert report.limit is not None and report.limit.name == "output"
        assert report.limit.reached > report.limit.bound == 4 * 1024 * 1024
        assert len(report.stdout.encode()) <= 4 * 1024 * 1024
        assert report.exit_code == 1
    _untouched(root, head)


def test_reading_past_the_files_bound_stops_the_script(fixture_root: Path, run: Run) -> None:
    report = run(
        fixture_root,
        'import { corpus } from "/workspace/lib/corpus.mjs"\nconsole.log(corpus().size)',
        max_files=20,
    )
    assert report.limit is not None and report.limit.name == "files"
    assert report.limit.bound == 20 and report.limit.reached == 21
    assert report.files_read == 20
    assert report.stdout == ""


def test_a_throwing_script_is_a_report_with_its_stack(small: tuple[Path, str], run: Run) -> None:
    root, _ = small
    thrower = "function find() {\n  throw new Error('the selector matched nothing')\n}\nfind()"
    report = run(root, thrower)
    assert report.exit_code == 1
    assert report.limit is None
    assert "Error: the selector matched nothing" in report.stderr
    assert "at find (/workspace/script.mjs:2:" in report.stderr
    syntax = run(root, "const = 1")
    assert syntax.exit_code == 1 and "SyntaxError" in syntax.stderr


def test_no_host_clock_or_entropy(small: tuple[Path, str], run: Run) -> None:
    root, head = small
    script = (
        "console.log(JSON.stringify([Date.now(), new Date().toISOString(), Math.random(),"
        " typeof performance, new Date(0).getTimezoneOffset()]))"
    )
    first, second = answer(run(root, script)), answer(run(root, script))
    committed = int(_git(root, "show", "-s", "--format=%ct", head))
    assert first == second
    assert first[0] == committed * 1000
    assert first[3] == "undefined" and first[4] == 0


def test_the_worker_dies_with_its_parent(small: tuple[Path, str], tmp_path: Path) -> None:
    """A parent killed mid-run (SIGKILL: no finally) leaves no QuickJS worker spinning."""
    import signal
    import sys
    import time

    root, _ = small
    code = (
        "from pathlib import Path; from memhtml.store.git import Git;"
        " from memhtml.codemode import ExecLimits, run_exec;"
        f" run_exec(Git(Path({str(root)!r})), 'for (;;) {{}}',"
        " limits=ExecLimits(timeout_ms=120000))"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[2])
    children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    worker = None
    for _ in range(600):  # the worker is a direct child running worker.py
        for pid in children.read_text().split() if children.exists() else []:
            if "worker.py" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                worker = int(pid)
        if worker is not None:
            break
        time.sleep(0.05)
    assert worker is not None
    parent.send_signal(signal.SIGKILL)
    parent.wait()

    def alive(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
        except (FileNotFoundError, ProcessLookupError):
            return False

    for _ in range(600):
        if not alive(worker):
            break
        time.sleep(0.05)
    assert not alive(worker), Path(f"/proc/{worker}/stat").read_text()
