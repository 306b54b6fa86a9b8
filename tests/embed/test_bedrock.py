"""Cohere Embed v4 over Bedrock, against botocore's Stubber (no network, fake credentials)."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.exceptions import EndpointConnectionError, NoCredentialsError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from memhtml.contracts.errors import ModelUnavailableError
from memhtml.embed import space_id
from memhtml.embed.bedrock import DIM, MODEL_ID, REGION_ENV, BedrockEmbedder


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


class JsonBody:
    """Matches a request body that decodes to the expected JSON (key order free)."""

    def __init__(self, expected: dict[str, Any]) -> None:
        self.expected = expected

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str | bytes) and json.loads(other) == self.expected

    def __hash__(self) -> int:
        return hash(json.dumps(self.expected, sort_keys=True))

    def __repr__(self) -> str:
        return f"JsonBody({self.expected!r})"


def vectors_for(n: int, offset: int = 0) -> list[list[float]]:
    rng = np.random.default_rng(offset)
    return rng.normal(size=(n, DIM)).round(4).tolist()


def response(rows: list[list[float]] | Any) -> dict[str, Any]:
    raw = json.dumps({"id": "x", "embeddings": {"float": rows}, "texts": []}).encode()
    return {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}


def expected(texts: list[str], input_type: str) -> dict[str, Any]:
    return {
        "modelId": MODEL_ID,
        "contentType": "application/json",
        "accept": "application/json",
        "body": JsonBody(
            {
                "texts": texts,
                "input_type": input_type,
                "embedding_types": ["float"],
                "output_dimension": 1024,
            }
        ),
    }


def test_identity():
    embedder = BedrockEmbedder(client=object())
    assert (embedder.model_id, embedder.dim, embedder.batch_size) == (MODEL_ID, 1024, 96)
    assert space_id(embedder) == "cohere.embed-v4:0@1024"


def test_documents_request_shape_and_normalized_rows(client):
    embedder = BedrockEmbedder(client=client)
    rows = vectors_for(2)
    with Stubber(client) as stub:
        stub.add_response("invoke_model", response(rows), expected(["a", "b"], "search_document"))
        out = embedder.embed_documents(["a", "b"])
        stub.assert_no_pending_responses()
    assert out.shape == (2, 1024)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    raw = np.asarray(rows, dtype=np.float32)
    np.testing.assert_allclose(out[0], raw[0] / np.linalg.norm(raw[0]), atol=1e-6)


def test_query_uses_search_query(client):
    embedder = BedrockEmbedder(client=client)
    with Stubber(client) as stub:
        stub.add_response("invoke_model", response(vectors_for(1)), expected(["q"], "search_query"))
        out = embedder.embed_query("q")
        stub.assert_no_pending_responses()
    assert out.shape == (1024,)


def test_two_hundred_texts_take_three_calls(client):
    texts = [f"memory {i}" for i in range(200)]
    embedder = BedrockEmbedder(client=client)
    with Stubber(client) as stub:
        for start, size in ((0, 96), (96, 96), (192, 8)):
            stub.add_response(
                "invoke_model",
                response(vectors_for(size, offset=start)),
                expected(texts[start : start + size], "search_document"),
            )
        out = embedder.embed_documents(texts)
        stub.assert_no_pending_responses()
    assert out.shape == (200, 1024)
    last = np.asarray(vectors_for(8, offset=192)[7], dtype=np.float32)
    np.testing.assert_allclose(out[199], last / np.linalg.norm(last), atol=1e-6)


def test_blank_texts_are_not_sent(client):
    embedder = BedrockEmbedder(client=client)
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model", response(vectors_for(1)), expected(["b"], "search_document")
        )
        out = embedder.embed_documents(["", "b", "  "])
    assert not out[0].any()
    assert not out[2].any()
    assert out[1].any()


def test_empty_batch_makes_no_call(client):
    with Stubber(client):
        assert BedrockEmbedder(client=client).embed_documents([]).shape == (0, 1024)


def test_client_error_is_model_unavailable(client):
    embedder = BedrockEmbedder(client=client)
    with Stubber(client) as stub:
        stub.add_client_error(
            "invoke_model",
            service_error_code="ThrottlingException",
            service_message="slow down",
            http_status_code=429,
        )
        with pytest.raises(ModelUnavailableError) as info:
            embedder.embed_documents(["a"])
    assert info.value.code == "ERR_MODEL_UNAVAILABLE"
    assert info.value.details["aws_code"] == "ThrottlingException"
    assert info.value.suggestions


@pytest.mark.parametrize(
    "rows",
    [
        [[0.1] * 1024],  # one row for two texts
        [[0.1] * 10, [0.1] * 10],  # wrong width
        {"not": "a list"},
    ],
)
def test_bad_response_shape_is_model_unavailable(client, rows):
    embedder = BedrockEmbedder(client=client)
    with Stubber(client) as stub:
        stub.add_response("invoke_model", response(rows))
        with pytest.raises(ModelUnavailableError):
            embedder.embed_documents(["a", "b"])


def test_undecodable_body_is_model_unavailable(client):
    raw = b"<html>gateway</html>"
    embedder = BedrockEmbedder(client=client)
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model",
            {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "text/html"},
        )
        with pytest.raises(ModelUnavailableError):
            embedder.embed_query("a")


@pytest.mark.parametrize(
    "error",
    [NoCredentialsError(), EndpointConnectionError(endpoint_url="https://bedrock.invalid")],
)
def test_transport_errors_are_model_unavailable(client, error):
    # Raised from botocore's own before-call event, where a real failure would surface.
    def fail(**_: Any) -> None:
        raise error

    client.meta.events.register("before-call.bedrock-runtime.InvokeModel", fail)
    with pytest.raises(ModelUnavailableError) as info:
        BedrockEmbedder(client=client).embed_documents(["a"])
    assert isinstance(info.value.__cause__, type(error))


def test_region_comes_from_memhtml_env(monkeypatch):
    monkeypatch.setenv(REGION_ENV, "eu-west-1")
    assert BedrockEmbedder.from_environment().region == "eu-west-1"
    assert BedrockEmbedder.from_environment({}).region is None


def test_client_is_built_lazily_in_the_configured_region():
    embedder = BedrockEmbedder(region="eu-central-1")
    assert embedder._client is None
    assert embedder._get_client().meta.region_name == "eu-central-1"


def test_batch_size_is_capped():
    with pytest.raises(ValueError):
        BedrockEmbedder(client=object(), batch_size=97)
