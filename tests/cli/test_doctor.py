"""doctor says what the original says (overdue tasks, stale blockers, untyped entities, the task
inbox, vector coverage, stuck sleep runs), shows what --fix will do before it is run, and
--strict fails (ERR_UNHEALTHY, exit 1) exactly when the store is not healthy."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.cli.main import run
from tests.cli.conftest import run_on_pty

NOW = "2026-03-10T12:00:00Z"


def call(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run([*argv, "--json"], stdout=out)
    return code, json.loads(out.getvalue())


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def store(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMHTML_ROOT", str(repo))
    monkeypatch.setenv("MEMHTML_NOW", NOW)
    with memhtml.open(repo, embedder="fake") as c:
        c.write(title="A", type="semantic", claim="A is one.", path="areas/x/a.html")
        c.write(title="B", type="semantic", claim="B is two.", path="areas/x/b.html")
        c.link("areas/x/a.html", "supports", "areas/x/b.html")
    return repo


def _report(*extra: str) -> dict[str, Any]:
    from memhtml.ops.doctor_checks import findings

    code, out = call("doctor", *extra)
    assert code == 0, out
    data = dict(out["data"])
    # the verdict and its reasons never drift apart: healthy exactly when nothing is said
    assert data["healthy"] is (not findings(data)), (data["healthy"], findings(data))
    return data


def test_a_clean_store_is_healthy_and_strict_passes(store: Path) -> None:
    data = _report("--strict")
    assert data["healthy"] is True and data["fix_would"] == [] and data["suggestions"] == []
    for key in ("overdue_tasks", "stale_blockers", "untyped_entities", "sleep_runs"):
        assert data[key] == []
    assert (data["inbox_task_depth"], data["untyped_entity_total"]) == (0, 0)


def test_advisory_findings_alone_keep_the_store_healthy_under_strict(store: Path) -> None:
    """Overdue tasks, stale blockers and untyped entities are reported, never unhealthy."""
    call("task", "add", "--title", "Late", "--due", "2026-03-01")
    call("task", "add", "--title", "Due later", "--due", "2026-04-01")
    call("task", "add", "--title", "Waits")
    call("task", "add", "--title", "Gate", "--blocks", "areas/inbox/tasks/waits.html")
    call("archive", "areas/inbox/tasks/gate.html")
    page = store / "areas/x/a.html"
    page.write_text(
        page.read_text().replace(
            '<meta name="memhtml-type"',
            '<meta name="memhtml-entity" content="checkout-api">\n<meta name="memhtml-type"',
        )
    )
    git(store, "commit", "-qam", "an entity without a type")
    code, out = call("doctor", "--strict")
    data = out["data"]
    assert code == 0 and data["healthy"] is True, out
    assert [(t["path"], t["due_at"]) for t in data["overdue_tasks"]] == [
        ("areas/inbox/tasks/late.html", "2026-03-01")
    ]
    (blocker,) = data["stale_blockers"]
    assert blocker["path"] == "areas/inbox/tasks/waits.html"
    assert blocker["blocker_state"] == "archived" and blocker["blocker_path"].startswith("archive/")
    assert data["untyped_entities"] == [{"entity_name": "checkout-api", "files": 1}]
    assert data["untyped_entity_total"] == 1
    assert data["format_warnings"] == 0  # the dropped bare name is advisory, not a defect
    code, text = run_on_pty(["doctor"])
    assert text.startswith("healthy") and "notes (advisory, never unhealthy):" in text
    assert "overdue: areas/inbox/tasks/late.html (todo, due 2026-03-01)" in text
    assert "checkout-api (1 file)" in text and "type:name" in text


def test_doctor_shows_the_target_fix_will_rewrite_a_dangling_link_to(store: Path) -> None:
    (store / "areas/y").mkdir()
    git(store, "mv", "areas/x/b.html", "areas/y/b.html")  # moved by hand: only history knows
    git(store, "commit", "-qm", "move b")
    data = _report()
    (link,) = data["dangling"]
    assert link == {
        "src_path": "areas/x/a.html",
        "rel": "supports",
        "dst_path": "areas/x/b.html",
        "rewrite_to": "areas/y/b.html",
        "fix_leaves": None,
    }
    assert data["fix_would"] == ["rewrite 1 dangling link(s) to what their targets became"]
    code, text = run_on_pty(["doctor"])
    assert code == 0 and text.startswith("NOT healthy: 1 dangling link")
    assert "areas/x/a.html supports areas/x/b.html\n    --fix rewrites it to areas/y/b.html" in text
    assert "doctor --fix would:\n  - rewrite 1 dangling link(s)" in text
    code, text = run_on_pty(["doctor", "--strict"])  # the report inside the error's text
    assert code == 1 and "--fix rewrites it to areas/y/b.html" in text
    assert text.count("memhtml doctor --fix") == 1  # its suggestion said once, as `try:`
    fixed = _report("--fix")
    assert fixed["repairs"]["relinked"] == [
        {
            "src_path": "areas/x/a.html",
            "rel": "supports",
            "from": "areas/x/b.html",
            "to": "areas/y/b.html",
        }
    ]  # what plain doctor showed is what --fix did
    assert fixed["healthy"] is True


def test_a_link_nothing_explains_says_fix_leaves_it(store: Path) -> None:
    git(store, "rm", "-q", "areas/x/b.html")
    git(store, "commit", "-qm", "b is gone")
    (link,) = _report()["dangling"]
    assert link["rewrite_to"] is None
    assert link["fix_leaves"] == "nothing in the index explains the target"
    code, text = run_on_pty(["doctor"])
    assert code == 0 and "--fix leaves it: nothing in the index explains the target" in text
    assert "doctor --fix has nothing to repair here" in text


def test_strict_fails_typed_when_not_healthy(store: Path) -> None:
    git(store, "rm", "-q", "areas/x/b.html")
    git(store, "commit", "-qm", "b is gone")
    code, out = call("doctor", "--strict")
    assert (code, out["code"]) == (1, "ERR_UNHEALTHY")
    assert out["error"] == "the store is not healthy: 1 dangling link"
    assert out["details"]["healthy"] is False and out["details"]["dangling"]  # the whole report
    code, text = run_on_pty(["doctor", "--strict"])
    assert code == 1 and text.startswith("error: the store is not healthy: 1 dangling link")
    assert "  code: ERR_UNHEALTHY" in text and "dangling links (their target is gone):" in text


def test_strict_on_a_store_with_only_format_warnings_is_unhealthy(store: Path) -> None:
    """A warning in a file (here a meta outside the vocabulary, which is ignored) counts
    against healthy, as in the original; --strict names it."""
    page = store / "areas/x/a.html"
    page.write_text(
        page.read_text().replace(
            '<meta name="memhtml-type"',
            '<meta name="memhtml-mood" content="calm">\n<meta name="memhtml-type"',
        )
    )
    git(store, "commit", "-qam", "a meta outside the vocabulary")
    code, out = call("doctor", "--strict")
    assert (code, out["code"]) == (1, "ERR_UNHEALTHY"), out
    assert out["error"] == "the store is not healthy: 1 file with format warnings"
    assert out["details"]["format_warnings"] == 1


def test_strict_validates_files_too(store: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text("<html><head><title>x</title></head><body></body></html>")
    code, out = call("doctor", str(store / "areas/x/a.html"), "--strict")
    assert code == 0 and out["data"]["healthy"] is True
    code, out = call("doctor", str(bad), "--strict")
    assert (code, out["code"]) == (1, "ERR_UNHEALTHY")
    assert out["error"].startswith("1 file of 1 breaks the memory format")


def test_more_than_ten_tasks_in_the_task_inbox_is_crowded(store: Path) -> None:
    for i in range(11):
        call("task", "add", "--title", f"Chore {i}")
    data = _report()
    assert (data["inbox_task_depth"], data["inbox_tasks_crowded"]) == (11, True)
    assert data["inbox_depth"] == 0 and data["healthy"] is False  # tasks counted apart
    code, out = call("doctor", "--strict")
    assert code == 1 and (
        out["error"] == "the store is not healthy: 11 tasks wait in the task inbox (more than 10)"
    )


def test_vector_coverage_under_the_floor_is_unhealthy_only_while_vectors_are_in_use(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHTML_VECTOR_COVERAGE_FLOOR", "0.9")
    monkeypatch.setenv("MEMHTML_EMBED", "off")
    call("write", "--title", "C", "--type", "semantic", "--claim", "C is three.")
    call("write", "--title", "D", "--type", "semantic", "--claim", "D is four.")
    monkeypatch.setenv("MEMHTML_EMBED", "fake")
    data = _report()
    assert data["vector_coverage"] == 0.5 and data["vector_coverage_low"] is True
    assert data["healthy"] is False and "memhtml index embed" in data["suggestions"]
    call("index", "embed")
    data = _report()
    assert data["vector_coverage_low"] is False and data["healthy"] is True


def test_a_stuck_sleep_run_reads_with_the_commands_that_settle_it(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhtml.sleep import runs

    monkeypatch.setenv("MEMHTML_LLM", "off")
    code, out = call("sleep", "run", "--date", "2026-03-10")
    assert code == 0, out
    run_id = out["data"]["run_id"]
    assert _report("--strict")["sleep_runs"] == []  # a night waiting for review is not stuck
    record = runs.load_record(store, run_id)
    assert record is not None
    record.status, record.pid = "running", 999_999_999  # its process died mid-night
    runs.save_record(store, record)
    code, out = call("doctor", "--strict")
    assert (code, out["code"]) == (1, "ERR_UNHEALTHY")
    assert out["error"] == "the store is not healthy: 1 sleep run waiting for someone"
    code, text = run_on_pty(["doctor"])
    assert code == 0 and text.startswith("NOT healthy: 1 sleep run waiting for someone")
    assert f"{run_id} interrupted: its process ended before the night finished" in text
    assert f"  try: memhtml sleep resume {run_id}" in text
    assert "doctor --fix would" not in text  # a stuck night is a person's call, never --fix's


def test_fix_plan_names_a_sleep_merge_cut_short() -> None:
    from memhtml.ops.doctor_checks import fix_plan

    stuck = [
        {"run_id": "2026-03-02", "status": "merge-interrupted"},
        {"run_id": "2026-03-03", "status": "interrupted"},
    ]
    assert fix_plan({"sleep_runs": stuck}) == [
        "finish or undo the sleep merge cut short (2026-03-02)"
    ]
