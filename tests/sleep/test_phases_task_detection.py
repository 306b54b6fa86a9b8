"""task-detection: verbatim evidence, ten a night, self-closing tasks, dismissals that stand."""

from __future__ import annotations

from typing import Any

import pytest

from memhtml.sleep.detected import DETECTED_TASK_CAP, detection_key, key_of, task_path
from tests.sleep.model_script import caller, keyed
from tests.sleep.phase_harness import doc_of, run_phase

PROMISE = "Alice will rotate the staging keys by Friday."


def promise_finder(quote: str | None = None, confidence: float = 0.9) -> Any:
    def answer(key: str, text: str) -> dict[str, Any] | None:
        if "will rotate" not in text:
            return None
        sentence = quote if quote is not None else text.splitlines()[-1]
        return {
            "member_key": key,
            "sentence": sentence,
            "kind": "commitment",
            "confidence": confidence,
        }

    return keyed("memory", answer, "findings")


def open_detected(fixed: Any) -> list[str]:
    return [
        str(p)
        for (p,) in fixed.conn.execute(
            "SELECT path FROM files WHERE memory_type = 'task' AND archived = 0"
            " AND task_status <> 'done' ORDER BY path"
        )
    ]


def test_a_verbatim_commitment_opens_one_task_quoting_it(fixed: Any) -> None:
    src = fixed.write(title="Key rotation", claim=PROMISE)["path"]
    fixed.write(title="Cache", claim="The cache keeps entries for a day.")
    ran = run_phase(fixed, "task-detection", llm=caller(promise_finder()))
    counts = ran.outcome.counts
    assert (counts["candidates"], counts["findings"], counts["tasks_minted"]) == (2, 1, 1)
    (task,) = open_detected(fixed)
    doc = doc_of(fixed, task)
    assert doc.ok and doc.memory_type == "task" and doc.tags[:2] == ("detected", "task-detection")
    assert doc.title == "Confirm the commitment recorded in Key rotation"
    assert PROMISE in doc.body_text and src in doc.body_text
    assert key_of(task) == detection_key("task-detection", f"{src} {PROMISE}")
    # the same finding the next night refreshes the task; nothing new is opened
    again = run_phase(fixed, "task-detection", date="2026-03-03", llm=caller(promise_finder()))
    assert (again.outcome.counts["tasks_refreshed"], again.outcome.counts["tasks_minted"]) == (1, 0)
    assert open_detected(fixed) == [task]
    assert doc_of(fixed, task).updated == "2026-03-03T00:00:00Z"


@pytest.mark.parametrize(
    "quote", ["Alice will rotate the staging keys by Monday.", "Bob promised to rotate keys."]
)
def test_a_quote_not_in_the_file_is_refused_and_nothing_is_written(fixed: Any, quote: str) -> None:
    fixed.write(title="Key rotation", claim=PROMISE)
    ran = run_phase(fixed, "task-detection", llm=caller(promise_finder(quote)))
    assert ran.outcome.counts["tasks_unverified"] == 1
    assert ran.commit_sha is None and open_detected(fixed) == []


def test_below_the_floor_opens_nothing(fixed: Any) -> None:
    fixed.write(title="Key rotation", claim=PROMISE)
    ran = run_phase(fixed, "task-detection", llm=caller(promise_finder(confidence=0.5)))
    assert ran.outcome.counts["below_floor"] == 1 and open_detected(fixed) == []


def test_ten_a_night_across_detectors_then_the_finding_vanishes_and_the_task_closes(
    fixed: Any,
) -> None:
    for i in range(12):
        fixed.write(title=f"Rotation {i}", claim=f"Team {i} will rotate the keys of vault {i}.")
    ran = run_phase(fixed, "task-detection", llm=caller(promise_finder()))
    counts = ran.outcome.counts
    assert (counts["tasks_minted"], counts["tasks_capped"]) == (DETECTED_TASK_CAP, 2)
    assert len(open_detected(fixed)) == DETECTED_TASK_CAP
    # an earlier phase of the same run that opened 4 leaves room for 6
    earlier = [{"phase": "edge-typing", "counts": {"tasks_minted": 4}}]
    from memhtml.sleep.detected import Detections
    from tests.sleep.phase_harness import make_context

    ctx = make_context(fixed, date="2026-03-03")
    ctx.results = earlier
    assert Detections(ctx, "task-detection").remaining() == DETECTED_TASK_CAP - 4
    # the next night the model finds nothing: every open task of the detector closes
    quiet = run_phase(
        fixed, "task-detection", date="2026-03-03", llm=caller(lambda _call: {"findings": []})
    )
    assert quiet.outcome.counts["tasks_closed"] == DETECTED_TASK_CAP
    assert open_detected(fixed) == []
    archived = fixed.conn.execute(
        "SELECT count(*) FROM files WHERE memory_type = 'task' AND archived = 1"
        " AND task_status = 'done'"
    ).fetchone()[0]
    assert archived == DETECTED_TASK_CAP


def test_a_person_closing_a_detected_task_dismisses_the_finding(fixed: Any) -> None:
    fixed.write(title="Key rotation", claim=PROMISE)
    run_phase(fixed, "task-detection", llm=caller(promise_finder()))
    (task,) = open_detected(fixed)
    fixed.task_status(task, "done")
    ran = run_phase(fixed, "task-detection", date="2026-03-03", llm=caller(promise_finder()))
    assert ran.outcome.counts["tasks_dismissed"] == 1 and ran.outcome.counts["tasks_minted"] == 0
    assert open_detected(fixed) == []


def test_a_refused_batch_closes_nothing(fixed: Any) -> None:
    from memhtml.contracts.errors import ModelUnavailableError

    fixed.write(title="Key rotation", claim=PROMISE)
    run_phase(fixed, "task-detection", llm=caller(promise_finder()))
    down = caller(ModelUnavailableError("connection refused"))
    ran = run_phase(fixed, "task-detection", date="2026-03-03", llm=down)
    assert ran.outcome.counts["skipped"] == 1 and ran.outcome.counts["tasks_closed"] == 0
    assert len(open_detected(fixed)) == 1 and ran.commit_sha is None
    assert "ERR_MODEL_UNAVAILABLE" in (ran.outcome.detail or "")


def test_task_paths_stay_within_the_slug_budget() -> None:
    path = task_path("det-0123456789ab", "x" * 300)
    assert len(path.rsplit("/", 1)[-1]) <= 80 + len(".html")
    assert key_of(path) == "det-0123456789ab"
