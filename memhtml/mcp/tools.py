"""The MCP tools: one pydantic input model and one thin handler per tool.

Names and input field names are the original memhtml's (REFERENCE.md, "MCP
surface"); ours accept a few more (`claim`, `event_at`, `explain`, ...). Each
handler parses, calls the same operation the CLI calls, and returns the same
envelope the CLI prints. Invalid input never raises: it becomes a failure
envelope with a code (ERR_INVALID_FLAG, ERR_MISSING_ARGUMENT, ERR_INVALID_PATH).

Fields the original accepts that we do not implement are accepted and named in
the result's `unsupported` list, never silently dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from memhtml.contracts import plain
from memhtml.contracts.envelope import failure, success
from memhtml.contracts.errors import (
    InputTooLargeError,
    InvalidFlagError,
    InvalidMemoryError,
    InvalidPathError,
)
from memhtml.contracts.paths import memory_path
from memhtml.mcp.inputs import (
    TRACE_NOTE,
    ArchiveInput,
    CorrectInput,
    ExecInput,
    Facets,
    GetCorpus,
    LinkInput,
    ListInput,
    NeighborsInput,
    ReadInput,
    RecallInput,
    ReinforceInput,
    ResolveInput,
    SearchInput,
    StatusInput,
    TaskAddInput,
    TaskListInput,
    TaskStatusInput,
    TraceLinksInput,
    TraceSearchInput,
    WriteBatchInput,
    WriteInput,
)

log = logging.getLogger("memhtml.mcp")


def _given(model: BaseModel, *names: str) -> dict[str, Any]:
    """The named fields the caller gave a non-null value."""
    return {n: getattr(model, n) for n in names if getattr(model, n) is not None}


def _facet_list(facets: Facets | None) -> list[str] | None:
    if not facets:
        return None
    if isinstance(facets, Mapping):
        return [f"{k}={v}" for k, v in facets.items()]
    return list(facets)


def _mark_unsupported(data: dict[str, Any], unsupported: Mapping[str, str]) -> dict[str, Any]:
    if unsupported:
        data["unsupported"] = list(unsupported)
        data["unsupported_notes"] = dict(unsupported)
    return data


def memory_write(get: GetCorpus, p: WriteInput) -> dict[str, Any]:
    """Write one memory."""
    metas = _given(
        p,
        "article_html",
        "path",
        "strict_path",
        "workspace",
        "importance",
        "confidence",
        "event_at",
        "session_id",
        "prompt_id",
        "turn_uuid",
        "allow_secret",
    )
    if p.tags is not None:
        metas["tag"] = p.tags
    if p.entities is not None:
        metas["entity"] = p.entities
    data = get().write(title=p.title, claim=p.claim, type=p.memory_type, body=p.body, **metas)
    return success("memory.written", data)


def memory_write_batch(get: GetCorpus, p: WriteBatchInput) -> dict[str, Any]:
    """Apply many ops as one commit, with the write-time checks the caller asks for."""
    from memhtml.ops.write_checks import WriteChecks

    checks = WriteChecks(
        detect_conflicts=bool(p.detect_conflicts),
        detect_near_duplicates=bool(p.detect_near_duplicates),
        consolidate=p.consolidate,
        strict=bool(p.strict),
    )
    batch = {k: v for k, v in _given(p, "session_id", "prompt_id", "turn_uuid").items() if v}
    ops: list[dict[str, Any]] = []
    for raw in p.ops:
        op = dict(raw)
        kind = op.get("op", "write")
        inherit = (
            ("session_id", "prompt_id", "turn_uuid")
            if kind == "write"
            else (("session_id",) if kind == "correct" else ())
        )
        for key in inherit:
            if op.get(key) is None and key in batch:
                op[key] = batch[key]
        if p.allow_secret and kind in ("write", "correct"):
            op["allow_secret"] = True
        ops.append(op)
    outcome = get().apply(ops, continue_on_error=bool(p.continue_on_error), checks=checks)
    data = outcome.to_data()
    err = outcome.error()
    if err is not None:
        # Atomic abort: the failing op's code; continue_on_error with failures:
        # ERR_PARTIAL_FAILURE. Either way every per-op result is in details.
        return failure(err.code, err.message, err.suggestions, data)
    return success("batch.applied", data)


def memory_read(get: GetCorpus, p: ReadInput) -> dict[str, Any]:
    """One memory in full (counts as an access; with session_id, linked to the session)."""
    return success("memory.detail", get().read(p.path, session_id=p.session_id))


def memory_search(get: GetCorpus, p: SearchInput) -> dict[str, Any]:
    """Ranked hits; never bumps salience."""
    result = get().search(
        p.query,
        limit=p.limit or 10,
        explain=bool(p.explain),
        exact=bool(p.exact),
        type=p.memory_types or None,
        workspace=p.workspace,
        tag=p.tags or None,
        entity=p.entity,
        facet=_facet_list(p.facets),
        include_archived=bool(p.include_archived),
        as_of=p.as_of,
    )
    return success("memory.hits", result.to_data())


def memory_recall(get: GetCorpus, p: RecallInput) -> dict[str, Any]:
    """A disclosure pack under a character budget."""
    data = get().recall(
        p.query,
        budget=16000 if p.budget_chars is None else p.budget_chars,
        type=p.memory_types or None,
        workspace=p.workspace,
        tag=p.tags or None,
        entity=p.entity,
        include_archived=bool(p.include_archived),
        as_of=p.as_of,
    )
    return success("recall.pack", data)


def memory_correct(get: GetCorpus, p: CorrectInput) -> dict[str, Any]:
    """Replace a memory and archive the original, one commit."""
    fields = _given(
        p, "title", "reason", "body", "article_html", "claim", "session_id", "allow_secret"
    )
    if p.memory_type is not None:
        fields["type"] = p.memory_type
    return success("memory.corrected", get().correct(p.target_path, **fields))


def memory_link(get: GetCorpus, p: LinkInput) -> dict[str, Any]:
    """Add an authored link."""
    data = get().link(p.src_path, p.rel, p.dst_path)
    unsupported = (
        {"strength": "link strength is not modelled; the link was added without it"}
        if p.strength is not None
        else {}
    )
    return success("memory.linked", _mark_unsupported(data, unsupported))


def memory_neighbors(get: GetCorpus, p: NeighborsInput) -> dict[str, Any]:
    """The graph around a memory."""
    from memhtml.ops.reads import neighbors

    data = neighbors(get(), p.path, depth=p.depth or 1, rels=p.rels or None, limit=p.limit or 100)
    return success("memory.neighbors", data)


def memory_resolve(get: GetCorpus, p: ResolveInput) -> dict[str, Any]:
    """What a path became."""
    from memhtml.ops.reads import resolve

    return success("memory.resolved", resolve(get(), p.path))


def memory_archive(get: GetCorpus, p: ArchiveInput) -> dict[str, Any]:
    """Move a memory into archive/."""
    return success("memory.archived", get().archive(p.path, reason=p.reason))


def memory_reinforce(get: GetCorpus, p: ReinforceInput) -> dict[str, Any]:
    """Move salience for memories that were used."""
    return success("memory.reinforced", get().reinforce(p.paths, p.signal))


def memory_list(get: GetCorpus, p: ListInput) -> dict[str, Any]:
    """A page of memories."""
    filters = _given(p, "workspace", "tag", "entity", "para", "cursor")
    data = get().list(
        type=p.memory_type,
        include_archived=bool(p.include_archived),
        limit=p.limit or 50,
        facet=_facet_list(p.facets),
        **filters,
    )
    return success("memory.list", data)


def memory_status(get: GetCorpus, p: StatusInput) -> dict[str, Any]:
    """One-screen summary of the store."""
    from memhtml.ops.health import status

    return success("status.health", status(get()))


def exec_script(get: GetCorpus, p: ExecInput) -> dict[str, Any]:
    """A read-only script over one commit (memhtml.codemode), as `memhtml exec`."""
    from memhtml.codemode import ExecLimits, run_exec

    limits = ExecLimits(**_given(p, "timeout_ms", "memory_mb"))
    return success("exec.report", run_exec(get().git, p.script, sha=p.sha, limits=limits).to_data())


def trace_search(get: GetCorpus, p: TraceSearchInput) -> dict[str, Any]:
    """BM25 over indexed transcript turns (memhtml.ops.traces), as `memhtml trace search`."""
    from memhtml.contracts.errors import RepoRequiredError
    from memhtml.ops.traces import search_traces

    try:
        corpus = get()
    except RepoRequiredError as exc:  # no memory root, so no trace plane: an empty answer
        empty: dict[str, Any] = {"hits": [], "sessions": [], "match": None, "degraded": False}
        return success(
            "trace.sessions",
            {"query": p.query, **empty, "indexed": False, "note": TRACE_NOTE + f" ({exc.message})"},
        )
    data = search_traces(
        corpus,
        p.query,
        session_id=p.session_id,
        since=p.since,
        cwd=p.cwd,
        limit=p.limit or 20,
    )
    return success("trace.sessions", data)


def trace_links(get: GetCorpus, p: TraceLinksInput) -> dict[str, Any]:
    """Sessions <-> memories (memhtml.ops.traces), as `memhtml trace links`."""
    from memhtml.ops.traces import trace_links as links

    path = p.path.lstrip("/") if p.path else None
    if not p.session_id and not path:
        raise InvalidMemoryError("trace links needs a session_id or a path")
    if path:
        memory_path(path)
    return success("trace.links", links(get(), session_id=p.session_id, path=path))


def task_add(get: GetCorpus, p: TaskAddInput) -> dict[str, Any]:
    """Write one task (never deduped), with its task links."""
    fields = _given(
        p,
        "claim",
        "body",
        "status",
        "due",
        "workspace",
        "subtask_of",
        "session_id",
        "prompt_id",
        "turn_uuid",
        "allow_secret",
    )
    fields |= {"tag": p.tags or [], "entity": p.entities or [], "blocks": p.blocks or []}
    return success("task.written", get().task_add(p.title, **fields))


def task_status(get: GetCorpus, p: TaskStatusInput) -> dict[str, Any]:
    """Set a task's status."""
    return success("task.updated", get().task_status(p.path, p.status))


def task_list(get: GetCorpus, p: TaskListInput) -> dict[str, Any]:
    """Open tasks by due date."""
    data = get().task_list(
        status=p.status or None,
        due_before=p.due_before,
        workspace=p.workspace,
        include_done=bool(p.include_done),
        limit=p.limit or 50,
    )
    return success("task.list", data)


# -- the registry ------------------------------------------------------------------
@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what an agent reads about it, its input model and handler."""

    name: str
    title: str
    description: str
    model: type[BaseModel]
    handler: Callable[[GetCorpus, Any], dict[str, Any]]
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    # False for a tool that reads only a commit through git (code mode): the server
    # runs it beside the corpus calls, which run one at a time, so a long script
    # never holds up a search.
    exclusive: bool = True

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema generated from the input model."""
        schema = self.model.model_json_schema()
        schema.pop("description", None)  # the model's docstring; the tool description says it
        schema.setdefault("properties", {})
        return schema


_ENVELOPE = (
    " Returns the CLI's envelope {ok, apiVersion, type, data} (failures: {ok: false, code,"
    " error, suggestions})."
)
TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        "memory_write",
        "Write a memory",
        "Save one durable fact, preference, procedure or lesson as a new memory file. Use it"
        " when you learn something worth keeping across sessions; one fact per call. Give a"
        " `title`, a `memory_type` and either `claim`/`body` (the body's first sentence"
        " becomes the claim) or `article_html`. Content identical to an active memory is"
        " deduped (deduped: true, the existing path) instead of written twice. Cost: one git"
        " commit plus indexing and embedding of one file (tens of ms)." + _ENVELOPE,
        WriteInput,
        memory_write,
        read_only=False,
    ),
    ToolSpec(
        "memory_write_batch",
        "Write many memories",
        "Apply many ops (write, correct, archive, link) as ONE commit. Use it instead of"
        " repeated memory_write when saving several facts at once. Atomic by default: the"
        " first refused op aborts all (failure envelope with every per-op result in"
        " details); continue_on_error commits the rest. detect_conflicts,"
        " detect_near_duplicates and consolidate are accepted but not implemented: the"
        " result names them under `unsupported`. Cost: one commit for the whole batch." + _ENVELOPE,
        WriteBatchInput,
        memory_write_batch,
        read_only=False,
    ),
    ToolSpec(
        "memory_read",
        "Read a memory",
        "Read one memory in full: title, claim (gist), metas, links, article HTML and text,"
        " warnings. Use it after a search when you need the whole memory. Counts as an"
        " access: it raises the memory's salience (once per 15 minutes per path). Cost: one"
        " file parse." + _ENVELOPE,
        ReadInput,
        memory_read,
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "memory_search",
        "Search memories",
        "Find memories for a query: full-text, vector, recency and salience arms fused by"
        " RRF, then diversified (MMR). Use it first when a task may depend on something"
        " remembered. Hits carry path, title, gist, score, snippet, entities. Never bumps"
        " salience (reading a hit does). `degraded: true` means the vector arm could not run"
        " (reason given). Cost: milliseconds; read-only." + _ENVELOPE,
        SearchInput,
        memory_search,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "memory_recall",
        "Recall a context pack",
        "Assemble a disclosure pack for a query: the best memories quoted (claim, summaries,"
        " facets, citations) under a character budget, the rest as index lines with paths."
        " Use it to load context before working on a topic, when you want text rather than"
        " a hit list. Never bumps salience. Cost: one search plus folding; read-only." + _ENVELOPE,
        RecallInput,
        memory_recall,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "memory_correct",
        "Correct a memory",
        "Replace a memory that is wrong or outdated: writes the replacement, moves the"
        " original to archive/<YYYY>/ with valid-until and superseded-by stamps, links the"
        " two both ways. Use it instead of writing a contradicting memory. Cost: one"
        " commit." + _ENVELOPE,
        CorrectInput,
        memory_correct,
        read_only=False,
        destructive=True,
    ),
    ToolSpec(
        "memory_link",
        "Link two memories",
        "Add an authored relation SRC -rel-> DST (e.g. caused_by, supports, contradicts) to"
        " SRC's head. Use it when two memories bear on each other. Idempotent (created:"
        " false when present). `strength` is accepted and ignored. Cost: one commit." + _ENVELOPE,
        LinkInput,
        memory_link,
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "memory_neighbors",
        "Graph around a memory",
        "List memories within one or two hops of a memory along memory relations, either"
        " direction, with the hop and relation that reached each. Use it to explore what"
        " is connected to a memory you found. Cost: a few index queries; read-only." + _ENVELOPE,
        NeighborsInput,
        memory_neighbors,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "memory_resolve",
        "Resolve a cited path",
        "Say what a path became: follows archive moves and supersedes links to the live"
        " memory (resolved, live, chain). Use it when a cited path is not found or may be"
        " outdated. Cost: a few index queries; read-only." + _ENVELOPE,
        ResolveInput,
        memory_resolve,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "memory_archive",
        "Archive a memory",
        "Move a memory that no longer holds into archive/<YYYY>/<path> (git mv, never a"
        " delete; history stays). Use it for memories that are obsolete and have no"
        " replacement (use memory_correct when there is one). Cost: one commit." + _ENVELOPE,
        ArchiveInput,
        memory_archive,
        read_only=False,
        destructive=True,
    ),
    ToolSpec(
        "memory_reinforce",
        "Reinforce memories",
        "Report that memories helped (positive), misled (negative) or were merely used"
        " (neutral): moves their salience through an outcome average, with a 15-minute"
        " cooldown per path. Use it after a task that relied on memories. Paths with no"
        " memory are listed under `missing`. Cost: one small state write, no commit." + _ENVELOPE,
        ReinforceInput,
        memory_reinforce,
        read_only=False,
    ),
    ToolSpec(
        "memory_list",
        "List memories",
        "Page through memories in path order by type, workspace, tag, entity or PARA"
        " bucket; continue with `cursor` = the previous page's next_cursor. Use it to"
        " browse, not to find by meaning (use memory_search). Cost: one index query;"
        " read-only." + _ENVELOPE,
        ListInput,
        memory_list,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "memory_status",
        "Store status",
        "One-screen summary: HEAD, uncommitted paths, counts by type and bucket, index"
        " freshness, vector coverage and model. Use it to check the store is healthy."
        " Cost: a few queries and one git status; read-only." + _ENVELOPE,
        StatusInput,
        memory_status,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "exec",
        "Run a script over the corpus",
        "Run a JavaScript ES module in a QuickJS sandbox over one commit of the corpus"
        " (sha, else HEAD), mounted read-only at /mnt/memhtml, with the helper"
        " /workspace/lib/corpus.mjs (corpus, walk, memoryAt, backlinks, chain, edges). Use it"
        " for corpus-shaped questions no tool enumerates (censuses, contradiction pairs,"
        " chains) after memory_search found the entry points. No network, writes or index."
        " A throwing script or a reached bound is still data (exit_code, stderr, limit)."
        " Cost: a sandbox start (~50 ms) plus the script; bounded by timeout_ms." + _ENVELOPE,
        ExecInput,
        exec_script,
        read_only=True,
        idempotent=True,
        exclusive=False,
    ),
    ToolSpec(
        "trace_search",
        "Search session transcripts",
        "Search the agent's indexed session transcripts (`memhtml trace index` builds the"
        ' index): every word must occur in a turn ("quoted words" are a phrase), falling'
        " back to any word (match: any). Each hit has session_id, timestamp, role, a snippet"
        " and where the line is; sessions lists the hits' sessions (first prompt, title,"
        " start). Use it to find what was said or done in an earlier session. Before any"
        " indexing: empty, indexed: false. Cost: one FTS query; read-only." + _ENVELOPE,
        TraceSearchInput,
        trace_search,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "trace_links",
        "Session-memory links",
        "Links between agent sessions and the memories they wrote, corrected or read, by"
        " session_id and/or path (one is needed): wrote/corrected from the memhtml-session"
        " metas the write tools stamp, read from memory_read with session_id. Newest first;"
        " session_indexed says whether the transcript is indexed. Cost: two queries;"
        " read-only." + _ENVELOPE,
        TraceLinksInput,
        trace_links,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "task_add",
        "Add a task",
        "Record a commitment as a task memory (status todo unless given, optional due date),"
        " under projects/<workspace>/tasks/ or areas/inbox/tasks/. Tasks are never deduped."
        " `blocks` and `subtask_of` link it to other tasks (both ends must be tasks). Use it"
        " for work to do, not for facts (memory_write). Cost: one commit." + _ENVELOPE,
        TaskAddInput,
        task_add,
        read_only=False,
    ),
    ToolSpec(
        "task_status",
        "Set a task's status",
        "Move a task to todo, doing, blocked or done: a head-only edit (the content hash"
        " stays). The status it already has commits nothing (unchanged: true). A path that"
        " is not a task is ERR_INVALID_MEMORY. Cost: one commit." + _ENVELOPE,
        TaskStatusInput,
        task_status,
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "task_list",
        "List open tasks",
        "Tasks not done (or the given statuses), ordered by due date (undated last) then"
        " path, each with blocked_by: the open tasks whose blocks link points at it. Use it"
        " to see what is pending. Cost: two index queries; read-only." + _ENVELOPE,
        TaskListInput,
        task_list,
        read_only=True,
        idempotent=True,
    ),
)
TOOLS_BY_NAME: Final[dict[str, ToolSpec]] = {t.name: t for t in TOOLS}


# -- dispatch ----------------------------------------------------------------------
def validation_failure(tool: str, exc: ValidationError) -> dict[str, Any]:
    """A pydantic error as a failure envelope: invalid path > missing field > invalid value."""
    errors = exc.errors(include_url=False)  # the input: what kind of value, never echoed
    kinds = {e["type"] for e in errors}
    if "invalid_path" in kinds:
        code = InvalidPathError.code
    elif "input_too_large" in kinds:
        code = InputTooLargeError.code
    elif kinds == {"missing"}:
        code = "ERR_MISSING_ARGUMENT"
    else:
        code = InvalidFlagError.code
    problems: list[dict[str, Any]] = list(plain.problems(errors, drop=()))
    for problem, error in zip(problems, errors, strict=True):
        if error["type"] == "input_too_large":  # the bound and what was given, as data too
            context = error.get("ctx") or {}
            problem |= {k: context[k] for k in ("limit", "count", "length") if k in context}
    message = f"{tool}: " + plain.sentence(errors, limit=5, whole="the arguments", drop=())
    return failure(
        code, message, [f"tools/list shows the input schema of {tool}"], {"errors": problems}
    )


def call_tool(get: GetCorpus, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate, run one tool, and answer with an envelope (never raises)."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None:
        return failure(
            "ERR_UNKNOWN_COMMAND",
            f"no tool named {name!r}",
            [f"one of: {', '.join(TOOLS_BY_NAME)}"],
        )
    try:
        params = spec.model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        return validation_failure(name, exc)
    try:
        return spec.handler(get, params)
    except Exception as exc:  # the adapter is where a stray exception becomes a code
        from memhtml.ops.errors import as_memhtml_error

        typed = as_memhtml_error(exc, root=_root_of(get))  # a full disk names its root
        if typed.code == "ERR_UNKNOWN":
            log.exception("tool %s failed unexpectedly", name)
        return failure(typed.code, typed.message, typed.suggestions, typed.details or None)


def _root_of(get: GetCorpus) -> Any:
    """The memory root the server serves, or None when the corpus cannot be had."""
    try:
        return get().root
    except Exception:
        return None
