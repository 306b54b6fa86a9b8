"""Language models by name: ``fake``, ``bedrock``, ``openai``, and ``off`` (the default).

Factories are zero-argument callables that import their implementation when
called, so importing this module loads no SDK. An instance is built once per
name per process and reused.

Only composition roots (the CLI, the sleep engine's entry points) should call
:func:`get_model` without a name; that is the one place ``MEMHTML_LLM`` is
read. Tests register a scripted fake through :func:`register` rather than
patching.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from memhtml.contracts.errors import InvalidFlagError
from memhtml.llm.base import Model

ENV_VAR = "MEMHTML_LLM"
OFF = "off"
DEFAULT = OFF

ModelFactory = Callable[[], Model]


def _fake() -> Model:
    from memhtml.llm.fake import FakeModel

    return FakeModel()


def _bedrock() -> Model:
    from memhtml.llm.bedrock import BedrockModel

    return BedrockModel.from_environment()


def _openai() -> Model:
    from memhtml.llm.openai import OpenAIModel

    return OpenAIModel.from_environment()


_factories: dict[str, ModelFactory] = {"fake": _fake, "bedrock": _bedrock, "openai": _openai}
_instances: dict[str, Model] = {}
_lock = threading.RLock()


def _normalize(name: str) -> str:
    return name.strip().lower()


def register(name: str, factory: ModelFactory) -> None:
    """Add or replace the factory for ``name``; a cached instance of that name is dropped."""
    key = _normalize(name)
    if not key or key == OFF:
        raise ValueError(f"{name!r} cannot name a model")
    with _lock:
        _factories[key] = factory
        _instances.pop(key, None)


def unregister(name: str) -> None:
    """Remove ``name`` and its cached instance (a no-op when it is not registered)."""
    key = _normalize(name)
    with _lock:
        _factories.pop(key, None)
        _instances.pop(key, None)


def available() -> list[str]:
    """The registered model names, sorted (``off`` is always accepted besides)."""
    return sorted(_factories)


def clear_cache() -> None:
    """Forget every built instance, so the next lookup builds afresh."""
    with _lock:
        _instances.clear()


def get_model(name: str | None = None) -> Model | None:
    """The model called ``name`` (else ``$MEMHTML_LLM``, else ``off``); None for ``off``.

    Raises ``InvalidFlagError`` for an unknown name and lets the factory's
    ``ModelUnavailableError`` through when the backend cannot be configured.
    """
    raw = os.environ.get(ENV_VAR, "") if name is None else name
    key = _normalize(raw) or DEFAULT
    if key == OFF:
        return None
    with _lock:
        cached = _instances.get(key)
        if cached is not None:
            return cached
        factory = _factories.get(key)
        if factory is None:
            names = [*sorted(_factories), OFF]
            raise InvalidFlagError(
                f"unknown language model {raw!r}; expected one of: {', '.join(names)}",
                suggestions=[f"set {ENV_VAR} (or --llm) to one of: {', '.join(names)}"],
                details={"llm": raw, "available": names},
            )
        instance = factory()
        _instances[key] = instance
        return instance
