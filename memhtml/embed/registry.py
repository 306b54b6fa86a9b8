"""Embedders by name: ``fake``, ``local`` (the default), ``bedrock``, ``openai``, ``off``,
and any plugin an installed distribution declares in the ``memhtml.embedders``
entry-point group (memhtml.seams, docs/plugins.md).

Importing this module loads no model runtime, SDK or package metadata. Only
composition roots (the CLI, the MCP server, bench scripts) should call
:func:`get_embedder` without a name; that is the one place ``MEMHTML_EMBED``
is read. Tests register a fake through :func:`register` rather than patching.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

from memhtml.embed.base import Embedder
from memhtml.seams import Seam

ENV_VAR = "MEMHTML_EMBED"
DEFAULT = "local"
GROUP: Final = "memhtml.embedders"

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


SEAM: Final[Seam[Embedder]] = Seam(
    {"fake": _fake, "local": _local, "bedrock": _bedrock, "openai": _openai},
    group=GROUP,
    required=("model_id", "batch_size", "embed_documents", "embed_query"),
    default=DEFAULT,
    noun="embedder",
    article_noun="an embedder",
    setting=f"set {ENV_VAR}",
    detail_key="embedder",
)
register = SEAM.register
unregister = SEAM.unregister
available = SEAM.available
plugins = SEAM.plugins
clear_cache = SEAM.clear_cache


def get_embedder(name: str | None = None) -> Embedder | None:
    """The embedder called ``name`` (else ``$MEMHTML_EMBED``, else ``local``); None for ``off``.

    Raises ``InvalidFlagError`` for an unknown name and lets ``ModelUnavailableError``
    through when the model cannot be loaded (a plugin's failure is one, naming it).
    """
    return SEAM.get(os.environ.get(ENV_VAR, "") if name is None else name)
