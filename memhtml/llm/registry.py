"""Language models by name: ``fake``, ``bedrock``, ``openai``, ``off`` (the default), and
any plugin an installed distribution declares in the ``memhtml.models``
entry-point group (memhtml.seams, docs/plugins.md).

Importing this module loads no SDK or package metadata. Only composition
roots (the CLI, the sleep engine's entry points) should call :func:`get_model`
without a name; that is the one place ``MEMHTML_LLM`` is read. Tests register
a scripted fake through :func:`register` rather than patching.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

from memhtml.llm.base import Model
from memhtml.seams import OFF, Seam

ENV_VAR = "MEMHTML_LLM"
DEFAULT = OFF
GROUP: Final = "memhtml.models"

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


SEAM: Final[Seam[Model]] = Seam(
    {"fake": _fake, "bedrock": _bedrock, "openai": _openai},
    group=GROUP,
    required=("model_id", "generate"),
    default=DEFAULT,
    noun="language model",
    article_noun="a model",
    setting=f"set {ENV_VAR} (or --llm)",
    detail_key="llm",
)
register = SEAM.register
unregister = SEAM.unregister
available = SEAM.available
plugins = SEAM.plugins
clear_cache = SEAM.clear_cache


def get_model(name: str | None = None) -> Model | None:
    """The model called ``name`` (else ``$MEMHTML_LLM``, else ``off``); None for ``off``.

    Raises ``InvalidFlagError`` for an unknown name and lets ``ModelUnavailableError``
    through when the backend cannot be configured (a plugin's failure is one, naming it).
    """
    return SEAM.get(os.environ.get(ENV_VAR, "") if name is None else name)
