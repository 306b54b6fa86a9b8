"""What a person reads of a night: the plan's verdict, the committed report, the terminal
views, and a night whose model calls all failed said as degraded (issue 30 item 4;
issue 32 item 6, sleep part)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import memhtml
from memhtml.cli.handlers import sleep as views
from memhtml.contracts.errors import ModelUnavailableError
from memhtml.llm import CallBudget, ModelCaller
from memhtml.llm.fake import FakeModel
from memhtml.sleep import engine
from memhtml.sleep.merge import merge
from memhtml.sleep.plan import plan
from memhtml.sleep.review import review

from .engine_helpers import git
from .test_engine_merge import passing_fixture_gate
from .test_refuse import _two_pairs


def test_plan_names_the_signals_behind_its_verdict(repo: Path) -> None:
    _two_pairs(repo)
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        ahead = plan(c)
        assert ahead["verdict"] == "would-change"
        assert "dedup-merge: near 2" in ahead["signals"]
        text = views.human_plan(ahead)
        assert "would-change" in text and "because dedup-merge: near 2" in text
        night = engine.run(c, date="2026-03-02", progress=False)
        merge(c, night["run_id"], fixture_gate=passing_fixture_gate)
        after = plan(c)
        assert after["verdict"] == "nothing-to-do", after["signals"]
        assert after["signals"] == []
        assert "nothing-to-do" in views.human_plan(after)


def test_the_report_lists_every_change_with_its_reason_and_only_nonzero_counts(
    repo: Path,
) -> None:
    paths = _two_pairs(repo)
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        night = engine.run(c, date="2026-03-02", progress=False)
        data = review(c, night["run_id"])
    report = git(repo, "show", f"{night['head_sha']}:.memhtml/sleep/2026-03-02.html")
    for change in data["changes"]:
        assert f'id="{change["id"]}"' in report
    assert f"fold {paths['a2']} into {paths['a1']}" in report
    assert "survivor_rule" in report and "cosine" in report  # the reason, not just the file
    assert '<data value="0">' not in report  # zero counts say nothing
    assert "<style>" in report  # styled like the review page


def test_review_on_a_terminal_reads_like_git_log_p(repo: Path) -> None:
    paths = _two_pairs(repo)
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        night = engine.run(c, date="2026-03-02", progress=False)
        data = review(c, night["run_id"])
        fold = next(x for x in data["changes"] if paths["a2"] in x["summary"])
        text = views.human_review(data)
        assert f"change {fold['id']}" in text
        assert "+link supersedes: archive/2026/" + paths["a2"] in text
        assert "survivor_rule: the older copy survives" in text
        assert "--refuse ID" in text
        out = merge(c, night["run_id"], fixture_gate=passing_fixture_gate, refuse=fold["id"])
        merged = views.human_merge(out)
        assert f"refused {fold['id']}" in merged and "corpus gate: passed=True" in merged


def _always_down(_call: Any) -> Any:
    return ModelUnavailableError("the model endpoint is down", details={"retryable": False})


def test_a_night_whose_every_model_call_failed_is_degraded(corpus: Any) -> None:
    from .engine_helpers import seed

    seed(corpus)
    corpus.write(title="Deploy", type="procedural", claim="Deploys happen on Tuesdays.")
    caller = ModelCaller(FakeModel(_always_down), CallBudget(None), retries=0, backoff_s=0)
    night = engine.run(corpus, date="2026-03-02", progress=False, llm=caller)
    assert night["llm_calls"] > 0  # the model phases did ask
    assert night["degraded"] is True
    assert "every model call failed" in night["degraded_reason"]
    assert "degraded:" in views.human_run(night)


def test_a_night_without_a_model_is_not_degraded(corpus: Any) -> None:
    from .engine_helpers import seed

    seed(corpus)
    night = engine.run(corpus, date="2026-03-02", progress=False)
    assert night["degraded"] is False and night["degraded_reason"] is None
