"""The write doors' refusal of a memory that holds a credential (ERR_SECRET_DETECTED).

Every door that makes a memory (write, correct, apply, task add, the MCP
tools, the Python API, sleep's phases) renders it through the `Planner`, and
the Planner calls `refuse_secrets` on the bytes it is about to stage and the
path it chose. The whole file is scanned first (one pass over the text: the
common case, nothing found, costs that pass only); on a hit the parsed
fields are scanned one by one so the error names the field. The error names
the field and the kind of secret (memhtml.domain.secrets' rule id), never the
secret: it reaches envelopes, logs and commit messages.

A caller that means it passes `allow_secret` (the CLI's `--allow-secret`, an
op's or MCP input's `allow_secret` field, the Python keyword).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memhtml.contracts.errors import SecretFoundError
from memhtml.domain.secrets import describe, first_in_fields, first_secret

if TYPE_CHECKING:
    from memhtml.html import MemoryDocument


def _fields(doc: MemoryDocument) -> Iterator[tuple[str, str]]:
    # The narrow fields first: the body's text holds the facets' and citations' text too.
    yield "title", doc.title
    yield "claim", doc.gist
    for tag in doc.tags:
        yield "tag", tag
    for etype, name in doc.entities:
        yield "entity", f"{etype}:{name}"
    for alias in doc.aliases:
        yield "alias", alias
    for facet in doc.facets:
        yield "facet", f"{facet.name}: {facet.value}"
    for citation in doc.citations:
        yield "citation", citation.text
        if citation.url:
            yield "citation", citation.url
    for link in doc.links:
        yield "link", link.href
    for name, value in doc.metas.items():
        yield name.removeprefix("memhtml-"), value
    yield "body", doc.body_text
    for text in (*doc.summaries, *doc.details_text, *doc.asides):
        yield "body", text
    yield "article_html", doc.article_html


def secret_in(data: bytes, doc: MemoryDocument, path: str | None) -> tuple[str, str] | None:
    """(field, rule id) of the first secret in a memory about to be written, or None."""
    if path is not None:
        rule = first_secret(path)
        if rule is not None:
            return "path", rule
    text = data.decode("utf-8", "replace")
    rule = first_secret(text)
    if rule is None:
        return None
    return first_in_fields(_fields(doc)) or ("file", rule)


def refuse_secrets(
    data: bytes, doc: MemoryDocument, path: str | None, *, what: str, allow: bool
) -> None:
    """Raise SecretFoundError when the memory holds a secret and `allow` is False."""
    if allow:
        return
    found = secret_in(data, doc, path)
    if found is None:
        return
    field, rule = found
    raise SecretFoundError(
        f"{what}: the {field} holds what looks like {describe(rule)} ({rule}); a memory never"
        " stores a credential. Remove it (keep where it lives, e.g. 'in the vault under"
        " deploy/aws'), or pass --allow-secret if it is not a secret",
        suggestions=[
            "remove the credential from the text and write again",
            "--allow-secret (MCP and ops: allow_secret) writes it anyway",
        ],
        details={"field": field, "kind": rule},
    )
