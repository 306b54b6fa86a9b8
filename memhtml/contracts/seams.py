"""A seam's implementations by name: the one registry the embedder and the model seams share.

Factories are zero-argument callables that import their implementation when
called, so a registry loads no SDK. An instance is built once per name per
process and reused. ``off`` is always a valid name and means "none". The
caller resolves the configured name (environment, flag) and passes it in:
this module reads no configuration.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from memhtml.contracts.errors import InvalidFlagError

T = TypeVar("T")
OFF = "off"


def normalize(name: str) -> str:
    """Names are case- and whitespace-insensitive."""
    return name.strip().lower()


class SeamRegistry(Generic[T]):
    """Named factories of one seam, with a per-process instance cache."""

    def __init__(
        self,
        factories: Mapping[str, Callable[[], T]],
        *,
        default: str,
        noun: str,
        article_noun: str,
        setting: str,
        detail_key: str,
    ) -> None:
        self._factories: dict[str, Callable[[], T]] = dict(factories)
        self._instances: dict[str, T] = {}
        self._lock = threading.RLock()
        self.default = default
        self.noun = noun  # "embedder": how an unknown name is reported
        self.article_noun = article_noun  # "an embedder": what a refused name cannot be
        self.setting = setting  # "set MEMHTML_EMBED": the suggestion's verb
        self.detail_key = detail_key

    def register(self, name: str, factory: Callable[[], T]) -> None:
        """Add or replace the factory for ``name``; a cached instance of that name is dropped."""
        key = normalize(name)
        if not key or key == OFF:
            raise ValueError(f"{name!r} cannot name {self.article_noun}")
        with self._lock:
            self._factories[key] = factory
            self._instances.pop(key, None)

    def unregister(self, name: str) -> None:
        """Remove ``name`` and its cached instance (a no-op when it is not registered)."""
        key = normalize(name)
        with self._lock:
            self._factories.pop(key, None)
            self._instances.pop(key, None)

    def available(self) -> list[str]:
        """The registered names, sorted (``off`` is always accepted besides)."""
        return sorted(self._factories)

    def clear_cache(self) -> None:
        """Forget every built instance, so the next lookup builds afresh."""
        with self._lock:
            self._instances.clear()

    def get(self, raw: str) -> T | None:
        """The instance called ``raw`` (empty: the default); None for ``off``.

        Raises ``InvalidFlagError`` for an unknown name and lets the factory's
        own errors (``ModelUnavailableError``) through.
        """
        key = normalize(raw) or self.default
        if key == OFF:
            return None
        with self._lock:
            cached = self._instances.get(key)
            if cached is not None:
                return cached
            factory = self._factories.get(key)
            if factory is None:
                names = [*sorted(self._factories), OFF]
                raise InvalidFlagError(
                    f"unknown {self.noun} {raw!r}; expected one of: {', '.join(names)}",
                    suggestions=[f"{self.setting} to one of: {', '.join(names)}"],
                    details={self.detail_key: raw, "available": names},
                )
            instance = factory()
            self._instances[key] = instance
            return instance
