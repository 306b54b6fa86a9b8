"""The registry: env selection, off by default, unknown names, caching, and lazy imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memhtml.contracts.errors import InvalidFlagError, ModelUnavailableError
from memhtml.llm import available, get_model, register, unregister
from memhtml.llm.bedrock import DEFAULT_MODEL, BedrockModel
from memhtml.llm.fake import FakeModel
from memhtml.llm.openai import OpenAIModel
from memhtml.llm.registry import clear_cache


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    for var in ("MEMHTML_LLM", "MEMHTML_LLM_MODEL", "MEMHTML_LLM_BASE_URL", "MEMHTML_AWS_REGION"):
        monkeypatch.delenv(var, raising=False)
    clear_cache()
    yield
    clear_cache()


def test_builtin_names():
    assert available() == ["bedrock", "fake", "openai"]


def test_off_is_the_default(monkeypatch):
    assert get_model() is None
    monkeypatch.setenv("MEMHTML_LLM", " OFF ")
    assert get_model() is None
    monkeypatch.setenv("MEMHTML_LLM", "")
    assert get_model() is None


def test_env_selects_and_an_explicit_name_wins(monkeypatch):
    monkeypatch.setenv("MEMHTML_LLM", "fake")
    assert isinstance(get_model(), FakeModel)
    assert get_model("off") is None
    assert get_model() is get_model("Fake")  # built once, reused


def test_unknown_name_is_an_invalid_flag():
    with pytest.raises(InvalidFlagError) as info:
        get_model("gpt-banana")
    assert info.value.code == "ERR_INVALID_FLAG"
    assert info.value.details["available"] == ["bedrock", "fake", "openai", "off"]


def test_bedrock_reads_its_environment(monkeypatch):
    model = get_model("bedrock")
    assert isinstance(model, BedrockModel) and model.model_id == DEFAULT_MODEL
    monkeypatch.setenv("MEMHTML_LLM_MODEL", "anthropic.claude-x")
    monkeypatch.setenv("MEMHTML_AWS_REGION", "eu-west-1")
    clear_cache()
    model = get_model("bedrock")
    assert isinstance(model, BedrockModel)
    assert (model.model_id, model.region) == ("anthropic.claude-x", "eu-west-1")


def test_openai_needs_a_model_name(monkeypatch):
    with pytest.raises(ModelUnavailableError):
        get_model("openai")
    monkeypatch.setenv("MEMHTML_LLM_MODEL", "qwen3:8b")
    monkeypatch.setenv("MEMHTML_LLM_BASE_URL", "http://127.0.0.1:8080/v1/")
    model = get_model("openai")
    assert isinstance(model, OpenAIModel)
    assert (model.model_id, model.base_url) == ("qwen3:8b", "http://127.0.0.1:8080/v1")


def test_a_test_registers_a_scripted_fake():
    scripted = FakeModel([{"groups": []}])
    register("scripted", lambda: scripted)
    try:
        assert get_model("scripted") is scripted
    finally:
        unregister("scripted")
    with pytest.raises(ValueError):
        register("off", FakeModel)


def test_importing_the_seam_loads_no_sdk():
    code = (
        "import sys, memhtml.llm, memhtml.llm.bedrock, memhtml.llm.openai; "
        "print(','.join(m for m in ('boto3', 'botocore') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
