"""Cohere Embed v4 on Amazon Bedrock, 1,024 dimensions, through boto3 ``invoke_model``.

Documents and queries are sent with different ``input_type`` values
(``search_document`` / ``search_query``): Cohere trains them as two sides of
one retrieval space, and sending both as documents quietly degrades every
cosine. A call carries at most 96 texts, Cohere's per-request ceiling.

boto3 (the ``bedrock`` extra) is imported on first use, never at module import;
without it the first call refuses with ``ERR_MODEL_UNAVAILABLE`` naming the
extra. Credentials come from
the default AWS chain; the region from the constructor (the registry passes
``MEMHTML_AWS_REGION``) or else the default chain. Every failure to reach or
understand the service surfaces as ``ModelUnavailableError``; the caller
decides whether that fails its pass (the indexer keeps the lexical index).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import ModelUnavailableError
from memhtml.embed.base import embed_in_batches
from memhtml.seams import extra_missing, require_extra

if TYPE_CHECKING:
    from memhtml.embed.base import FloatArray

MODEL_ID = "cohere.embed-v4:0"
DIM = 1024
MAX_BATCH = 96
REGION_ENV = "MEMHTML_AWS_REGION"
DOCUMENT = "search_document"
QUERY = "search_query"
_HINTS = (
    f"check AWS credentials (aws sts get-caller-identity) and Bedrock model access for {MODEL_ID}",
    f"set {REGION_ENV} to a region where {MODEL_ID} is enabled",
    "set MEMHTML_EMBED=local for the offline model, or MEMHTML_EMBED=off",
)


def _unavailable(message: str, **details: Any) -> ModelUnavailableError:
    return ModelUnavailableError(
        message, suggestions=list(_HINTS), details={"model": MODEL_ID, **details}
    )


class BedrockEmbedder:
    """Cohere Embed v4 (``cohere.embed-v4:0``) over Bedrock; asymmetric; 1,024 dims."""

    def __init__(
        self,
        *,
        client: Any = None,
        region: str | None = None,
        batch_size: int = MAX_BATCH,
        dim: int = DIM,
    ) -> None:
        """``client`` is a ready ``bedrock-runtime`` client (tests pass a stubbed one).

        Without it, a client is created on the first call, in ``region`` or
        the default chain's region.
        """
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be between 1 and {MAX_BATCH}")
        self.model_id = MODEL_ID
        self.dim = dim
        self.batch_size = batch_size
        self.region = region
        self._client = client

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> BedrockEmbedder:
        """The embedder configured from ``MEMHTML_AWS_REGION`` (else the default chain)."""
        require_extra(
            "bedrock embedder", "bedrock", "boto3", suggestions=_HINTS[2:], model=MODEL_ID
        )
        env = os.environ if environ is None else environ
        return cls(region=env.get(REGION_ENV) or None)

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import boto3
                from botocore.config import Config
                from botocore.exceptions import BotoCoreError
            except ImportError as exc:
                raise extra_missing(
                    "bedrock embedder", "bedrock", exc, suggestions=_HINTS[2:], model=MODEL_ID
                ) from exc
            config = Config(retries={"mode": "adaptive", "max_attempts": 6}, read_timeout=60)
            try:
                self._client = boto3.client(
                    "bedrock-runtime", region_name=self.region, config=config
                )
            except BotoCoreError as exc:
                raise _unavailable(f"cannot create a Bedrock client: {exc}") from exc
        return self._client

    def _invoke(self, texts: list[str], input_type: str) -> list[list[float]]:
        client = self._get_client()  # first: without boto3 it names the extra
        from botocore.exceptions import BotoCoreError, ClientError

        body = {
            "texts": texts,
            "input_type": input_type,
            "embedding_types": ["float"],
            "output_dimension": self.dim,
        }
        try:
            response = client.invoke_model(
                modelId=self.model_id,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
            raw = response["body"].read()
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise _unavailable(
                f"Bedrock refused the embed call ({code}): {exc}", aws_code=code
            ) from exc
        except BotoCoreError as exc:
            raise _unavailable(f"Bedrock is unreachable: {exc}") from exc
        return self._parse(raw, len(texts))

    def _parse(self, raw: bytes | str, expected: int) -> list[list[float]]:
        try:
            payload = json.loads(raw)
            rows = payload["embeddings"]["float"]
        except (ValueError, TypeError, KeyError) as exc:
            raise _unavailable(f"Bedrock returned an unexpected response: {exc!r}") from exc
        if (
            not isinstance(rows, list)
            or len(rows) != expected
            or any(not isinstance(row, list) or len(row) != self.dim for row in rows)
        ):
            raise _unavailable(
                f"Bedrock returned {len(rows) if isinstance(rows, list) else 'no'} embeddings "
                f"for {expected} texts, or rows not of {self.dim} dims",
            )
        return rows

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Rows for stored chunks (``input_type=search_document``), 96 texts a call."""
        return embed_in_batches(
            texts,
            dim=self.dim,
            batch_size=self.batch_size,
            encode=lambda batch: self._invoke(batch, DOCUMENT),
        )

    def embed_query(self, text: str) -> FloatArray:
        """One query vector (``input_type=search_query``)."""
        return embed_in_batches(
            [text], dim=self.dim, batch_size=1, encode=lambda batch: self._invoke(batch, QUERY)
        )[0]
