"""What a person reads of a night: the plan's verdict, the committed report, the terminal
views, and a night whose model calls all failed said as degraded (issue 30 item 4;
issue 32 item 6, sleep part)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_night_on_the_day_memories_were_written_never_stamps_updated_before_created(
    repo: Path,
) -> None:
    from memhtml.html import parse_memory

    _two_pairs(repo)  # written at 10:00 and 11:00 on 2026-03-01
    with memhtml.open(repo, embedder="fake", now="2026-03-01T12:00:00Z") as c:
        night = engine.run(c, date="2026-03-01", progress=False)  # its instant is midnight
        changed = {f["path"] for x in review(c, night["run_id"])["changes"] for f in x["files"]}
    assert any(p.endswith(".html") for p in changed)
    for path in changed:
        if not path.endswith(".html") or path.startswith(".memhtml/"):
            continue
        doc = parse_memory(git(repo, "show", f"{night['head_sha']}:{path}").encode())
        assert doc.updated >= doc.created, (path, doc.created, doc.updated)


_INSTANTS = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")
)


@given(created=_INSTANTS, updated=_INSTANTS)
@settings(max_examples=60, deadline=None)
def test_set_meta_never_puts_updated_before_created(created: str, updated: str) -> None:
    from memhtml.html import parse_memory, set_meta
    from tests.sleep.phase_harness import memory_bytes

    text = memory_bytes("T", "A claim.", created=created).decode()
    doc = parse_memory(set_meta(text, "memhtml-updated", updated).encode())
    assert doc.updated == max(created, updated)


def test_a_new_night_mentions_an_unfinished_one_and_how_to_resume_it(corpus: Any) -> None:
    from memhtml.sleep.phase import PhaseOutcome, SleepContext

    from .engine_helpers import registry, seed

    seed(corpus)

    def boom(_ctx: SleepContext) -> PhaseOutcome:
        raise RuntimeError("the disk is a lie")

    first = engine.run(corpus, date="2026-03-02", registry=registry(integrity=boom), progress=False)
    assert first["status"] == "failed" and first["unfinished_runs"] == []
    second = engine.run(corpus, date="2026-03-03", progress=False)
    assert [r["run_id"] for r in second["unfinished_runs"]] == [first["run_id"]]
    assert second["unfinished_runs"][0]["resume"] == f"memhtml sleep resume {first['run_id']}"
    assert f"memhtml sleep resume {first['run_id']}" in views.human_run(second)


def test_a_prompt_member_carries_the_claim_once() -> None:
    from memhtml.sleep.phases._model import member_text

    claim = "Deploys to checkout-api happen on Tuesdays."
    body = f"{claim} Ana said so in the retro."
    text = member_text("Deploy window", claim, body, limit=10_000)
    assert text.count(claim) == 1 and "Ana said so" in text and "Deploy window" in text
    assert member_text(claim, claim, limit=10_000) == claim


@given(st.lists(st.text(alphabet="ab .", min_size=1, max_size=12), max_size=5))
@settings(max_examples=80, deadline=None)
def test_member_text_keeps_every_text_and_drops_only_what_another_part_holds(
    parts: list[str],
) -> None:
    from memhtml.sleep.phases._model import collapse, member_text

    out = member_text(*parts, limit=100_000)
    for p in parts:
        assert collapse(p) in out  # nothing a part said is lost
    lines = out.split("\n") if out else []
    assert len(lines) == len(set(lines))  # and nothing is said twice over


@given(st.text(alphabet="abc ,.", max_size=140), st.integers(min_value=5, max_value=100))
@settings(max_examples=80, deadline=None)
def test_a_model_title_is_cut_at_a_word(text: str, limit: int) -> None:
    from memhtml.sleep.phases._model import clean_title, collapse

    title = clean_title(text, limit=limit)
    assert len(title) <= limit
    whole = collapse(text).rstrip(".!?;: ")
    assert whole.startswith(title)
    rest = whole[len(title) :]
    words = whole.split(" ")
    if rest and len(words[0]) <= limit:  # cut: at a word boundary
        assert rest[0] in " ,;:-—" or title[-1:] in " ,;:-—" or title == ""


def test_a_decay_is_a_change_with_its_reason_and_can_be_refused(repo: Path) -> None:
    with memhtml.open(repo, embedder="fake", now="2026-01-01T10:00:00Z") as c:
        old = c.write(title="Old note", claim="The staging cluster runs in eu-west-1.")["path"]
    with memhtml.open(repo, embedder="fake", now="2026-03-02T03:00:00Z") as c:
        night = engine.run(c, date="2026-03-02", progress=False)
        decays = [x for x in review(c, night["run_id"])["changes"] if x["kind"] == "decay"]
        assert [d["files"][0]["path"] for d in decays] == [old]
        reason = decays[0]["reason"]
        assert reason["last_updated"].startswith("2026-01-01") and " -> " in reason["confidence"]
        assert any(ln.startswith("+confidence: ") for ln in decays[0]["files"][0]["diff"])
        before = (repo / old).read_text()
        merge(c, night["run_id"], fixture_gate=passing_fixture_gate, refuse=decays[0]["id"])
        assert (repo / old).read_text() == before  # refused: the memory keeps its confidence
