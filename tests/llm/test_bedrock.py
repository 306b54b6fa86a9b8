"""Claude over Bedrock Converse with a forced tool, against botocore's Stubber (no network)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from memhtml.contracts.errors import LlmContractViolationError, ModelUnavailableError
from memhtml.llm import Answer, ModelCaller, Refused
from memhtml.llm.bedrock import DEFAULT_MODEL, BedrockModel
from tests.llm.schemas import BAD, GOOD, Verdict

TOOL = "emit_verdict"
ASK: dict[str, Any] = {
    "system": "You judge pairs.",
    "schema": Verdict,
    "tool_name": TOOL,
    "tool_description": "Emit the verdict.",
}


@pytest.fixture(autouse=True)
def _fake_aws(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "absent-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "absent-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def client():
    return boto3.client("bedrock-runtime", region_name="us-east-1")


def tool_answer(payload: Any, *, name: str = TOOL, stop: str = "tool_use") -> dict[str, Any]:
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": name, "input": payload}}],
            }
        },
        "stopReason": stop,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 7},
    }


def expected(prompt: str) -> dict[str, Any]:
    return {
        "modelId": DEFAULT_MODEL,
        "system": [{"text": "You judge pairs."}],
        "messages": [{"role": "user", "content": [{"text": prompt}]}],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": TOOL,
                        "description": "Emit the verdict.",
                        "inputSchema": {"json": Verdict.model_json_schema()},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": TOOL}},
        },
        "inferenceConfig": {"maxTokens": 4096},
    }


def test_a_forced_tool_call_answers_with_the_schema(client):
    model = BedrockModel(client=client)
    with Stubber(client) as stub:
        stub.add_response("converse", tool_answer(GOOD), expected("judge m1, m2"))
        out = model.generate("judge m1, m2", **ASK)
        stub.assert_no_pending_responses()
    assert isinstance(out, Verdict) and out.keys == ["m1", "m2"]


def test_a_schema_violating_answer_is_retried_then_refused(client):
    caller = ModelCaller(BedrockModel(client=client), backoff_s=0)
    with Stubber(client) as stub:
        for _ in range(3):
            stub.add_response("converse", tool_answer(BAD), expected("p"))
        out = caller.call("p", **ASK)
        stub.assert_no_pending_responses()
    assert isinstance(out, Refused)
    assert (out.code, out.attempts, caller.budget.used) == ("ERR_LLM_CONTRACT", 3, 3)


def test_a_bad_answer_then_a_good_one(client):
    caller = ModelCaller(BedrockModel(client=client), backoff_s=0)
    with Stubber(client) as stub:
        stub.add_response("converse", tool_answer(BAD))
        stub.add_response("converse", tool_answer(GOOD))
        out = caller.call("p", **ASK)
    assert isinstance(out, Answer) and out.attempts == 2


@pytest.mark.parametrize(
    "response",
    [
        tool_answer(GOOD, name="another_tool"),
        tool_answer(GOOD, stop="max_tokens"),
        {
            "output": {"message": {"role": "assistant", "content": [{"text": "I refuse."}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        },
    ],
)
def test_an_answer_without_the_tool_call_is_a_contract_violation(client, response):
    with Stubber(client) as stub:
        stub.add_response("converse", response)
        with pytest.raises(LlmContractViolationError):
            BedrockModel(client=client).generate("p", **ASK)


def test_throttling_is_retryable_then_answered(client):
    caller = ModelCaller(BedrockModel(client=client), backoff_s=0)
    with Stubber(client) as stub:
        stub.add_client_error(
            "converse", service_error_code="ThrottlingException", http_status_code=429
        )
        stub.add_response("converse", tool_answer(GOOD))
        out = caller.call("p", **ASK)
    assert isinstance(out, Answer) and out.attempts == 2


def test_access_denied_is_refused_without_a_retry(client):
    caller = ModelCaller(BedrockModel(client=client), backoff_s=0)
    with Stubber(client) as stub:
        stub.add_client_error(
            "converse",
            service_error_code="AccessDeniedException",
            service_message="no access to the model",
            http_status_code=403,
        )
        out = caller.call("p", **ASK)
        stub.assert_no_pending_responses()
    assert isinstance(out, Refused) and out.code == "ERR_MODEL_UNAVAILABLE"
    assert out.attempts == 1
    assert out.details["aws_code"] == "AccessDeniedException"
    assert out.details["retryable"] is False


def test_a_client_error_surfaces_as_model_unavailable(client):
    with Stubber(client) as stub:
        stub.add_client_error("converse", service_error_code="ValidationException")
        with pytest.raises(ModelUnavailableError) as info:
            BedrockModel(client=client).generate("p", **ASK)
    assert info.value.suggestions and info.value.details["model"] == DEFAULT_MODEL


def test_an_unreachable_endpoint_is_retryable(client):
    def fail(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://bedrock.invalid")

    client.meta.events.register("before-call.bedrock-runtime.Converse", fail)
    with pytest.raises(ModelUnavailableError) as info:
        BedrockModel(client=client).generate("p", **ASK)
    assert info.value.details["retryable"] is True


def test_configuration_and_the_lazy_client():
    model = BedrockModel.from_environment(
        {"MEMHTML_LLM_MODEL": "anthropic.claude-y", "MEMHTML_AWS_REGION": "eu-central-1"}
    )
    assert (model.model_id, model.region, model._client) == (
        "anthropic.claude-y",
        "eu-central-1",
        None,
    )
    assert model._get_client().meta.region_name == "eu-central-1"
    assert BedrockModel.from_environment({"MEMHTML_LLM_TIMEOUT": "30"}).timeout_s == 30.0
