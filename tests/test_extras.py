"""Optional extras: a Bedrock backend without boto3 refuses, naming the extra to install.

boto3 is in the `bedrock` extra (and in `dev`, so the stubbed Bedrock tests run
in CI); here it is made unimportable (`sys.modules["boto3"] = None`, a
third-party module, not our code) to see what a user without the extra sees.
The same refusal is checked end to end, in a venv without boto3 at all, by
tests/test_wheel.py.
"""

from __future__ import annotations

import sys

import pytest

from memhtml.contracts.errors import ModelUnavailableError

INSTALL = "pip install 'memhtml[bedrock]'"


@pytest.fixture
def no_boto3(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("boto3", "botocore", "botocore.config", "botocore.exceptions"):
        monkeypatch.setitem(sys.modules, name, None)


def test_the_bedrock_embedder_names_the_extra(no_boto3: None) -> None:
    from memhtml.embed.bedrock import BedrockEmbedder

    with pytest.raises(ModelUnavailableError) as info:
        BedrockEmbedder(region="us-east-1").embed_query("a query")
    err = info.value
    assert err.code == "ERR_MODEL_UNAVAILABLE"
    assert INSTALL in err.message and "'bedrock' extra" in err.message
    assert err.suggestions[0] == INSTALL
    assert err.details["extra"] == "bedrock" and err.details["missing"] == "boto3"


def test_the_bedrock_model_names_the_extra_and_is_not_retried(no_boto3: None) -> None:
    from memhtml.llm.bedrock import BedrockModel
    from tests.llm.schemas import Verdict

    with pytest.raises(ModelUnavailableError) as info:
        BedrockModel().generate(
            "p", system="s", schema=Verdict, tool_name="t", tool_description="d"
        )
    err = info.value
    assert INSTALL in err.message and err.suggestions[0] == INSTALL
    assert err.details["retryable"] is False


def test_the_registries_refuse_bedrock_when_it_is_built(no_boto3: None) -> None:
    """By name, the refusal comes when the backend is built, before any call."""
    from memhtml.embed import registry as embedders
    from memhtml.llm import registry as models

    for registry, get in ((embedders, embedders.get_embedder), (models, models.get_model)):
        registry.clear_cache()
        with pytest.raises(ModelUnavailableError) as info:
            get("bedrock")
        assert info.value.suggestions[0] == INSTALL
        assert info.value.details["missing"] == "boto3"
        registry.clear_cache()


def test_with_boto3_the_registry_builds_bedrock_without_importing_it() -> None:
    """The check looks boto3 up; importing it (hundreds of ms) waits for the first call."""
    import subprocess

    code = (
        "import sys; from memhtml.embed import get_embedder; from memhtml.llm import get_model;"
        "get_embedder('bedrock'); get_model('bedrock'); print('boto3' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_live_gate_preflight_says_which_extra(no_boto3: None) -> None:
    from memhtml.eval.gate import live_preflight

    reason = live_preflight()
    assert reason is not None and INSTALL in reason


def test_extras_are_declared_where_the_code_needs_them() -> None:
    """pyproject: boto3 only in the bedrock extra (and dev); mcp pinned to the 2.x major."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads(
        (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    )["project"]
    core = [d.split(">")[0].split("=")[0].split("<")[0].lower() for d in project["dependencies"]]
    assert "boto3" not in core and "gitpython" not in core
    assert "mcp>=2.1,<3" in project["dependencies"]
    extras = project["optional-dependencies"]
    assert extras["bedrock"] == ["boto3>=1.34"]
    assert "boto3>=1.34" in extras["dev"]
