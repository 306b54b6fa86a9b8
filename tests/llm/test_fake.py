"""The fake model: scripted answers, recorded calls, no network."""

from __future__ import annotations

import pytest

from memhtml.contracts.errors import LlmContractViolationError, ModelUnavailableError
from memhtml.llm.fake import MODEL_ID, FakeCall, FakeModel
from tests.llm.schemas import BAD, GOOD, Empty, Verdict


def ask(model: FakeModel, tool: str = "emit_verdict", schema: type = Verdict, prompt: str = "p"):
    return model.generate(
        prompt, system="sys", schema=schema, tool_name=tool, tool_description="desc"
    )


def test_a_queue_answers_in_order_and_records_every_call() -> None:
    model = FakeModel([GOOD, '{"keys": [], "relation": "supports", "confidence": 0.5}'])
    assert ask(model, prompt="first").relation == "contradicts"
    assert ask(model, prompt="second").relation == "supports"
    assert model.calls == [
        FakeCall("first", "sys", Verdict, "emit_verdict", "desc"),
        FakeCall("second", "sys", Verdict, "emit_verdict", "desc"),
    ]
    with pytest.raises(LlmContractViolationError, match="no answer left"):
        ask(model)


def test_a_mapping_scripts_each_tool() -> None:
    model = FakeModel({"emit_verdict": [GOOD], "emit_groups": {"groups": [["m1", "m2"]]}})
    assert ask(model, "emit_groups", Empty).groups == [["m1", "m2"]]
    assert ask(model).keys == ["m1", "m2"]
    with pytest.raises(LlmContractViolationError, match="no script for tool"):
        ask(model, "emit_other")


def test_a_callable_sees_the_call() -> None:
    model = FakeModel(lambda call: {**GOOD, "relation": call.prompt})
    assert ask(model, prompt="refines").relation == "refines"


def test_scripted_failures() -> None:
    model = FakeModel([BAD, ModelUnavailableError("down")])
    with pytest.raises(LlmContractViolationError):
        ask(model)
    with pytest.raises(ModelUnavailableError):
        ask(model)
    assert len(model.calls) == 2


def test_with_no_script_it_answers_the_schema_defaults() -> None:
    model = FakeModel()
    assert model.model_id == MODEL_ID
    assert ask(model, "emit_groups", Empty) == Empty()
    with pytest.raises(LlmContractViolationError):
        ask(model)  # Verdict has required fields
