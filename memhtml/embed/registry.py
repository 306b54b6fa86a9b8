"""Embedders by name: ``fake``, ``local`` (the default), ``bedrock``, ``openai``, and ``off``.

Factories are zero-argument callables that import their implementation when
called, so importing this module loads no model runtime or SDK. An instance
is built once per name per process and reused (the local model loads once).

Only composition roots (the CLI, the MCP server, bench scripts) should call
:func:`get_embedder` without a name; that is the one place ``MEMHTML_EMBED``
is read. Tests register a fake through :func:`register` rather than patching.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from memhtml.contracts.seams import SeamRegistry
from memhtml.embed.base import Embedder

ENV_VAR = "MEMHTML_EMBED"
DEFAULT = "local"

EmbedderFactory = Callable[[], Embedder]


def _fake() -> Embedder:
    from memhtml.embed.fake import FakeEmbedder

    return FakeEmbedder()


def _local() -> Embedder:
    from memhtml.embed.local import LocalEmbedder

    return LocalEmbedder()


def _bedrock() -> Embedder:
    from memhtml.embed.bedrock import BedrockEmbedder

    return BedrockEmbedder.from_environment()


def _openai() -> Embedder:
    from memhtml.embed.openai import OpenAIEmbedder

    return OpenAIEmbedder.from_environment()


_registry: SeamRegistry[Embedder] = SeamRegistry(
    {
        "fake": _fake,
        "local": _local,
        "bedrock": _bedrock,
        "openai": _openai,
    },
    default=DEFAULT,
    noun="embedder",
    article_noun="an embedder",
    setting=f"set {ENV_VAR}",
    detail_key="embedder",
)


def register(name: str, factory: EmbedderFactory) -> None:
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


def get_embedder(name: str | None = None) -> Embedder | None:
    """The embedder called ``name`` (else ``$MEMHTML_EMBED``, else ``local``); None for ``off``.

    Raises ``InvalidFlagError`` for an unknown name and lets the factory's
    ``ModelUnavailableError`` through when the model cannot be loaded.
    """
    return _registry.get(os.environ.get(ENV_VAR, "") if name is None else name)
