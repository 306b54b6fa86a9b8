"""Any OpenAI-compatible embeddings endpoint (Ollama, llama.cpp, vLLM, LM Studio, hosted API).

Standard library only.

One ``POST {base_url}/embeddings`` per batch: ``{"model", "input": [...],
"encoding_format": "float"}`` (plus ``dimensions`` when a width other than
the model's native one is asked for). The reply's ``data[i].embedding`` rows
are put back in input order by their ``index``.

Configuration (``from_environment``; docs/embedders.md is the user's page):

* ``MEMHTML_EMBED_BASE_URL`` (default Ollama's ``http://127.0.0.1:11434/v1``),
  ``MEMHTML_EMBED_MODEL`` (required), ``MEMHTML_EMBED_API_KEY`` (a bearer key,
  optional; it never appears in a message);
* ``MEMHTML_EMBED_DIM``: the space's width. Unset, it is the model's native
  width from ``known_models`` or, for a model not listed, the width of one
  probe call made on first use (once per process);
* ``MEMHTML_EMBED_QUERY_PREFIX`` / ``MEMHTML_EMBED_DOCUMENT_PREFIX``: the
  instruction each side gets; unset, ``known_models``' row for the model;
* ``MEMHTML_EMBED_BATCH`` texts (default 64) and ``MEMHTML_EMBED_BATCH_TOKENS``
  estimated tokens (default 16,384) per request, whichever fills first; no
  tokenizer of the endpoint's model is at hand, so a text counts UTF-8 bytes / 3
  tokens, an over-estimate for English (~4 bytes a token) that stays safe for
  scripts of 3-byte characters;
* ``MEMHTML_EMBED_TIMEOUT`` seconds per request (default 60),
  ``MEMHTML_EMBED_RETRIES`` (default 4): a timeout, a refused connection, HTTP
  408/409/425/429 and 5xx are retried after 0.5, 1, 2, 4 s (times a random
  0.5-1.5, or the server's ``Retry-After`` up to 30 s). A query is retried at
  most once: a search would rather narrow to the lexical arms than wait.

The vector space is named ``openai:<model>@<dim>``, with ``#<8 hex>`` after
the model when documents carry a prefix (sha256 of the prefix): the same
model fed other passage text is another space. A query prefix changes no
stored vector, so it is not part of the name.

Failures are typed: an endpoint out of reach or refusing (HTTP 401/403, 404,
400, exhausted retries) is ``ModelUnavailableError`` with ``retryable`` in its
details; an answer that is not usable vectors (another width, fewer rows than
texts, NaN, a body that is not JSON) is ``EmbedContractError``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, overload

from memhtml.contracts.errors import EmbedContractError, InvalidFlagError, ModelUnavailableError
from memhtml.embed.known_models import known_model

if TYPE_CHECKING:
    from memhtml.embed.base import FloatArray

BASE_URL_ENV: Final = "MEMHTML_EMBED_BASE_URL"
MODEL_ENV: Final = "MEMHTML_EMBED_MODEL"
API_KEY_ENV: Final = "MEMHTML_EMBED_API_KEY"
DIM_ENV: Final = "MEMHTML_EMBED_DIM"
QUERY_PREFIX_ENV: Final = "MEMHTML_EMBED_QUERY_PREFIX"
DOCUMENT_PREFIX_ENV: Final = "MEMHTML_EMBED_DOCUMENT_PREFIX"
BATCH_ENV: Final = "MEMHTML_EMBED_BATCH"
BATCH_TOKENS_ENV: Final = "MEMHTML_EMBED_BATCH_TOKENS"
TIMEOUT_ENV: Final = "MEMHTML_EMBED_TIMEOUT"
RETRIES_ENV: Final = "MEMHTML_EMBED_RETRIES"

DEFAULT_BASE_URL: Final = "http://127.0.0.1:11434/v1"
DEFAULT_BATCH: Final = 64
MAX_BATCH: Final = 2048  # OpenAI's own ceiling on inputs per request
DEFAULT_BATCH_TOKENS: Final = 16384
DEFAULT_TIMEOUT_S: Final = 60.0
DEFAULT_RETRIES: Final = 4
MAX_RETRIES: Final = 10
BACKOFF_S: Final = 0.5
MAX_BACKOFF_S: Final = 30.0
QUERY_RETRIES: Final = 1
RETRYABLE_STATUS: Final = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
PROBE_TEXT: Final = "memhtml dimension probe"
PROBE_RETRY_S: Final = 30.0
_SNIPPET: Final = 160


def estimate_tokens(text: str) -> int:
    """A conservative token count without the model's tokenizer (UTF-8 bytes / 3)."""
    return max(1, math.ceil(len(text.encode("utf-8")) / 3))


def plan_batches(texts: Sequence[str], *, max_count: int, max_tokens: int) -> list[list[int]]:
    """The indices of the non-blank ``texts`` cut into requests, in order.

    A request holds at most ``max_count`` texts and ``max_tokens`` estimated
    tokens; a text over the token budget on its own goes alone (the endpoint
    truncates it or says why not).
    """
    if max_count < 1 or max_tokens < 1:
        raise ValueError("max_count and max_tokens must be at least 1")
    batches: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for i, text in enumerate(texts):
        if not text.strip():
            continue
        cost = estimate_tokens(text)
        if current and (len(current) >= max_count or tokens + cost > max_tokens):
            batches.append(current)
            current, tokens = [], 0
        current.append(i)
        tokens += cost
    if current:
        batches.append(current)
    return batches


def prefix_tag(document_prefix: str) -> str:
    """The part of the model id that names a document prefix ("" for none)."""
    if not document_prefix:
        return ""
    return "#" + hashlib.sha256(document_prefix.encode("utf-8")).hexdigest()[:8]


class OpenAIEmbedder:
    """An ``/embeddings`` endpoint; asymmetric when the model wants prefixes."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        dim: int | None = None,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
        batch_size: int = DEFAULT_BATCH,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Prefixes left None come from ``known_models``; ``dim`` None asks the endpoint once."""
        if not model.strip():
            raise InvalidFlagError(f"{MODEL_ENV} is empty")
        if not base_url.startswith(("http://", "https://")):
            raise InvalidFlagError(
                f"{BASE_URL_ENV} must be an http:// or https:// URL, not {base_url!r}",
                suggestions=[f"export {BASE_URL_ENV}=http://127.0.0.1:11434/v1"],
            )
        if not 1 <= batch_size <= MAX_BATCH:
            raise InvalidFlagError(f"{BATCH_ENV} must be within 1..{MAX_BATCH}, not {batch_size}")
        if batch_tokens < 1:
            raise InvalidFlagError(f"{BATCH_TOKENS_ENV} must be at least 1, not {batch_tokens}")
        if dim is not None and dim < 2:
            raise InvalidFlagError(f"{DIM_ENV} must be at least 2, not {dim}")
        if not 0 <= retries <= MAX_RETRIES:
            raise InvalidFlagError(f"{RETRIES_ENV} must be within 0..{MAX_RETRIES}, not {retries}")
        known = known_model(model)
        self.model = model.strip()
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.query_prefix = (
            query_prefix if query_prefix is not None else (known.query_prefix if known else "")
        )
        self.document_prefix = (
            document_prefix
            if document_prefix is not None
            else (known.document_prefix if known else "")
        )
        self.model_id = f"openai:{self.model}{prefix_tag(self.document_prefix)}"
        self._dim = dim if dim is not None else (known.dim if known else None)
        # `dimensions` asks the endpoint to shorten (Matryoshka models); a server that cannot
        # (vLLM on another model) refuses it, so it is sent only when a width is asked that
        # is not the model's known native one.
        self._send_dim = dim is not None and (known is None or known.dim != dim)
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.timeout_s = timeout_s
        self.retries = retries
        self._sleep = sleep
        self._lock = threading.Lock()
        self._probe_failed: tuple[float, ModelUnavailableError] | None = None
        self.requests = 0  # HTTP requests sent (retries included)
        self.texts_sent = 0  # texts in requests that were answered with usable rows
        self.prompt_tokens = 0  # as the endpoint's `usage` reports them (0 when it does not)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> OpenAIEmbedder:
        """The endpoint configured by the ``MEMHTML_EMBED_*`` variables."""
        env = os.environ if environ is None else environ
        model = env.get(MODEL_ENV, "").strip()
        if not model:
            raise ModelUnavailableError(
                f"MEMHTML_EMBED=openai needs {MODEL_ENV}: the embedding model the endpoint serves",
                suggestions=[
                    f"export {MODEL_ENV}=nomic-embed-text (a model your server has)",
                    f"and {BASE_URL_ENV} if it is not Ollama on 127.0.0.1:11434",
                ],
                details={"retryable": False},
            )
        return cls(
            model,
            base_url=env.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL,
            api_key=env.get(API_KEY_ENV) or None,
            dim=_int_env(env, DIM_ENV),
            query_prefix=env.get(QUERY_PREFIX_ENV),
            document_prefix=env.get(DOCUMENT_PREFIX_ENV),
            batch_size=_int_env(env, BATCH_ENV) or DEFAULT_BATCH,
            batch_tokens=_int_env(env, BATCH_TOKENS_ENV) or DEFAULT_BATCH_TOKENS,
            timeout_s=_float_env(env, TIMEOUT_ENV) or DEFAULT_TIMEOUT_S,
            retries=_int_env(env, RETRIES_ENV, allow_zero=True, default=DEFAULT_RETRIES),
        )

    # -- the vector space --------------------------------------------------------------
    @property
    def dim(self) -> int:
        """The space's width: configured, known for the model, or asked of the endpoint once.

        A failed probe is raised again without a call for ``PROBE_RETRY_S`` seconds, so a
        process whose every read asks for the width does not hammer an endpoint that is down.
        """
        if self._dim is None:
            with self._lock:
                failed = self._probe_failed
                if failed is not None and time.monotonic() - failed[0] < PROBE_RETRY_S:
                    raise failed[1]
                if self._dim is None:
                    try:
                        rows = self._request(
                            [self.document_prefix + PROBE_TEXT], min(self.retries, QUERY_RETRIES)
                        )
                    except ModelUnavailableError as exc:
                        self._probe_failed = (time.monotonic(), exc)
                        raise
                    if len(rows[0]) < 2:
                        raise self._contract(
                            f"the embedding endpoint returned a row of {len(rows[0])} dims",
                            reason="dim",
                        )
                    self._dim, self._probe_failed = len(rows[0]), None
                    self._matrix(rows, 1)  # the probe's values must be finite numbers too
        return self._dim

    # -- the seam ------------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Rows for stored chunks (with the document prefix), L2-normalized, in input order."""
        import numpy as np

        from memhtml.domain.vectors import l2_normalize

        dim = self.dim
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for rows in plan_batches(texts, max_count=self.batch_size, max_tokens=self.batch_tokens):
            raw = self._request([self.document_prefix + texts[i] for i in rows], self.retries)
            out[rows] = l2_normalize(self._matrix(raw, len(rows)))
        return out

    def embed_query(self, text: str) -> FloatArray:
        """One query vector (with the query prefix), L2-normalized; zero for a blank query."""
        import numpy as np

        from memhtml.domain.vectors import l2_normalize

        dim = self.dim
        if not text.strip():
            return np.zeros(dim, dtype=np.float32)
        raw = self._request([self.query_prefix + text], min(self.retries, QUERY_RETRIES))
        return l2_normalize(self._matrix(raw, 1))[0]

    # -- HTTP ------------------------------------------------------------------------------
    def _body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._send_dim:
            body["dimensions"] = self._dim
        return body

    def _request(self, texts: list[str], retries: int) -> list[list[float]]:
        """One request's rows in input order, retried on what a retry can fix."""
        attempt = 0
        while True:
            try:
                return self._post_once(texts)
            except _RetryableError as exc:
                if attempt >= retries:
                    raise self._unavailable(
                        f"{exc.message} (after {attempt + 1} attempt(s))",
                        retryable=True,
                        attempts=attempt + 1,
                        **exc.details,
                    ) from exc.__cause__
                self._sleep(self._backoff(attempt, exc.retry_after))
                attempt += 1

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_BACKOFF_S)
        return min(BACKOFF_S * (2**attempt) * random.uniform(0.5, 1.5), MAX_BACKOFF_S)

    def _post_once(self, texts: list[str]) -> list[list[float]]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(
            f"{self.base_url}/embeddings",
            data=json.dumps(self._body(texts)).encode("utf-8"),
            headers=headers,
            method="POST",
        )
        self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
                content_type = resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            self._http_error(exc)
        except TimeoutError as exc:
            raise _RetryableError(
                f"the embedding endpoint did not answer within {self.timeout_s:g} s",
                timeout_s=self.timeout_s,
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _RetryableError(
                f"the embedding endpoint at {self.base_url} is unreachable: {reason}"
            ) from exc
        rows = self._parse(raw, content_type, len(texts))
        self.texts_sent += len(texts)
        return rows

    def _http_error(self, exc: urllib.error.HTTPError) -> None:
        try:
            text = exc.read()[:_SNIPPET].decode("utf-8", "replace").strip()
        except OSError:
            text = ""
        status = exc.code
        said = f": {text}" if text else f" ({exc.reason})"
        if status in RETRYABLE_STATUS:
            retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            raise _RetryableError(
                f"the embedding endpoint answered HTTP {status}{said}",
                retry_after=retry_after,
                http_status=status,
            ) from exc
        if status in (401, 403):
            message = (
                f"the embedding endpoint refused the credentials (HTTP {status}){said};"
                f" check {API_KEY_ENV}"
            )
        elif status == 404:
            message = (
                f"the embedding endpoint has no {self.base_url}/embeddings or no model"
                f" {self.model!r} (HTTP 404){said}"
            )
        else:
            message = f"the embedding endpoint refused the request (HTTP {status}){said}"
            if self._send_dim and "dimension" in text.lower():
                message += f"; it may not shorten this model: unset {DIM_ENV}"
        raise self._unavailable(message, retryable=False, http_status=status) from exc

    def _parse(self, raw: bytes, content_type: str, expected: int) -> list[list[float]]:
        try:
            payload = json.loads(raw)
            data = payload["data"]
            if not isinstance(data, list):
                raise TypeError("data is not a list")
        except (ValueError, TypeError, KeyError) as exc:
            snippet = raw[:_SNIPPET].decode("utf-8", "replace").strip()
            kind = "an HTML page" if snippet.lstrip().lower().startswith("<") else "not JSON"
            if isinstance(exc, (KeyError, TypeError)):
                kind = "JSON without a data list"
            raise self._contract(
                f"the embedding endpoint's reply is {kind} (Content-Type {content_type or '?'}):"
                f" {snippet!r}; is {BASE_URL_ENV} the API's /v1 root?",
                reason="not_json",
            ) from exc
        if len(data) != expected:
            raise self._contract(
                f"the embedding endpoint returned {len(data)} row(s) for {expected} text(s)",
                reason="rows",
                rows=len(data),
                expected_rows=expected,
            )
        rows = _in_input_order(data, expected)
        if rows is None:
            raise self._contract(
                "the embedding endpoint's rows are not embeddings indexed 0..n-1", reason="rows"
            )
        if isinstance(payload.get("usage"), dict):
            tokens = payload["usage"].get("prompt_tokens")
            if isinstance(tokens, int):
                self.prompt_tokens += tokens
        return rows

    def _matrix(self, rows: list[list[float]], expected: int) -> FloatArray:
        """The rows as a float32 matrix of the space's width, every value finite."""
        import numpy as np

        widths = sorted({len(r) for r in rows})
        dim = self._dim
        if widths != [dim]:
            raise self._contract(
                f"the embedding endpoint returned rows of {', '.join(map(str, widths))} dims;"
                f" this space has {dim}",
                reason="dim",
                widths=widths,
                expected_dim=dim,
            )
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise self._contract(
                "the embedding endpoint's rows hold values that are not numbers", reason="values"
            ) from exc
        if matrix.shape != (expected, dim):
            raise self._contract(
                f"the embedding endpoint returned shape {matrix.shape};"
                f" expected ({expected}, {dim})",
                reason="rows",
            )
        if not np.isfinite(matrix).all():
            bad = int((~np.isfinite(matrix).all(axis=1)).sum())
            raise self._contract(
                f"the embedding endpoint returned NaN or infinite values in {bad} row(s)",
                reason="nan",
                rows=bad,
            )
        return matrix

    # -- errors --------------------------------------------------------------------------
    def _details(self, **details: Any) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.base_url, **details}

    def _unavailable(
        self, message: str, *, retryable: bool, **details: Any
    ) -> ModelUnavailableError:
        return ModelUnavailableError(
            message,
            suggestions=[
                f"check that the server at {self.base_url} is up and serves {self.model}",
                f"set {BASE_URL_ENV}, {MODEL_ENV} (and {API_KEY_ENV} if it needs one)",
                "a paused migration continues with: memhtml index migrate --resume",
            ],
            details=self._details(retryable=retryable, **details),
        )

    def _contract(self, message: str, *, reason: str, **details: Any) -> EmbedContractError:
        return EmbedContractError(
            message,
            suggestions=[
                f"check that {self.model} is an embedding model and {BASE_URL_ENV} its /v1 root",
                f"set {DIM_ENV} to the width the model returns, or unset it",
                "a paused migration continues with: memhtml index migrate --resume",
            ],
            details=self._details(retryable=False, reason=reason, **details),
        )


class _RetryableError(Exception):
    """A failure a later attempt may not have (timeout, refused connection, 429, 5xx)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.details = details


def _in_input_order(data: list[Any], expected: int) -> list[list[float]] | None:
    """``data[*].embedding`` ordered by ``index`` (list order when no item has one)."""
    rows: list[Any] = [None] * expected
    for position, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
            return None
        index = item.get("index", position)
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or not 0 <= index < expected
            or rows[index] is not None
        ):
            return None
        rows[index] = item["embedding"]
    return rows


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


@overload
def _int_env(env: Mapping[str, str], name: str, *, allow_zero: bool = ...) -> int | None: ...
@overload
def _int_env(env: Mapping[str, str], name: str, *, allow_zero: bool = ..., default: int) -> int: ...
def _int_env(
    env: Mapping[str, str], name: str, *, allow_zero: bool = False, default: int | None = None
) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < (0 if allow_zero else 1):
        raise InvalidFlagError(
            f"{name} must be a {'non-negative' if allow_zero else 'positive'}"
            f" whole number, not {raw!r}"
        )
    return value


def _float_env(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0 or math.isinf(value):
        raise InvalidFlagError(f"{name} must be a positive number of seconds, not {raw!r}")
    return value
