"""The seam in the sleep engine: off by default, a named model bound, one budget per run."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from memhtml.cli.main import run as cli
from memhtml.contracts.errors import InvalidFlagError
from memhtml.llm import Answer, BudgetExhausted, ModelCaller, register, unregister
from memhtml.llm.fake import MODEL_ID, FakeModel
from memhtml.llm.registry import clear_cache
from memhtml.sleep import engine
from memhtml.sleep.phase import PhaseOutcome, SleepContext
from tests.llm.schemas import GOOD, Verdict
from tests.sleep.engine_helpers import DATE, StandIn, registry, seed

MODEL_PHASES = ("edge-typing", "arc-synthesis", "compress", "trace-consolidation", "task-detection")


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("MEMHTML_LLM", raising=False)
    clear_cache()
    yield
    clear_cache()


def real_model_phases() -> dict[str, Any]:
    """Stand-ins for the deterministic phases, the real (still stub) model phases."""
    reg = registry()
    for name in MODEL_PHASES:
        reg[name] = engine.load_phase(name, None)
    return reg


def night(corpus: Any, reg: dict[str, Any], **options: Any) -> dict[str, Any]:
    return engine.run(corpus, date=DATE, registry=reg, progress=False, **options)


def by_phase(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["phase"]: p for p in data["phases"]}


def test_off_by_default_skips_the_model_phases_as_before(corpus: Any) -> None:
    seed(corpus)
    data = night(corpus, real_model_phases())
    phases = by_phase(data)
    for name in MODEL_PHASES:
        assert phases[name]["status"] == "skipped"
        assert "MEMHTML_LLM=off" in phases[name]["detail"]
    assert (data["llm_model"], data["llm_calls"], data["llm_capped"]) == (None, 0, 0)


def test_the_environment_binds_the_fake_and_the_model_phases_run(
    corpus: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(corpus)
    monkeypatch.setenv("MEMHTML_LLM", "fake")
    data = night(corpus, real_model_phases())
    phases = by_phase(data)
    # The unscripted fake answers every schema's defaults: empty verdicts, no findings,
    # an empty arc plan. The phases ran and judged; nothing was proposed, nothing written.
    for name in ("edge-typing", "arc-synthesis", "compress", "task-detection"):
        assert phases[name]["status"] == "ok", phases[name]
        assert phases[name]["commit_sha"] is None
    assert phases["task-detection"]["counts"]["candidates"] == 4
    assert phases["task-detection"]["llm_calls"] == 1
    # no trace plane in this root: ok, nothing read, and it says why
    assert phases["trace-consolidation"]["status"] == "ok"
    assert "trace index" in phases["trace-consolidation"]["detail"]
    assert data["llm_model"] == MODEL_ID and data["llm_calls"] >= 2
    assert night(corpus, real_model_phases(), llm="off")["llm_model"] is None


def test_an_unknown_model_name_is_refused_before_a_branch_exists(corpus: Any) -> None:
    seed(corpus)
    with pytest.raises(InvalidFlagError):
        night(corpus, registry(), llm="gpt-banana")
    assert not (corpus.root / ".memhtml" / "sleep").exists() or not list(
        (corpus.root / ".memhtml" / "sleep").glob("*.json")
    )


def test_phases_share_one_budget_through_the_caller(corpus: Any) -> None:
    seed(corpus)
    script = FakeModel(lambda _call: GOOD)
    register("scripted", lambda: script)

    def asks(n: int) -> Any:
        def body(ctx: SleepContext) -> PhaseOutcome:
            assert isinstance(ctx.llm, ModelCaller)
            got = [
                ctx.llm.call(
                    f"pair {i}",
                    system="s",
                    schema=Verdict,
                    tool_name="emit_verdict",
                    tool_description="d",
                )
                for i in range(n)
            ]
            assert all(isinstance(g, Answer | BudgetExhausted) for g in got)
            return PhaseOutcome()

        return body

    reg = registry(
        edge_typing=StandIn("edge-typing", asks(2), needs_model=True),
        arc_synthesis=StandIn("arc-synthesis", asks(3), needs_model=True),
        compress=StandIn("compress", asks(1), needs_model=True),
    )
    try:
        data = night(corpus, reg, llm="scripted", max_llm_calls=3)
    finally:
        unregister("scripted")
    phases = by_phase(data)
    assert [
        (phases[p]["llm_calls"], phases[p]["llm_capped"]) for p in ("edge-typing", "arc-synthesis")
    ] == [
        (2, 0),
        (1, 2),
    ]
    assert phases["compress"]["status"] == "skipped" and "budget" in phases["compress"]["detail"]
    assert (data["llm_calls"], data["llm_capped"]) == (3, 2)
    assert len(script.calls) == 3


def call(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = cli(list(argv), stdout=out)
    return code, json.loads(out.getvalue())


def test_the_cli_flag(corpus: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(corpus)
    monkeypatch.setenv("MEMHTML_ROOT", str(corpus.root))
    monkeypatch.setenv("MEMHTML_NOW", f"{DATE}T10:00:00Z")
    code, out = call("sleep", "run", "--llm", "nonsense")
    assert (code, out["code"]) == (2, "ERR_INVALID_FLAG")
    code, out = call("sleep", "run", "--dry-run", "--llm", "fake", "--phases", "edge-typing")
    assert code == 0, out
    assert out["data"]["llm_model"] == MODEL_ID
    assert by_phase(out["data"])["edge-typing"]["status"] == "ok"  # a dry run: counted, not asked


def test_sleep_plan_binds_a_model_and_the_model_phases_count(
    corpus: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(corpus)
    monkeypatch.setenv("MEMHTML_ROOT", str(corpus.root))
    code, out = call("sleep", "plan")
    assert code == 0
    off = by_phase(out["data"])
    assert off["task-detection"]["would_run"] is False
    assert "MEMHTML_LLM=off" in off["task-detection"]["reason"]
    code, out = call("sleep", "plan", "--llm", "fake")
    assert code == 0, out
    on = by_phase(out["data"])
    assert on["task-detection"]["would_run"] is True
    assert on["task-detection"]["counts"]["candidates"] == 4
    assert "verdicts" in on["edge-typing"]["unknown"]
