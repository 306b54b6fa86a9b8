"""What a cold CLI process does before and around a command: lazy logging, the GC setting.

A `write` never imports the stdlib `logging` package unless something is logged;
the CLI's logging configuration (stderr, `memhtml: LEVEL message`, MEMHTML_LOG's
level) applies all the same once a logger is used. `main` raises the cyclic
garbage collector's young-generation threshold for its own process only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**{k: v for k, v in os.environ.items() if k != "MEMHTML_LOG"}, **(env or {})},
    )


def test_a_write_does_not_import_logging(repo: Path) -> None:
    code = (
        "import sys, io, json; from memhtml.cli.main import run, _configure_logging;"
        "_configure_logging(); buf = io.StringIO();"
        "code = run(['write', '--title', 'Cold', '--type', 'semantic',"
        " '--claim', 'A cold write lands.', '--dense'], stdout=buf);"
        "print(json.dumps([code, json.loads(buf.getvalue())['data']['created'],"
        " 'logging' in sys.modules]))"
    )
    out = _python(code, {"MEMHTML_ROOT": str(repo), "MEMHTML_EMBED": "off"})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, True, False]
    assert out.stderr == ""


def test_the_first_log_record_is_configured_as_before() -> None:
    code = (
        "import sys; from memhtml.cli.main import _configure_logging, log;"
        "_configure_logging(); print('logging' in sys.modules);"
        "log.warning('warned %d', 3); log.info('not shown')"
    )
    out = _python(code)
    assert out.stdout.strip() == "False"
    assert out.stderr == "memhtml: WARNING warned 3\n"


def test_an_asked_level_configures_at_once() -> None:
    code = (
        "import sys; from memhtml.cli.main import _configure_logging, log;"
        "_configure_logging(); print('logging' in sys.modules);"
        "import logging; logging.getLogger('a.library').info('theirs');"
        "log.debug('hidden'); log.info('ours')"
    )
    out = _python(code, {"MEMHTML_LOG": "info"})
    assert out.stdout.strip() == "True"
    assert out.stderr == "memhtml: INFO theirs\nmemhtml: INFO ours\n"


def test_an_unknown_level_means_warning() -> None:
    code = (
        "from memhtml.cli.main import _configure_logging, log;"
        "_configure_logging(); log.info('hidden'); log.error('shown')"
    )
    out = _python(code, {"MEMHTML_LOG": "chatty"})
    assert out.stderr == "memhtml: ERROR shown\n"


def test_main_raises_the_young_gc_threshold_and_run_does_not() -> None:
    code = (
        "import gc, io; from memhtml.cli import main as m;"
        "before = gc.get_threshold(); m.run(['manifest'], stdout=io.StringIO());"
        "after_run = gc.get_threshold()\n"
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write(repr([before, after_run, gc.get_threshold()])))\n"
        "m.main(['manifest'])"
    )
    out = _python(code)
    before, after_run, after_main = json.loads(out.stderr.replace("(", "[").replace(")", "]"))
    assert before == after_run == [700, 10, 10]
    assert after_main == [20_000, 10, 10]


def test_main_runs_the_exit_handlers_and_ends_with_the_commands_code(tmp_path: Path) -> None:
    # main ends the process without the interpreter's teardown, but after the exit handlers
    code = (
        "import atexit, sys; from memhtml.cli import main as m\n"
        "atexit.register(lambda: sys.stderr.write('handlers ran'))\n"
        "m.main(['show', 'no/such.html', '--dense'])\n"
        "sys.stderr.write('not reached')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "MEMHTML_ROOT": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.stderr == "handlers ran"
    assert out.returncode != 0 and json.loads(out.stdout)["ok"] is False


def test_a_thread_still_running_gets_the_ordinary_exit(tmp_path: Path) -> None:
    code = (
        "import sys, threading, time; from memhtml.cli import main as m\n"
        "t = threading.Thread(target=lambda: (time.sleep(0.3), sys.stderr.write('thread done')))\n"
        "t.start()\n"
        "m.main(['manifest'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr == "thread done"
