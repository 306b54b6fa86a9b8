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
from collections.abc import Callable

from memhtml.contracts.seams import OFF, SeamRegistry
from memhtml.llm.base import Model

ENV_VAR = "MEMHTML_LLM"
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


_registry: SeamRegistry[Model] = SeamRegistry(
    {"fake": _fake, "bedrock": _bedrock, "openai": _openai},
    default=DEFAULT,
    noun="language model",
    article_noun="a model",
    setting=f"set {ENV_VAR} (or --llm)",
    detail_key="llm",
)


def register(name: str, factory: ModelFactory) -> None:
    """Add or replace the factory for ``name``; a cached instance of that name is dropped."""
    _registry.register(name, factory)


def unregister(name: str) -> None:
    """Remove ``name`` and its cached instance (a no-op when it is not registered)."""
    _registry.unregister(name)


def available() -> list[str]:
    """The registered names, sorted (``off`` is always accepted besides)."""
    return _registry.available()


def clear_cache() -> None:
    """Forget every built instance, so the next lookup builds afresh."""
    _registry.clear_cache()


def get_model(name: str | None = None) -> Model | None:
    """The model called ``name`` (else ``$MEMHTML_LLM``, else ``off``); None for ``off``.

    Raises ``InvalidFlagError`` for an unknown name and lets the factory's
    ``ModelUnavailableError`` through when the backend cannot be configured.
    """
    return _registry.get(os.environ.get(ENV_VAR, "") if name is None else name)
