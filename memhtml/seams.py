"""A seam's backends by name: built-ins, registered factories and entry-point plugins.

The embedder seam (`memhtml.embed.registry`) and the language-model seam
(`memhtml.llm.registry`) are each one `Seam`. A name resolves, in order, to:

1. a factory registered in this process (`register`: tests, the hook's child);
2. a built-in factory (each imports its implementation when called, so a
   registry loads no SDK or model runtime);
3. an installed distribution's entry point in the seam's group
   (`memhtml.embedders`, `memhtml.models`): a third party ships a backend by
   declaring one, with no registration call and no fork. The entry point names
   a zero-argument callable (a class or a factory function) that returns the
   backend; docs/plugins.md is the plugin author's page.

Entry points are read only when a name is neither registered nor built in, or
when the names are listed: `importlib.metadata` and the scan of installed
distributions stay off the path of a command that uses a built-in backend.
Listing reads names and distributions, never imports a plugin. A plugin that
fails to import, raises while it builds, or builds something that is not a
backend is `ModelUnavailableError` naming the plugin, its entry point and its
distribution, never an uncaught exception.

An instance is built once per name per process and reused. ``off`` is always a
valid name and means "none". The caller resolves the configured name
(environment, flag) and passes it in: this module reads no configuration.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from memhtml.contracts.errors import InvalidFlagError, MemhtmlError, ModelUnavailableError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")
OFF = "off"


def normalize(name: str) -> str:
    """Names are case- and whitespace-insensitive."""
    return name.strip().lower()


def extra_missing(
    backend: str, extra: str, exc: ImportError, *, suggestions: Sequence[str] = (), **details: Any
) -> ModelUnavailableError:
    """A built-in backend whose optional dependencies are not installed: the refusal names
    the extra that installs them (`pip install 'memhtml[bedrock]'`)."""
    missing = exc.name or str(exc)
    command = f"pip install 'memhtml[{extra}]'"
    return ModelUnavailableError(
        f"the {backend} needs memhtml's {extra!r} extra ({missing} is not installed): {command}",
        suggestions=[command, *suggestions],
        details={"extra": extra, "missing": missing, "install": command, **details},
    )


def require_extra(
    backend: str, extra: str, module: str, *, suggestions: Sequence[str] = (), **details: Any
) -> None:
    """Refuse (`extra_missing`) unless `module` of the extra is importable; it is looked up,
    not imported, so a backend refuses when it is built rather than at its first call and
    every command sees the refusal the same way (a write records it, `index embed` fails)."""
    import sys
    from importlib.util import find_spec

    present = sys.modules[module] is not None if module in sys.modules else bool(find_spec(module))
    if not present:
        raise extra_missing(
            backend, extra, ImportError(name=module), suggestions=suggestions, **details
        )


class Plugin(NamedTuple):
    """An entry point of a seam's group, as installed metadata describes it (not imported)."""

    name: str  # normalized, as MEMHTML_EMBED / MEMHTML_LLM spell it
    value: str  # "module:attribute"
    distribution: str  # the installed distribution declaring it ("" when unknown)
    version: str

    def describe(self) -> dict[str, str]:
        """The manifest's entry for this plugin."""
        return {
            "name": self.name,
            "entry_point": self.value,
            "distribution": self.distribution,
            "version": self.version,
        }


def _entry_points(group: str) -> list[EntryPoint]:
    from importlib.metadata import entry_points

    return list(entry_points(group=group))


def _plugin(ep: EntryPoint) -> Plugin:
    dist = getattr(ep, "dist", None)
    name = "" if dist is None else str(dist.name or "")
    version = "" if dist is None else str(dist.version or "")
    return Plugin(normalize(ep.name), ep.value, name, version)


class Seam(Generic[T]):
    """Named backends of one seam, with a per-process instance cache."""

    def __init__(
        self,
        builtins: Mapping[str, Callable[[], T]],
        *,
        group: str,
        required: Sequence[str],
        default: str,
        noun: str,
        article_noun: str,
        setting: str,
        detail_key: str,
    ) -> None:
        self._builtins: dict[str, Callable[[], T]] = {normalize(k): v for k, v in builtins.items()}
        self._registered: dict[str, Callable[[], T]] = {}
        self._instances: dict[str, T] = {}
        self._lock = threading.RLock()
        self.group = group  # the entry-point group plugins declare
        self.required = tuple(required)  # what a plugin's backend must have
        self.default = default
        self.noun = noun  # "embedder": how an unknown name is reported
        self.article_noun = article_noun  # "an embedder": what a refused name cannot be
        self.setting = setting  # "set MEMHTML_EMBED": the suggestion's verb
        self.detail_key = detail_key

    # -- names -------------------------------------------------------------
    def register(self, name: str, factory: Callable[[], T]) -> None:
        """Add or replace the factory for ``name`` in this process (it wins over a built-in
        or a plugin of that name); a cached instance of that name is dropped."""
        key = normalize(name)
        if not key or key == OFF:
            raise ValueError(f"{name!r} cannot name {self.article_noun}")
        with self._lock:
            self._registered[key] = factory
            self._instances.pop(key, None)

    def unregister(self, name: str) -> None:
        """Remove a registered ``name`` and its cached instance (a no-op when it is not
        registered; a built-in or a plugin of that name is then found again)."""
        key = normalize(name)
        with self._lock:
            self._registered.pop(key, None)
            self._instances.pop(key, None)

    def builtin_names(self) -> list[str]:
        """The built-in names, sorted: what every installation has."""
        return sorted(self._builtins)

    def plugins(self) -> list[Plugin]:
        """Installed plugins of this seam's group, by name (none is imported)."""
        return sorted({_plugin(ep) for ep in _entry_points(self.group)})

    def available(self) -> list[str]:
        """Every name this process can build, sorted (``off`` is always accepted besides).

        Reads installed metadata for the plugins' names: not for a hot path.
        """
        with self._lock:
            names = set(self._builtins) | set(self._registered)
        return sorted(names | {p.name for p in self.plugins()})

    def clear_cache(self) -> None:
        """Forget every built instance, so the next lookup builds afresh."""
        with self._lock:
            self._instances.clear()

    # -- building ----------------------------------------------------------
    def get(self, raw: str) -> T | None:
        """The instance called ``raw`` (empty: the default); None for ``off``.

        Raises ``InvalidFlagError`` for a name nothing provides, and
        ``ModelUnavailableError`` when a backend cannot be built (a built-in's
        own, or a plugin's failure, named).
        """
        key = normalize(raw) or self.default
        if key == OFF:
            return None
        with self._lock:
            cached = self._instances.get(key)
            if cached is not None:
                return cached
            factory = self._registered.get(key) or self._builtins.get(key)
            instance = factory() if factory is not None else self._from_plugin(key, raw)
            self._instances[key] = instance
            return instance

    def _from_plugin(self, key: str, raw: str) -> T:
        found = [ep for ep in _entry_points(self.group) if normalize(ep.name) == key]
        if not found:
            names = [*self.available(), OFF]
            raise InvalidFlagError(
                f"unknown {self.noun} {raw!r}; expected one of: {', '.join(names)}",
                suggestions=[
                    f"{self.setting} to one of: {', '.join(names)}",
                    f"or install a package that declares it in the {self.group!r} entry points",
                ],
                details={self.detail_key: raw, "available": names},
            )
        plugins = sorted({_plugin(ep) for ep in found})
        if len(plugins) > 1:
            raise self._refusal(
                plugins[0],
                f"{len(plugins)} installed distributions declare the {self.noun} {key!r}: "
                + ", ".join(f"{p.distribution} ({p.value})" for p in plugins),
                f"uninstall all but one of: {', '.join(p.distribution for p in plugins)}",
            )
        plugin = plugins[0]
        try:
            factory = found[0].load()
        except Exception as exc:  # an import error, a syntax error, a missing attribute...
            raise self._refusal(
                plugin,
                f"cannot be imported: {type(exc).__name__}: {exc}",
                f"reinstall or upgrade {plugin.distribution or 'the package declaring it'}",
            ) from exc
        try:
            instance = factory()
        except MemhtmlError:
            raise  # the plugin's own typed refusal (its model is missing, say)
        except Exception as exc:
            raise self._refusal(
                plugin,
                f"failed while building: {type(exc).__name__}: {exc}",
                f"check the configuration {plugin.distribution or 'the plugin'} documents",
            ) from exc
        missing = [attr for attr in self.required if not hasattr(instance, attr)]
        if missing:
            raise self._refusal(
                plugin,
                f"built a {type(instance).__name__}, which is not {self.article_noun}"
                f" (it lacks {', '.join(missing)})",
                f"report it to the authors of {plugin.distribution or 'the plugin'}",
            )
        return instance

    def _refusal(self, plugin: Plugin, why: str, first_step: str) -> ModelUnavailableError:
        origin = plugin.distribution or "an unknown distribution"
        if plugin.version:
            origin += f" {plugin.version}"
        details: dict[str, Any] = {self.detail_key: plugin.name, **plugin.describe()}
        details["plugin"] = details.pop("name")
        details["group"] = self.group
        return ModelUnavailableError(
            f"the {self.noun} plugin {plugin.name!r} ({plugin.value}, from {origin}) {why}",
            suggestions=[
                first_step,
                f"{self.setting} to a built-in {self.noun}: {', '.join(self.builtin_names())}",
            ],
            details=details,
        )
