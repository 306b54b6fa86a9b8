"""Spans over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, and nothing at all otherwise.

The code marks its work with `with span("memhtml.search", query_chars=12): ...`.
Off (no endpoint, the default), `span` returns one shared object whose
`__enter__`/`__exit__` do nothing, and OpenTelemetry is never imported: a
cold command costs what it did. On, `start` (called once by the CLI's and the
MCP server's entry points, which are where configuration is read) builds the
SDK's tracer provider with a batching OTLP/HTTP exporter aimed at
`<endpoint>/v1/traces` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given),
service name `OTEL_SERVICE_NAME`, else `memhtml-cli` / `memhtml-mcp`. The
last batch is flushed at exit.

Export can never fail a command: the SDK's own error logs are silenced and a
failed export (a collector that is down, refuses, or answers an error) is one
warning on stderr, after which the exporter stops trying, so a long run
against a dead collector neither fills a log nor waits on it again. Each
export waits at most 2 s unless `OTEL_EXPORTER_OTLP_TIMEOUT` says otherwise.

The SDK is the optional extra `memhtml[otel]` (opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-http); without it, a set endpoint is one
warning and no spans.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

EXPORT_TIMEOUT_S: Final = 2.0
_ENDPOINT_VARS: Final = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_TIMEOUT_VARS: Final = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


class _Off:
    """The span of a process that exports none: every method does nothing."""

    __slots__ = ()

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, **attributes: Any) -> None:
        """Add attributes (nothing to add them to)."""


OFF: Final = _Off()
_state: dict[str, Any] = {"tracer": None}


def _attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        name = key if "." in key else f"memhtml.{key}"
        out[name] = value if isinstance(value, (str, bool, int, float)) else str(value)
    return out


class _Live:
    """A span of the SDK's, entered and left with the block."""

    __slots__ = ("_cm", "_span")

    def __init__(self, tracer: Any, name: str, attributes: Mapping[str, Any]) -> None:
        self._cm = tracer.start_as_current_span(name, attributes=_attributes(attributes))
        self._span: Any = None

    def __enter__(self) -> _Live:
        self._span = self._cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._cm.__exit__(*exc)

    def set(self, **attributes: Any) -> None:
        """Add attributes known only once the work ran (counts, outcomes)."""
        self._span.set_attributes(_attributes(attributes))


def span(name: str, **attributes: Any) -> _Off | _Live:
    """A span around a block; free when no endpoint is set."""
    tracer = _state["tracer"]
    if tracer is None:
        return OFF
    return _Live(tracer, name, attributes)


def traced(name: str) -> Callable[[F], F]:
    """A span around every call of the decorated function (free when off)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            tracer = _state["tracer"]
            if tracer is None:
                return fn(*args, **kwargs)
            with _Live(tracer, name, {}):
                return fn(*args, **kwargs)

        return inner  # type: ignore[return-value]

    return wrap


def enabled() -> bool:
    """Whether spans are being exported."""
    return _state["tracer"] is not None


def _warn(message: str) -> None:
    try:
        sys.stderr.write(f"memhtml: WARNING telemetry: {message}\n")
        sys.stderr.flush()
    except Exception:  # a closed stderr does not fail a command
        pass


def start(service: str, environ: Mapping[str, str] | None = None) -> bool:
    """Export spans if an OTLP endpoint is configured; True when on. Reads only `environ`."""
    env = os.environ if environ is None else environ
    if _state["tracer"] is not None:
        return True
    traces = (env.get(_ENDPOINT_VARS[0]) or "").strip()
    base = (env.get(_ENDPOINT_VARS[1]) or "").strip()
    if (not traces and not base) or (env.get("OTEL_SDK_DISABLED") or "").lower() == "true":
        return False
    url = traces or base.rstrip("/") + "/v1/traces"
    try:
        import logging

        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        _warn(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed"
            " (pip install 'memhtml[otel]'); no spans are exported"
        )
        return False
    from memhtml import __version__

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # one warning is ours
    timeout = None if any(env.get(v) for v in _TIMEOUT_VARS) else EXPORT_TIMEOUT_S
    name = (env.get("OTEL_SERVICE_NAME") or "").strip() or service
    resource = Resource.create({"service.name": name, "service.version": __version__})
    provider = TracerProvider(resource=resource)
    exporter = _once_warning(OTLPSpanExporter(endpoint=url, timeout=timeout), url)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    _state["tracer"] = provider.get_tracer("memhtml", __version__)
    _state["provider"] = provider
    return True


def _once_warning(inner: Any, url: str) -> Any:
    """The OTLP exporter, saying once on stderr that it failed, then no longer trying."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class OnceWarning(SpanExporter):
        def __init__(self) -> None:
            self.dead = False

        def export(self, spans: Any) -> SpanExportResult:
            if self.dead:
                return SpanExportResult.FAILURE
            try:
                result = inner.export(spans)
            except Exception:  # whatever the transport raises, the command goes on
                result = SpanExportResult.FAILURE
            if result != SpanExportResult.SUCCESS:
                self.dead = True
                _warn(f"span export to {url} failed; the command goes on without tracing")
            return result

        def shutdown(self) -> None:
            with contextlib.suppress(Exception):
                inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    return OnceWarning()
