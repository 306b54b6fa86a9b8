"""Input models of the MCP tools: one pydantic model per tool, schemas generated from them.

Names and input field names are the original memhtml's (REFERENCE.md, "MCP
surface"); ours accept a few more (`claim`, `event_at`, `explain`, ...). A
model refuses unknown fields and malformed paths, so a handler only ever sees
valid input.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.json_schema import JsonDict
from pydantic_core import PydanticCustomError

from memhtml.contracts.errors import InvalidPathError
from memhtml.contracts.limits import (
    MAX_BATCH_OPS,
    MAX_FILTER_VALUES,
    MAX_LABELS,
    MAX_PARAGRAPHS,
    MAX_PATHS,
    MAX_SCRIPT_CHARS,
    too_many,
)
from memhtml.contracts.paths import memory_path
from memhtml.contracts.vocab import (
    EDGE_RELS,
    MEMORY_RELS,
    MEMORY_TYPES,
    PARA_BUCKETS,
    TASK_STATUSES,
    WRITABLE_MEMORY_TYPES,
    normalize_rel,
)
from memhtml.index.retrieval import MAX_QUERY_CHARS

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

log = logging.getLogger("memhtml.mcp")

GetCorpus = Callable[[], "Corpus"]
TRACE_NOTE: Final = "no transcripts indexed: there is no memory root to hold the trace plane"
SIGNALS: Final = ("positive", "negative", "neutral")
# `from_session` is provenance minted by the system, never authored by a caller.
AUTHORABLE_RELS: Final = tuple(r for r in EDGE_RELS if r != "from_session")
_MODEL = ConfigDict(extra="forbid")


# -- field types ---------------------------------------------------------------
def _path_ok(value: str) -> str:
    try:
        memory_path(value)
    except InvalidPathError as exc:
        raise PydanticCustomError("invalid_path", "{reason}", {"reason": exc.message}) from None
    return value


def _script_ok(value: str) -> str:
    # The same bound and code as `memhtml exec` and run_exec (ERR_INPUT_TOO_LARGE).
    if len(value) > MAX_SCRIPT_CHARS:
        raise PydanticCustomError(
            "input_too_large",
            "the script is {length} characters; at most {limit} are accepted",
            {"length": f"{len(value):,}", "limit": f"{MAX_SCRIPT_CHARS:,}"},
        )
    return value


def _query_ok(value: str) -> str:
    # Refused here, before a corpus is opened; the core refuses it too (ERR_INPUT_TOO_LARGE).
    if len(value) > MAX_QUERY_CHARS:
        raise PydanticCustomError(
            "input_too_large",
            "the query is {length} characters; at most {limit} are accepted",
            {"length": f"{len(value):,}", "limit": f"{MAX_QUERY_CHARS:,}"},
        )
    return value


def _at_most(limit: int) -> BeforeValidator:
    """A list (or mapping) input of at most `limit` entries (memhtml.contracts.limits)."""

    def check(value: Any) -> Any:
        if isinstance(value, (list, tuple, dict)) and len(value) > limit:
            raise PydanticCustomError(
                "input_too_large",
                "{message}",
                {"message": too_many(len(value), limit), "limit": limit, "count": len(value)},
            )
        return value

    return BeforeValidator(check)


def _items(limit: int) -> JsonDict:
    return {"maxItems": limit}


def _no_facets(value: Facets | None) -> Facets | None:
    if value:
        raise PydanticCustomError(
            "unsupported_filter",
            "memory_list does not filter by facet; memory_search does (pass facets there)",
        )
    return value


def _choice(what: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in choices:
            raise PydanticCustomError(
                "invalid_choice",
                "{value} is not a {what}; one of: {choices}",
                {"value": repr(value), "what": what, "choices": ", ".join(choices)},
            )
        return value

    return check


def _rel_in(choices: tuple[str, ...]) -> Callable[[str], str]:
    def check(value: str) -> str:
        rel = normalize_rel(value)
        if rel is None or rel not in choices:
            raise PydanticCustomError(
                "invalid_choice",
                "{value} is not an accepted relation here; one of: {choices}",
                {"value": repr(value), "choices": ", ".join(choices)},
            )
        return rel

    return check


def _enum(values: tuple[str, ...]) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": list(values)})


MemoryPath = Annotated[str, AfterValidator(_path_ok)]
Query = Annotated[str, AfterValidator(_query_ok)]
Script = Annotated[str, AfterValidator(_script_ok)]
WritableType = Annotated[
    str,
    AfterValidator(_choice("writable memory type", WRITABLE_MEMORY_TYPES)),
    _enum(WRITABLE_MEMORY_TYPES),
]
AnyType = Annotated[str, AfterValidator(_choice("memory type", MEMORY_TYPES)), _enum(MEMORY_TYPES)]
LinkRel = Annotated[str, AfterValidator(_rel_in(AUTHORABLE_RELS)), _enum(AUTHORABLE_RELS)]
MemoryRel = Annotated[str, AfterValidator(_rel_in(MEMORY_RELS)), _enum(MEMORY_RELS)]
Para = Annotated[str, AfterValidator(_choice("PARA bucket", PARA_BUCKETS)), _enum(PARA_BUCKETS)]
Signal = Annotated[str, AfterValidator(_choice("signal", SIGNALS)), _enum(SIGNALS)]
TaskStatus = Annotated[
    str, AfterValidator(_choice("task status", TASK_STATUSES)), _enum(TASK_STATUSES)
]
Facets = dict[str, str] | list[str]
FacetFilter = Annotated[Facets | None, _at_most(MAX_FILTER_VALUES)]
NoFacets = Annotated[Facets | None, _at_most(MAX_FILTER_VALUES), AfterValidator(_no_facets)]
Labels = Annotated[list[str] | None, _at_most(MAX_LABELS)]
Body = Annotated[str | list[str] | None, _at_most(MAX_PARAGRAPHS)]
TypeFilter = Annotated[list[AnyType] | None, _at_most(MAX_FILTER_VALUES)]
TagFilter = Annotated[list[str] | None, _at_most(MAX_FILTER_VALUES)]
_QUERY_SCHEMA: Final[JsonDict] = {"maxLength": MAX_QUERY_CHARS}

_D = {
    "session_id": "Provenance: the agent session id (written as the memhtml-session meta).",
    "prompt_id": "Provenance: the prompt id (written as the memhtml-prompt meta).",
    "turn_uuid": "Provenance: the turn uuid (written as the memhtml-turn meta).",
    "workspace": "Restrict to (or file under) projects/<workspace>/.",
    "as_of": "Facts valid at this date or ISO instant; superseded memories become eligible.",
    "include_archived": "Include archived memories (default false).",
    "entity": "Restrict to an entity: a name, or type:name (case-folded).",
    "facets": "Facet filters: an object {name: value} or a list of 'name=value' strings.",
    "allow_secret": "Write it even though it holds what looks like a credential (an API key,"
    " a token, a private key, a password); without it such a memory is ERR_SECRET_DETECTED.",
}


# -- input models ----------------------------------------------------------------
class WriteInput(BaseModel):
    """memory_write."""

    model_config = _MODEL
    title: str = Field(min_length=1, max_length=300, description="One-line title.")
    memory_type: WritableType = Field(description="Memory type (arc is written by sleep only).")
    body: Body = Field(
        None,
        description="Prose body; without `claim`, its first sentence becomes the claim.",
        json_schema_extra=_items(MAX_PARAGRAPHS),
    )
    article_html: str | None = Field(
        None, description="Caller-owned inner HTML of <article>, instead of claim/body."
    )
    claim: str | None = Field(
        None, description="The claim: one sentence, becomes the <mark> and the gist (ours)."
    )
    path: MemoryPath | None = Field(
        None, description="Explicit root-relative path under a PARA bucket, ending in .html."
    )
    strict_path: bool | None = Field(
        None, description="Fail (ERR_WRITE_CONFLICT) instead of suffixing when `path` is taken."
    )
    workspace: str | None = Field(None, description="File under projects/<workspace>/.")
    tags: Labels = Field(
        None,
        description="Tags; the first one picks the topic folder.",
        json_schema_extra=_items(MAX_LABELS),
    )
    entities: Labels = Field(
        None, description="Entities as 'type:name'.", json_schema_extra=_items(MAX_LABELS)
    )
    importance: int | None = Field(None, ge=1, le=10, description="Importance 1..10.")
    confidence: float | None = Field(None, ge=0.0, le=1.0, description="Confidence 0..1.")
    event_at: str | None = Field(
        None, description="When the fact happened: a date or ISO instant (ours)."
    )
    session_id: str | None = Field(None, description=_D["session_id"])
    prompt_id: str | None = Field(None, description=_D["prompt_id"])
    turn_uuid: str | None = Field(None, description=_D["turn_uuid"])
    allow_secret: bool | None = Field(None, description=_D["allow_secret"])


class WriteBatchInput(BaseModel):
    """memory_write_batch."""

    model_config = _MODEL
    ops: Annotated[list[dict[str, Any]], _at_most(MAX_BATCH_OPS)] = Field(
        json_schema_extra=_items(MAX_BATCH_OPS),
        description=(
            'Ops in order. A write op is memory_write\'s fields, e.g. {"title": ...,'
            ' "memory_type": "semantic", "body": ...} ("op": "write" is the default);'
            ' also {"op": "correct", "target_path": ..., "claim": ...},'
            ' {"op": "archive", "path": ...},'
            ' {"op": "link", "src_path": ..., "rel": ..., "dst_path": ...}.'
        ),
    )
    continue_on_error: bool | None = Field(
        None, description="Commit the ops that succeed instead of none (default: atomic)."
    )
    detect_conflicts: bool | None = Field(
        None,
        description="Report each write whose claim gives an active memory's fact (same frame:"
        " the claim up to its last of/is/in/to/by/as) another value: `conflict` (the first,"
        " {path, batch_index, claim, frame_key}) and `conflicts` (all). Written anyway unless"
        " `strict`.",
    )
    detect_near_duplicates: bool | None = Field(
        None,
        description="Report, per new memory, the active memories it likely restates:"
        " `near_duplicates` [{path, claim, cosine}].",
    )
    consolidate: Literal["last-wins"] | None = Field(
        None,
        description="last-wins: a later op conflicting with an earlier one replaces it"
        " (`consolidated_into`), and a write conflicting with active memories supersedes"
        " them in the same commit (`superseded`). Only for facts holding one value at a time.",
    )
    strict: bool | None = Field(
        None,
        description="Hold conflicting writes as failures (ERR_CONFLICT) instead of writing"
        " them; atomic unless continue_on_error. Not with consolidate.",
    )
    session_id: str | None = Field(
        None, description="Batch provenance, used by ops that give none of their own."
    )
    prompt_id: str | None = Field(None, description="Batch provenance (see session_id).")
    turn_uuid: str | None = Field(None, description="Batch provenance (see session_id).")
    allow_secret: bool | None = Field(
        None,
        description="Let every write and correct op store what looks like a credential (an"
        " op's own allow_secret field does it for that op).",
    )


class ReadInput(BaseModel):
    """memory_read."""

    model_config = _MODEL
    path: MemoryPath = Field(description="Root-relative memory path, e.g. areas/inbox/x.html.")
    session_id: str | None = Field(
        None, description="Accepted, NOT implemented (no session links are recorded yet)."
    )


class SearchInput(BaseModel):
    """memory_search."""

    model_config = _MODEL
    query: Query = Field(
        min_length=1,
        description=f"What to look for, in plain words (at most {MAX_QUERY_CHARS} characters).",
        json_schema_extra=_QUERY_SCHEMA,
    )
    limit: int | None = Field(None, ge=1, le=500, description="How many hits (default 10).")
    memory_types: TypeFilter = Field(
        None,
        description="Only these memory types (tasks are excluded unless named).",
        json_schema_extra=_items(MAX_FILTER_VALUES),
    )
    workspace: str | None = Field(None, description=_D["workspace"])
    tags: TagFilter = Field(
        None,
        description="Only memories carrying every tag.",
        json_schema_extra=_items(MAX_FILTER_VALUES),
    )
    entity: str | None = Field(None, description=_D["entity"])
    facets: FacetFilter = Field(
        None,
        description=_D["facets"],
        json_schema_extra={"maxItems": MAX_FILTER_VALUES, "maxProperties": MAX_FILTER_VALUES},
    )
    include_archived: bool | None = Field(None, description=_D["include_archived"])
    as_of: str | None = Field(None, description=_D["as_of"])
    explain: bool | None = Field(
        None, description="Per hit, each arm's rank and RRF contribution (ours)."
    )
    exact: bool | None = Field(
        None,
        description=(
            "Scan every vector even where the approximate graph would answer: the exact"
            " oracle (ours)."
        ),
    )


class RecallInput(BaseModel):
    """memory_recall."""

    model_config = _MODEL
    query: Query = Field(
        min_length=1,
        description=f"What to recall, in plain words (at most {MAX_QUERY_CHARS} characters).",
        json_schema_extra=_QUERY_SCHEMA,
    )
    budget_chars: int | None = Field(
        None, ge=0, description="Character budget for quoted memory text (default 16000)."
    )
    workspace: str | None = Field(None, description=_D["workspace"])
    memory_types: TypeFilter = Field(
        None, description="Only these types (ours).", json_schema_extra=_items(MAX_FILTER_VALUES)
    )
    tags: TagFilter = Field(
        None,
        description="Only memories carrying every tag (ours).",
        json_schema_extra=_items(MAX_FILTER_VALUES),
    )
    entity: str | None = Field(None, description=_D["entity"] + " (ours)")
    include_archived: bool | None = Field(None, description=_D["include_archived"] + " (ours)")
    as_of: str | None = Field(None, description=_D["as_of"] + " (ours)")


class CorrectInput(BaseModel):
    """memory_correct."""

    model_config = _MODEL
    target_path: MemoryPath = Field(description="The live memory to correct.")
    title: str = Field(min_length=1, max_length=300, description="Title of the replacement.")
    reason: str = Field(description="Why (recorded in the commit message).")
    body: Body = Field(
        None,
        description="New prose body; without `claim`, its first sentence is the claim.",
        json_schema_extra=_items(MAX_PARAGRAPHS),
    )
    article_html: str | None = Field(None, description="New inner HTML of <article>.")
    claim: str | None = Field(None, description="The new claim, one sentence (ours).")
    memory_type: WritableType | None = Field(
        None, description="New type (default: the original's) (ours)."
    )
    session_id: str | None = Field(None, description=_D["session_id"])
    allow_secret: bool | None = Field(None, description=_D["allow_secret"])


class LinkInput(BaseModel):
    """memory_link."""

    model_config = _MODEL
    src_path: MemoryPath = Field(description="The memory whose head gains the <link>.")
    rel: LinkRel = Field(description="The relation (underscore or hyphen form).")
    dst_path: MemoryPath = Field(description="The memory linked to.")
    strength: float | None = Field(
        None, description="Accepted, ignored: authored links carry no weight."
    )


class NeighborsInput(BaseModel):
    """memory_neighbors."""

    model_config = _MODEL
    path: MemoryPath = Field(description="The center memory.")
    depth: int | None = Field(None, description="Hops: 1 (default) or 2; clamped to 1..2.")
    rels: Annotated[list[MemoryRel] | None, _at_most(MAX_FILTER_VALUES)] = Field(
        None,
        description="Only these memory relations.",
        json_schema_extra=_items(MAX_FILTER_VALUES),
    )
    limit: int | None = Field(None, ge=1, le=500, description="At most this many nodes (100).")


class ResolveInput(BaseModel):
    """memory_resolve."""

    model_config = _MODEL
    path: MemoryPath = Field(description="A path as cited (live, moved or archived).")


class ArchiveInput(BaseModel):
    """memory_archive."""

    model_config = _MODEL
    path: MemoryPath = Field(description="The live memory to archive.")
    reason: str | None = Field(description="Why (recorded in the commit message); may be null.")


class ReinforceInput(BaseModel):
    """memory_reinforce."""

    model_config = _MODEL
    paths: Annotated[list[MemoryPath], _at_most(MAX_PATHS)] = Field(
        min_length=1, description="Memories that were used.", json_schema_extra=_items(MAX_PATHS)
    )
    signal: Signal = Field(description="Outcome: positive, negative or neutral.")


class ListInput(BaseModel):
    """memory_list."""

    model_config = _MODEL
    memory_type: AnyType | None = Field(None, description="Only this memory type.")
    workspace: str | None = Field(None, description="Only projects/<workspace>/.")
    tag: str | None = Field(None, description="Only memories carrying this tag.")
    entity: str | None = Field(None, description=_D["entity"])
    facets: NoFacets = Field(
        None,
        description="Not implemented for listings: a non-empty value is refused"
        " (ERR_INVALID_FLAG); memory_search filters by facet.",
        json_schema_extra={"maxItems": MAX_FILTER_VALUES, "maxProperties": MAX_FILTER_VALUES},
    )
    para: Para | None = Field(None, description="Only this PARA bucket.")
    include_archived: bool | None = Field(None, description=_D["include_archived"] + " (ours)")
    limit: int | None = Field(None, ge=1, le=500, description="Page size (default 50).")
    cursor: str | None = Field(
        None,
        description="Continue after this path: the previous page's next_cursor (anything"
        " else is refused, ERR_INVALID_FLAG).",
    )


class StatusInput(BaseModel):
    """memory_status (no input)."""

    model_config = _MODEL


class TraceSearchInput(BaseModel):
    """trace_search."""

    model_config = _MODEL
    query: Query = Field(
        description=f"Words to look for in session transcripts (at most {MAX_QUERY_CHARS}"
        " characters).",
        json_schema_extra=_QUERY_SCHEMA,
    )
    cwd: str | None = Field(None, description="Only sessions run in this working directory.")
    since: str | None = Field(
        None, description="Only turns at or after this date or instant (ISO)."
    )
    limit: int | None = Field(None, ge=1, le=200, description="At most this many (default 20).")
    session_id: str | None = Field(
        None,
        description="Only this session's turns: its id or a unique prefix of 4+ characters"
        " (ours; ambiguous: ERR_AMBIGUOUS_ID with details.candidates).",
    )


class TraceLinksInput(BaseModel):
    """trace_links."""

    model_config = _MODEL
    session_id: str | None = Field(
        None,
        description="Links of this session: its id or a unique prefix of 4+ characters"
        " (ambiguous: ERR_AMBIGUOUS_ID with details.candidates).",
    )
    path: str | None = Field(None, description="Links of this memory (a leading / is dropped).")


class TaskAddInput(BaseModel):
    """task_add."""

    model_config = _MODEL
    title: str = Field(min_length=1, max_length=300, description="One-line title.")
    claim: str | None = Field(None, description="The commitment, one sentence (default: title).")
    body: Body = Field(
        None,
        description="Body paragraphs after the claim.",
        json_schema_extra=_items(MAX_PARAGRAPHS),
    )
    status: TaskStatus | None = Field(None, description="Initial status (default todo).")
    due: str | None = Field(
        None, description="Due date or ISO instant (YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ)."
    )
    workspace: str | None = Field(
        None, description="File under projects/<workspace>/tasks/ (else areas/inbox/tasks/)."
    )
    tags: Labels = Field(None, description="Tags.", json_schema_extra=_items(MAX_LABELS))
    entities: Labels = Field(
        None, description="Entities as 'type:name'.", json_schema_extra=_items(MAX_LABELS)
    )
    blocks: Annotated[list[MemoryPath] | None, _at_most(MAX_PATHS)] = Field(
        None, description="Tasks this task blocks.", json_schema_extra=_items(MAX_PATHS)
    )
    subtask_of: MemoryPath | None = Field(None, description="The parent task.")
    session_id: str | None = Field(None, description=_D["session_id"])
    prompt_id: str | None = Field(None, description=_D["prompt_id"])
    turn_uuid: str | None = Field(None, description=_D["turn_uuid"])
    allow_secret: bool | None = Field(None, description=_D["allow_secret"])


class TaskStatusInput(BaseModel):
    """task_status."""

    model_config = _MODEL
    path: MemoryPath = Field(description="The task.")
    status: TaskStatus = Field(description="New status: todo, doing, blocked or done.")


class TaskListInput(BaseModel):
    """task_list."""

    model_config = _MODEL
    status: Annotated[list[TaskStatus] | None, _at_most(MAX_FILTER_VALUES)] = Field(
        None,
        description="Only these statuses (default: every status but done).",
        json_schema_extra=_items(MAX_FILTER_VALUES),
    )
    due_before: str | None = Field(
        None, description="Only tasks due strictly before this calendar day (a date)."
    )
    workspace: str | None = Field(None, description="Only projects/<workspace>/.")
    include_done: bool | None = Field(None, description="Include done tasks (default false).")
    limit: int | None = Field(None, ge=1, le=500, description="At most this many (default 50).")


class ExecInput(BaseModel):
    """exec (code mode; memhtml.codemode)."""

    model_config = _MODEL
    script: Script = Field(
        min_length=1,
        description='An ES module; `import { corpus } from "/workspace/lib/corpus.mjs"`'
        f" (at most {MAX_SCRIPT_CHARS:,} characters).",
        json_schema_extra={"maxLength": MAX_SCRIPT_CHARS},
    )
    sha: str | None = Field(None, description="The commit to read (default HEAD, resolved first).")
    timeout_ms: int | None = Field(
        None, ge=1, le=600_000, description="Wall-time bound in ms (default 30000)."
    )
    memory_mb: int | None = Field(None, ge=16, le=4096, description="Heap bound (default 512).")


# -- handlers --------------------------------------------------------------------
