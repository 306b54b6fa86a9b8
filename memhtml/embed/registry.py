"""Embedders by name: ``fake``, ``local`` (the default), ``bedrock``, and ``off``.

Factories are zero-argument callables that import their implementation when
called, so importing this module loads no model runtime or SDK. An instance
is built once per name per process and reused (the local model loads once).

Only composition roots (the CLI, the MCP server, bench scripts) should call
:func:`get_embedder` without a name; that is the one place ``MEMHTML_EMBED``
is read. Tests register a fake through :func:`register` rather than patching.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from memhtml.contracts.errors import InvalidFlagError
from memhtml.embed.base import Embedder

ENV_VAR = "MEMHTML_EMBED"
DEFAULT = "local"
OFF = "off"

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


_factories: dict[str, EmbedderFactory] = {
    "fake": _fake,
    "local": _local,
    "bedrock": _bedrock,
}
_instances: dict[str, Embedder] = {}
_lock = threading.RLock()


def _normalize(name: str) -> str:
    return name.strip().lower()


def register(name: str, factory: EmbedderFactory) -> None:
    """Add or replace the factory for ``name``; a cached instance of that name is dropped."""
    key = _normalize(name)
    if not key or key == OFF:
        raise ValueError(f"{name!r} cannot name an embedder")
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
    """The registered embedder names, sorted (``off`` is always accepted besides)."""
    return sorted(_factories)


def clear_cache() -> None:
    """Forget every built instance, so the next lookup builds afresh."""
    with _lock:
        _instances.clear()


def get_embedder(name: str | None = None) -> Embedder | None:
    """The embedder called ``name`` (else ``$MEMHTML_EMBED``, else ``local``); None for ``off``.

    Raises ``InvalidFlagError`` for an unknown name and lets the factory's
    ``ModelUnavailableError`` through when the model cannot be loaded.
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
                f"unknown embedder {raw!r}; expected one of: {', '.join(names)}",
                suggestions=[f"set {ENV_VAR} to one of: {', '.join(names)}"],
                details={"embedder": raw, "available": names},
            )
        instance = factory()
        _instances[key] = instance
        return instance
