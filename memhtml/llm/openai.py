"""Any OpenAI-compatible chat endpoint (Ollama, llama.cpp server, vLLM, LM Studio), stdlib only.

One ``POST {base_url}/chat/completions`` per call, asking for structured
output in one of two shapes (``MEMHTML_LLM_OPENAI_MODE``):

* ``json_schema`` (the default): ``response_format: {"type": "json_schema",
  "json_schema": {"name", "schema", "strict": true}}``; the answer is the
  message's content;
* ``tool``: one function in ``tools`` forced by ``tool_choice``; the answer is
  the call's ``arguments``.

Either answer shape is accepted whatever was asked (servers differ). The base
URL comes from ``MEMHTML_LLM_BASE_URL`` (default Ollama's
``http://127.0.0.1:11434/v1``), the model from ``MEMHTML_LLM_MODEL``
(required), an optional bearer key from ``MEMHTML_LLM_API_KEY``, the timeout
from ``MEMHTML_LLM_TIMEOUT`` (default 60 s). A timeout, a refused connection,
HTTP 408/429/5xx are ``ModelUnavailableError`` marked retryable; another HTTP
error is not retryable; an answer that is not JSON or off the schema is
``LlmContractViolationError``.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from memhtml.contracts.errors import (
    InvalidFlagError,
    LlmContractViolationError,
    ModelUnavailableError,
)
from memhtml.llm.base import MODEL_ENV, json_schema, timeout_from, validate_answer

if TYPE_CHECKING:
    from pydantic import BaseModel

BASE_URL_ENV = "MEMHTML_LLM_BASE_URL"
API_KEY_ENV = "MEMHTML_LLM_API_KEY"
MODE_ENV = "MEMHTML_LLM_OPENAI_MODE"
DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
DEFAULT_TIMEOUT_S = 60.0
MAX_TOKENS = 4096
Mode = Literal["json_schema", "tool"]
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class OpenAIModel:
    """A chat-completions endpoint asked for schema-shaped output."""

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        mode: Mode = "json_schema",
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        if mode not in ("json_schema", "tool"):
            raise InvalidFlagError(f"{MODE_ENV} must be json_schema or tool, not {mode!r}")
        self.model_id = model_id
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.mode: Mode = mode
        self.max_tokens = max_tokens

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> OpenAIModel:
        """The endpoint configured by the ``MEMHTML_LLM_*`` variables."""
        env = os.environ if environ is None else environ
        model = env.get(MODEL_ENV, "").strip()
        if not model:
            raise ModelUnavailableError(
                f"MEMHTML_LLM=openai needs {MODEL_ENV}: the model name the endpoint serves",
                suggestions=[f"export {MODEL_ENV}=qwen3:8b (a model your server has)"],
                details={"retryable": False},
            )
        mode = env.get(MODE_ENV, "").strip() or "json_schema"
        return cls(
            model,
            base_url=env.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL,
            api_key=env.get(API_KEY_ENV) or None,
            timeout_s=timeout_from(env, DEFAULT_TIMEOUT_S),
            mode=mode,  # type: ignore[arg-type]
        )

    def request(
        self, prompt: str, *, system: str, schema: type[BaseModel], tool_name: str, description: str
    ) -> dict[str, Any]:
        """The chat-completions body for one call (public so tests can state it)."""
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        spec = json_schema(schema)
        if self.mode == "tool":
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": tool_name, "description": description, "parameters": spec},
                }
            ]
            body["tool_choice"] = {"type": "function", "function": {"name": tool_name}}
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": tool_name,
                    "description": description,
                    "schema": spec,
                    "strict": True,
                },
            }
        return body

    def _unavailable(
        self, message: str, *, retryable: bool, **details: Any
    ) -> ModelUnavailableError:
        return ModelUnavailableError(
            message,
            suggestions=[
                f"check that the server at {self.base_url} is up and serves {self.model_id}",
                f"set {BASE_URL_ENV}, {MODEL_ENV} (and {API_KEY_ENV} if it needs one)",
                "set MEMHTML_LLM=off to run sleep without a model",
            ],
            details={
                "model": self.model_id,
                "base_url": self.base_url,
                "retryable": retryable,
                **details,
            },
        )

    def _post(self, body: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode("utf-8"),
            headers=headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            text = exc.read()[:500].decode("utf-8", "replace")
            raise self._unavailable(
                f"the model server answered HTTP {exc.code}: {text or exc.reason}",
                retryable=exc.code in RETRYABLE_STATUS,
                http_status=exc.code,
            ) from exc
        except TimeoutError as exc:
            raise self._unavailable(
                f"the model server did not answer within {self.timeout_s:g} s",
                retryable=True,
                timeout_s=self.timeout_s,
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            timed_out = isinstance(reason, TimeoutError)
            raise self._unavailable(
                f"the model server at {self.base_url} is unreachable: {reason}",
                retryable=True,
                **({"timeout_s": self.timeout_s} if timed_out else {}),
            ) from exc
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise self._unavailable(
                f"the model server's reply is not JSON: {raw[:200]!r}", retryable=True
            ) from exc

    def generate(
        self,
        prompt: str,
        *,
        system: str,
        schema: type[BaseModel],
        tool_name: str,
        tool_description: str,
    ) -> BaseModel:
        """One chat completion; its structured answer, validated against ``schema``."""
        body = self.request(
            prompt, system=system, schema=schema, tool_name=tool_name, description=tool_description
        )
        return validate_answer(schema, self._answer(self._post(body)), model_id=self.model_id)

    def _answer(self, reply: Any) -> Any:
        """The structured answer: a tool call's arguments, else the message content."""
        try:
            choice = reply["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise self._unavailable(
                f"the model server's reply has no choices[0].message: {str(reply)[:200]}",
                retryable=True,
            ) from exc
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            if "arguments" in fn:
                return fn["arguments"]
        content = message.get("content")
        if content is None or (isinstance(content, str) and not content.strip()):
            raise LlmContractViolationError(
                "the model answered with neither a tool call nor content"
                f" (finish_reason {choice.get('finish_reason')!r})",
                details={"model": self.model_id, "finish_reason": choice.get("finish_reason")},
            )
        return content
