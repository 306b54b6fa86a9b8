"""Anthropic models on Amazon Bedrock through boto3's Converse API, with one forced tool.

The request offers a single tool whose ``inputSchema.json`` is the pydantic
schema's JSON schema and forces it (``toolChoice: {"tool": {"name": ...}}``),
so the answer is the tool call's ``input`` object, validated against the
schema before it is returned.

boto3 (the ``bedrock`` extra) is imported on first use, never at module import;
without it the first call refuses with ``ERR_MODEL_UNAVAILABLE`` naming the
extra. Credentials come from
the default AWS chain; the model id from ``MEMHTML_LLM_MODEL`` (default
:data:`DEFAULT_MODEL`), the region from ``MEMHTML_AWS_REGION`` (else the
default chain), the read timeout from ``MEMHTML_LLM_TIMEOUT``. Throttling,
timeouts and service faults are ``ModelUnavailableError`` marked retryable;
an access or validation refusal is not retryable; an answer without the tool
call, cut short, or off the schema is ``LlmContractViolationError``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import LlmContractViolationError, ModelUnavailableError
from memhtml.llm.base import MODEL_ENV, json_schema, timeout_from, validate_answer
from memhtml.seams import extra_missing, require_extra

if TYPE_CHECKING:
    from pydantic import BaseModel

DEFAULT_MODEL = "global.anthropic.claude-sonnet-5"
REGION_ENV = "MEMHTML_AWS_REGION"
DEFAULT_TIMEOUT_S = 120.0
MAX_TOKENS = 4096
TRANSIENT = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelTimeoutException",
        "ModelNotReadyException",
        "ServiceQuotaExceededException",
    }
)


def _unavailable(
    model: str, message: str, *, retryable: bool, **details: Any
) -> ModelUnavailableError:
    return ModelUnavailableError(
        message,
        suggestions=[
            f"check AWS credentials and Bedrock model access for {model}",
            f"set {MODEL_ENV} to an enabled model id and {REGION_ENV} to its region",
            "set MEMHTML_LLM=off to run sleep without a model",
        ],
        details={"model": model, "retryable": retryable, **details},
    )


_NO_MODEL = "set MEMHTML_LLM=off to run sleep without a model"


class BedrockModel:
    """A Claude model over Bedrock Converse with a forced tool call."""

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL,
        *,
        client: Any = None,
        region: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        """``client`` is a ready ``bedrock-runtime`` client (tests pass a stubbed one)."""
        self.model_id = model_id
        self.region = region
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self._client = client

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> BedrockModel:
        """The model configured by ``MEMHTML_LLM_MODEL``, ``MEMHTML_AWS_REGION``, the timeout."""
        env = os.environ if environ is None else environ
        model_id = env.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
        require_extra(
            "bedrock model",
            "bedrock",
            "boto3",
            suggestions=[_NO_MODEL],
            model=model_id,
            retryable=False,
        )
        return cls(
            model_id,
            region=env.get(REGION_ENV) or None,
            timeout_s=timeout_from(env, DEFAULT_TIMEOUT_S),
        )

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import boto3
                from botocore.config import Config
                from botocore.exceptions import BotoCoreError
            except ImportError as exc:
                raise extra_missing(
                    "bedrock model",
                    "bedrock",
                    exc,
                    suggestions=[_NO_MODEL],
                    model=self.model_id,
                    retryable=False,
                ) from exc
            # The caller retries; botocore's own retries stay few so a call's time stays bounded.
            config = Config(
                retries={"mode": "standard", "max_attempts": 2},
                read_timeout=self.timeout_s,
                connect_timeout=10,
            )
            try:
                self._client = boto3.client(
                    "bedrock-runtime", region_name=self.region, config=config
                )
            except BotoCoreError as exc:
                raise _unavailable(
                    self.model_id, f"cannot create a Bedrock client: {exc}", retryable=False
                ) from exc
        return self._client

    def request(
        self, prompt: str, *, system: str, schema: type[BaseModel], tool_name: str, description: str
    ) -> dict[str, Any]:
        """The Converse request for one call (public so tests can state it)."""
        return {
            "modelId": self.model_id,
            "system": [{"text": system}],
            "messages": [{"role": "user", "content": [{"text": prompt}]}],
            "toolConfig": {
                "tools": [
                    {
                        "toolSpec": {
                            "name": tool_name,
                            "description": description,
                            "inputSchema": {"json": json_schema(schema)},
                        }
                    }
                ],
                "toolChoice": {"tool": {"name": tool_name}},
            },
            "inferenceConfig": {"maxTokens": self.max_tokens},
        }

    def generate(
        self,
        prompt: str,
        *,
        system: str,
        schema: type[BaseModel],
        tool_name: str,
        tool_description: str,
    ) -> BaseModel:
        """One Converse call; the forced tool's input, validated against ``schema``."""
        client = self._get_client()  # first: without boto3 it names the extra
        from botocore.exceptions import BotoCoreError, ClientError

        request = self.request(
            prompt, system=system, schema=schema, tool_name=tool_name, description=tool_description
        )
        try:
            response = client.converse(**request)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise _unavailable(
                self.model_id,
                f"Bedrock refused the call ({code}): {exc}",
                retryable=code in TRANSIENT,
                aws_code=code,
            ) from exc
        except BotoCoreError as exc:
            raise _unavailable(
                self.model_id, f"Bedrock is unreachable: {exc}", retryable=True
            ) from exc
        return self._parse(response, schema, tool_name)

    def _parse(self, response: Any, schema: type[BaseModel], tool_name: str) -> BaseModel:
        stop = response.get("stopReason")
        content = ((response.get("output") or {}).get("message") or {}).get("content") or []
        uses = [c["toolUse"] for c in content if isinstance(c, dict) and "toolUse" in c]
        use = next((u for u in uses if u.get("name") == tool_name), None)
        if stop == "max_tokens" or use is None:
            raise LlmContractViolationError(
                f"Bedrock answered without a complete {tool_name!r} tool call"
                f" (stopReason {stop!r})",
                details={"model": self.model_id, "stop_reason": stop, "tool_name": tool_name},
            )
        return validate_answer(schema, use.get("input"), model_id=self.model_id)
