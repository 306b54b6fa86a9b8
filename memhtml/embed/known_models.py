"""What popular embedding models want that an OpenAI-compatible endpoint does not say.

Many retrieval models are trained asymmetrically: a query and a passage are
encoded with different instructions, and a model fed bare text on both sides
loses recall quietly (the e5 and nomic model cards both warn of it). The
endpoint cannot tell us, so this table does, for the families people run on
Ollama, llama.cpp, vLLM, LM Studio or a hosted API: the prefix each side
wants and, where it is fixed, the native width (so no call is spent asking).

A model is matched by its name as the endpoint spells it, lowercased, with
an organisation (``intfloat/``, ``BAAI/``) and an Ollama tag (``:latest``,
``:335m``) ignored; the first pattern that matches wins, so the specific
entries come before the general ones. ``MEMHTML_EMBED_QUERY_PREFIX`` and
``MEMHTML_EMBED_DOCUMENT_PREFIX`` override a row (set to empty for none).
docs/embedders.md prints this table.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

RETRIEVE: Final = "Represent this sentence for searching relevant passages: "
TASK: Final = "Given a web search query, retrieve relevant passages that answer the query"
INSTRUCT: Final = f"Instruct: {TASK}\nQuery: "  # e5-mistral, multilingual-e5-large-instruct
QWEN_INSTRUCT: Final = f"Instruct: {TASK}\nQuery:"  # Qwen3-Embedding's card: no space


class KnownModel(NamedTuple):
    """One family: a pattern on the bare model name, its native width, its prefixes."""

    pattern: str
    dim: int | None
    query_prefix: str = ""
    document_prefix: str = ""
    note: str = ""


KNOWN_MODELS: Final[tuple[KnownModel, ...]] = (
    KnownModel(r"nomic-embed-text", 768, "search_query: ", "search_document: ", "nomic v1/v1.5/v2"),
    KnownModel(r"e5-mistral", 4096, INSTRUCT, "", "instruction on the query side only"),
    KnownModel(r"multilingual-e5-large-instruct", 1024, INSTRUCT, ""),
    KnownModel(r"(multilingual-)?e5-small", 384, "query: ", "passage: "),
    KnownModel(r"(multilingual-)?e5-base", 768, "query: ", "passage: "),
    KnownModel(r"(multilingual-)?e5-large", 1024, "query: ", "passage: "),
    KnownModel(r"bge-m3", 1024, "", "", "no prefix"),
    KnownModel(r"bge-small-en", 384, RETRIEVE, ""),
    KnownModel(r"bge-base-en", 768, RETRIEVE, ""),
    KnownModel(r"bge-large-en", 1024, RETRIEVE, ""),
    KnownModel(r"mxbai-embed-large", 1024, RETRIEVE, ""),
    KnownModel(r"snowflake-arctic-embed2", 1024, "query: ", "", "arctic-embed 2.0"),
    KnownModel(r"snowflake-arctic-embed-l-v2", 1024, "query: ", "", "arctic-embed 2.0"),
    KnownModel(r"snowflake-arctic-embed", None, RETRIEVE, "", "arctic-embed 1.x"),
    KnownModel(r"qwen3-embedding", None, QWEN_INSTRUCT, "", "0.6B 1024, 4B 2560, 8B 4096"),
    KnownModel(r"embeddinggemma", 768, "task: search result | query: ", "title: none | text: "),
    KnownModel(r"all-minilm", 384, "", "", "no prefix"),
    KnownModel(r"text-embedding-3-small", 1536, "", "", "OpenAI; shortens with dimensions"),
    KnownModel(r"text-embedding-3-large", 3072, "", "", "OpenAI; shortens with dimensions"),
    KnownModel(r"text-embedding-ada-002", 1536, "", "", "OpenAI"),
)

_ORG: Final = re.compile(r"^.*/")
_TAG: Final = re.compile(r":[^/]*$")


def bare_name(model: str) -> str:
    """``BAAI/bge-small-en-v1.5:latest`` -> ``bge-small-en-v1.5``."""
    return _TAG.sub("", _ORG.sub("", model.strip().lower()))


def known_model(model: str) -> KnownModel | None:
    """The table's row for ``model``, or None when the family is not listed."""
    name = bare_name(model)
    for row in KNOWN_MODELS:
        if re.match(row.pattern, name):
            return row
    return None
