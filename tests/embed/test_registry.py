"""The registry: env selection, off, unknown names, caching, and lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memhtml.contracts.errors import InvalidFlagError, ModelUnavailableError
from memhtml.embed import available, get_embedder, register, unregister
from memhtml.embed.fake import FakeEmbedder
from memhtml.embed.registry import clear_cache


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def test_builtin_names():
    assert available() == ["bedrock", "fake", "local", "openai"]


def test_env_selects_the_embedder(monkeypatch):
    monkeypatch.setenv("MEMHTML_EMBED", "fake")
    embedder = get_embedder()
    assert isinstance(embedder, FakeEmbedder)


def test_explicit_name_wins_over_env(monkeypatch):
    monkeypatch.setenv("MEMHTML_EMBED", "off")
    assert isinstance(get_embedder("fake"), FakeEmbedder)


@pytest.mark.parametrize("value", ["off", "OFF", " off "])
def test_off_means_no_embedder(monkeypatch, value):
    monkeypatch.setenv("MEMHTML_EMBED", value)
    assert get_embedder() is None
    assert get_embedder("off") is None


def test_default_is_local(monkeypatch):
    monkeypatch.delenv("MEMHTML_EMBED", raising=False)
    embedder = get_embedder()
    assert embedder is not None
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2:int8"


def test_unknown_name_lists_the_choices():
    with pytest.raises(InvalidFlagError) as info:
        get_embedder("word2vec")
    assert info.value.code == "ERR_INVALID_FLAG"
    assert info.value.details["available"] == ["bedrock", "fake", "local", "openai", "off"]
    assert "fake" in str(info.value)


def test_instances_are_cached_per_name():
    assert get_embedder("fake") is get_embedder("fake")


def test_register_a_custom_factory():
    built = []

    def factory():
        built.append(1)
        return FakeEmbedder(dim=16)

    register("tiny", factory)
    try:
        assert "tiny" in available()
        first = get_embedder("tiny")
        assert first is not None
        assert first.dim == 16
        assert get_embedder("TINY") is first
        assert built == [1]
    finally:
        unregister("tiny")
    assert "tiny" not in available()


def test_off_cannot_be_registered():
    with pytest.raises(ValueError):
        register("off", FakeEmbedder)


def test_factory_failure_propagates_and_is_not_cached():
    calls = []

    def broken():
        calls.append(1)
        raise ModelUnavailableError("gone")

    register("broken", broken)
    try:
        for _ in range(2):
            with pytest.raises(ModelUnavailableError):
                get_embedder("broken")
        assert calls == [1, 1]
    finally:
        unregister("broken")


def test_importing_the_package_loads_no_runtime():
    code = (
        "import sys, json, memhtml.embed, memhtml.embed.registry;"
        "heavy = ['onnxruntime', 'tokenizers', 'boto3', 'botocore', 'numpy'];"
        "print(json.dumps([m for m in heavy if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_building_the_local_embedder_does_not_load_the_runtime():
    code = (
        "import sys, json; from memhtml.embed import get_embedder;"
        "e = get_embedder('local');"
        "print(json.dumps([m for m in ['onnxruntime', 'tokenizers'] if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
