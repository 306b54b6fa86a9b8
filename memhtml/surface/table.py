"""The command table: the single source of truth for parsing, the manifest and AGENTS.md.

Adding a command is adding an entry here plus its handler; nothing else
enumerates commands.
"""

from __future__ import annotations

from typing import Final

from memhtml.contracts.limits import MAX_FILTER_VALUES, MAX_LABELS, MAX_PARAGRAPHS, MAX_PATHS
from memhtml.contracts.vocab import EDGE_RELS, MEMORY_TYPES, PARA_BUCKETS
from memhtml.surface.spec import ALLOW_SECRET, EMBEDDER_NAMES_OR_OFF, Command, Param

H = "memhtml.cli.handlers"

# Accepted by every command.
GLOBAL_PARAMS: Final[tuple[Param, ...]] = (
    Param("repo", "memory root (else $MEMHTML_ROOT, default ~/memhtml)", metavar="DIR"),
    Param("dense", "minified JSON with nulls dropped", type="bool", default=False),
    Param("json", "always print the JSON envelope, even on a terminal", type="bool", default=False),
)

ENVIRONMENT: Final[dict[str, str]] = {
    "MEMHTML_ROOT": "the memory root when --repo is not given (default ~/memhtml)",
    "MEMHTML_EMBED": (
        "embedder: local (default, offline MiniLM), openai (any OpenAI-compatible endpoint),"
        " fake, bedrock, off, or an installed plugin's name (docs/plugins.md)"
    ),
    "MEMHTML_EMBED_BASE_URL": "openai embedder: the endpoint (default http://127.0.0.1:11434/v1)",
    "MEMHTML_EMBED_MODEL": "openai embedder: the model the endpoint serves (required)",
    "MEMHTML_EMBED_API_KEY": "openai embedder: a bearer key, when the endpoint wants one",
    "MEMHTML_EMBED_DIM": "openai embedder: the space's width (default: the model's native width)",
    "MEMHTML_EMBED_QUERY_PREFIX": "openai embedder: text put before each query (e5/nomic style)",
    "MEMHTML_EMBED_DOCUMENT_PREFIX": "openai embedder: text put before each document",
    "MEMHTML_EMBED_BATCH": "openai embedder: texts per request (default 64)",
    "MEMHTML_EMBED_BATCH_TOKENS": "openai embedder: estimated tokens per request (default 16384)",
    "MEMHTML_EMBED_TIMEOUT": "openai embedder: seconds per request (default 60)",
    "MEMHTML_EMBED_RETRIES": "openai embedder: retries on 429/5xx/timeouts (default 4)",
    "MEMHTML_LLM": (
        "language model for sleep's model phases (--llm overrides): off (default), fake"
        " (deterministic, for tests), bedrock (Anthropic models on Amazon Bedrock), openai"
        " (any OpenAI-compatible endpoint: Ollama, llama.cpp, vLLM, LM Studio)"
    ),
    "MEMHTML_AWS_REGION": "AWS region for Bedrock, embedder and model (else the default chain's)",
    "MEMHTML_VECTOR_COVERAGE_FLOOR": (
        "share of chunks with vectors below which the vector arm is dropped (default 0.5)"
    ),
    "MEMHTML_ANN_MIN_ROWS": (
        "vectors from which search asks the approximate graph instead of scanning them all"
        " (default 100000; needs the ann extra)"
    ),
    "MEMHTML_LOCK_TIMEOUT": "seconds a writer waits for the repository lock (default 30)",
    "MEMHTML_TRACE_ROOT": "session transcripts `trace index` reads (default ~/.claude/projects)",
    "MEMHTML_NOW": "fixed clock (ISO instant) for reproducible runs and tests",
    "MEMHTML_LOG": "stderr log level (default WARNING)",
    "MEMHTML_LLM_MODEL": (
        "model id: bedrock (default global.anthropic.claude-sonnet-5), openai (required)"
    ),
    "MEMHTML_LLM_TIMEOUT": "seconds one model call may take (bedrock default 120, openai 60)",
    "MEMHTML_LLM_BASE_URL": "openai: the endpoint (default http://127.0.0.1:11434/v1, Ollama)",
    "MEMHTML_LLM_API_KEY": "openai: a bearer key, when the endpoint wants one",
    "MEMHTML_LLM_OPENAI_MODE": (
        "openai: how structured output is asked, json_schema (default) or tool"
    ),
    "MEMHTML_BENCH_DATA": (
        "the public benchmarks' data folder the bench harnesses read (default: ../shared/data"
        " beside the checkout)"
    ),
    "MEMHTML_FAULT_ENOSPC": (
        "testing only: the disk 'fills' at the named step of a write (LABEL[#k][:after];"
        " memhtml.store.faults), to prove a full disk loses nothing"
    ),
    "MEMHTML_FAULT_TRACE": "testing only: a file the fault seam appends each step's label to",
    "MEMHTML_HOOK_TIME_LIMIT_MS": (
        "hard bound of `memhtml hook` from process start (default 2000 per prompt, 3000 at"
        " session start, 20000 when indexing)"
    ),
}

_TYPE = Param("type", "memory type", choices=MEMORY_TYPES, metavar="TYPE")
_TYPES = Param(
    "type",
    "restrict to memory type (repeatable)",
    multiple=True,
    choices=MEMORY_TYPES,
    max_count=MAX_FILTER_VALUES,
)
_SCOPE: Final = (
    _TYPES,
    Param("workspace", "restrict to projects/<workspace>/"),
    Param(
        "tag",
        "restrict to memories carrying the tag (repeatable)",
        multiple=True,
        max_count=MAX_FILTER_VALUES,
    ),
    Param("entity", "restrict to an entity name, or type:name (case-folded)"),
    Param("include_archived", "include archived memories", type="bool", default=False),
    Param("as_of", "facts valid at this date (superseded ones included)", metavar="DATE"),
)
_WRITE_FIELDS: Final = (
    Param("title", "title (one line)", required=True),
    Param(
        "claim", "the claim: one sentence with a letter or digit, becomes the <mark> and the gist"
    ),
    Param("body", "a body paragraph (repeatable)", multiple=True, max_count=MAX_PARAGRAPHS),
    Param("article_html", "caller-owned inner HTML of <article> instead of claim/body"),
)

# The write-time checks of a batch (memhtml.ops.write_checks; docs/conflicts.md).
_WRITE_CHECKS: Final = (
    Param(
        "detect_conflicts",
        "report writes that give an active memory's fact another value",
        type="bool",
        default=False,
    ),
    Param(
        "detect_near_duplicates",
        "report, per new memory, the active memories it likely restates",
        type="bool",
        default=False,
    ),
    Param(
        "consolidate",
        "last-wins: a conflicting write supersedes the older value in the same commit",
        choices=("last-wins",),
        metavar="MODE",
    ),
    Param(
        "strict",
        "hold conflicting writes (ERR_CONFLICT) instead of writing them",
        type="bool",
        default=False,
    ),
)
_WRITE_CHECKS_DETAILS: Final = (
    "A conflict is a write whose claim has the frame of an active memory's claim (what the"
    " fact is about: the claim up to its last of/is/in/to/by/as) with a value that cannot"
    " also hold; --detect-conflicts adds to each write `conflict` (the first: an active"
    " memory by path, else the first earlier op of the batch; {path, batch_index, claim,"
    " frame_key}) and `conflicts` (all), and writes it anyway. --strict holds such a write"
    " as a failure with ERR_CONFLICT (so an atomic batch commits nothing). --consolidate"
    " last-wins keeps one value per frame: a later op that conflicts with an earlier one"
    " replaces it (the later op reports consolidated_into: the slot's index; summary counts"
    " consolidated), and every active memory the slot's write conflicts with is archived,"
    " superseded by it in the same commit (superseded, superseded_path). Use it only for"
    " facts that hold one value at a time. --detect-near-duplicates adds"
    " `near_duplicates` [{path, claim, cosine}] to each new memory: one frame with a"
    " compatible value, or cosine >= 0.92 with no anti-merge guard firing. data.checks"
    " counts what the checks found."
)

COMMANDS: tuple[Command, ...] = (
    Command(
        "manifest",
        "Every command, flag, response type, error code and environment variable.",
        "cli.manifest",
        f"{H}.meta:manifest",
        needs_repo=False,
        examples=("memhtml manifest --dense",),
    ),
    Command(
        "help",
        "One command's entry from the manifest.",
        "cli.help",
        f"{H}.meta:help_command",
        params=(
            Param("command", "command words, e.g. `index rebuild`", positional=True, multiple=True),
        ),
        needs_repo=False,
        errors=("ERR_UNKNOWN_COMMAND",),
        examples=("memhtml help search", "memhtml help index rebuild"),
    ),
    Command(
        "agents-doc",
        "Write AGENTS.md from the command table, or check it is current.",
        "agents.doc",
        f"{H}.meta:agents_doc",
        params=(
            Param(
                "check",
                "fail (exit 1) when the file is stale instead of writing",
                type="bool",
                default=False,
            ),
            Param("out", "file to write or check (default AGENTS.md)", default="AGENTS.md"),
        ),
        needs_repo=False,
        errors=("ERR_DOC_STALE",),
    ),
    Command(
        "doctor",
        "Validate memory files (given paths), or report corpus health (no paths; a stuck"
        " sleep run makes it unhealthy); --fix repairs dangling links, moved usage rows and"
        " what a killed command left (an interrupted sleep merge included), in one commit.",
        "doctor.report",
        f"{H}.meta:doctor",
        params=(
            Param("paths", "memory files to validate", positional=True, multiple=True),
            Param(
                "fix",
                "repair: settle an interrupted batch, remove stale locks and temp files,"
                " rewrite dangling links along resolve chains, move orphaned usage rows,"
                " finish or undo an interrupted sleep merge",
                type="bool",
                default=False,
            ),
            Param(
                "strict",
                "exit 1 (ERR_UNHEALTHY, the report in details) when not healthy; advisory"
                " findings alone never fail it",
                type="bool",
                default=False,
            ),
        ),
        needs_repo=False,
        errors=(
            "ERR_REPO_REQUIRED",
            "ERR_PATH_NOT_FOUND",
            "ERR_WRITE_CONFLICT",
            "ERR_GIT",
            "ERR_UNHEALTHY",
        ),
        examples=(
            "memhtml doctor areas/inbox/x.html",
            "memhtml doctor",
            "memhtml doctor --fix",
            "memhtml doctor --strict  (for CI and cron)",
        ),
        details=(
            "healthy is false for: files the index never reads, files that break the format or"
            " carry format warnings (format_warnings counts them; an entity name without a type"
            " alone is advisory), dangling links, usage rows of memories gone, a stale git"
            " lock, a half-done batch, reused paths, committed databases, an index behind the"
            " tree, more than 20 memories or more than 10 tasks in the inbox, vector coverage"
            " under MEMHTML_VECTOR_COVERAGE_FLOOR (while vectors are in use), vectors of"
            " another model, a stuck sleep run. Advisory findings are reported and never"
            " unhealthy: overdue_tasks, stale_blockers (an open task blocked by an archived or"
            " missing one), untyped_entities (entity names without a type; their total in"
            " untyped_entity_total), dirty. Each dangling link says what --fix would do"
            " (rewrite_to, or fix_leaves: why it stays), orphan_access_fix where each usage row"
            " would move, and fix_would lists every repair --fix would make. With paths,"
            " healthy is false when a file breaks the format. --strict turns not healthy into"
            " ERR_UNHEALTHY (exit 1), after --fix's repairs when both are given."
        ),
    ),
    Command(
        "init",
        "Scaffold the memory root: git repo, PARA folders, merge driver. Idempotent.",
        "repo.init",
        f"{H}.store:init",
        params=(
            Param(
                "clone",
                "clone this remote into the (empty) root, register the merge driver, index it;"
                " its history is checked as sync checks incoming commits (refused: ERR_REMOTE)",
                metavar="URL",
            ),
        ),
        needs_repo=False,
        errors=("ERR_GIT", "ERR_REMOTE", "ERR_INVALID_FLAG"),
        examples=("memhtml init --repo ~/memhtml", "memhtml init --clone ../memory.git"),
    ),
    Command(
        "write",
        "Write one memory as one commit (deduped against active memories).",
        "memory.written",
        f"{H}.store:write",
        params=(
            *_WRITE_FIELDS[:1],
            Param("type", "memory type", required=True, choices=MEMORY_TYPES),
            *_WRITE_FIELDS[1:],
            Param("entity", "entity `type:name` (repeatable)", multiple=True, max_count=MAX_LABELS),
            Param("tag", "tag (repeatable)", multiple=True, max_count=MAX_LABELS),
            Param("workspace", "file under projects/<workspace>/"),
            Param("path", "explicit path (root-relative, under a PARA bucket)"),
            Param(
                "strict_path",
                "fail instead of suffixing when --path is taken",
                type="bool",
                default=False,
            ),
            Param("event_at", "when the fact happened (date or ISO instant)", metavar="DATE"),
            Param("importance", "importance", type="int", minimum=1, maximum=10),
            Param("confidence", "confidence", type="float", minimum=0.0, maximum=1.0),
            Param("session_id", "provenance: agent session id"),
            Param("prompt_id", "provenance: prompt id"),
            Param("turn_uuid", "provenance: turn uuid"),
            ALLOW_SECRET,
        ),
        errors=(
            "ERR_INVALID_MEMORY",
            "ERR_INVALID_PATH",
            "ERR_WRITE_CONFLICT",
            "ERR_EMBED_MODEL_MISMATCH",
            "ERR_REPO_REQUIRED",
            "ERR_SECRET_DETECTED",
            "ERR_DISK_FULL",
        ),
        examples=(
            'memhtml write --title "WAL admits one writer" --type semantic '
            '--claim "A CLI command and a running server share one index.db."',
        ),
    ),
    Command(
        "apply",
        "Apply JSONL ops (write, correct, archive, link) as one atomic commit.",
        "batch.applied",
        f"{H}.store:apply",
        params=(
            Param(
                "file", "JSONL file, or - for stdin (default -)", positional=True, metavar="FILE"
            ),
            Param("file_option", "the same, as a flag", flag="--file", metavar="FILE"),
            Param(
                "continue_on_error",
                "commit the ops that succeed instead of none",
                type="bool",
                default=False,
            ),
            *_WRITE_CHECKS,
            Param(
                "allow_secret",
                "let every op write what looks like a credential (an op's own"
                " allow_secret field does it for that op)",
                type="bool",
                default=False,
            ),
        ),
        errors=(
            "ERR_INVALID_OP",
            "ERR_PARTIAL_FAILURE",
            "ERR_PATH_NOT_FOUND",
            "ERR_WRITE_CONFLICT",
            "ERR_CONFLICT",
            "ERR_INVALID_FLAG",
            "ERR_REPO_REQUIRED",
            "ERR_SECRET_DETECTED",
            "ERR_DISK_FULL",
        ),
        examples=(
            "memhtml apply ops.jsonl",
            "memhtml apply - < ops.jsonl",
            "memhtml apply --file ops.jsonl --continue-on-error",
            "memhtml apply ops.jsonl --detect-conflicts --detect-near-duplicates",
            "memhtml apply ops.jsonl --consolidate last-wins",
        ),
        details=(
            'One op per line: {"op":"write","title":...,"type":...,"body":...} '
            '(claim defaults to the body\'s first sentence), {"op":"correct","target_path":...,'
            '"claim":...}, {"op":"archive","path":...}, {"op":"link","src":...,"rel":...,'
            '"dst":...}; blank lines and # comments are skipped. Every line is validated'
            " before any op runs (shape, memory paths, link rels): a bad line is"
            " ERR_INVALID_OP (exit 2) naming its line and op index, and nothing runs. Op"
            " indexes are 0-based everywhere (results[].index, details.index); `line` is the"
            " 1-based line of the file. An op that fails while planning aborts the batch"
            " (nothing committed; the failure carries that op's code and every per-op result"
            " in details). With --continue-on-error the other ops are committed and a failed"
            " op makes the answer ERR_PARTIAL_FAILURE (exit 1) whose details are the full"
            " batch.applied data, commit_sha included. summary counts written (new memories"
            " from write ops), deduped, corrected, archived, linked (links added), unchanged"
            " (links already present), failed and skipped. " + _WRITE_CHECKS_DETAILS
        ),
    ),
    Command(
        "read",
        "Read one memory (metas, links, article, warnings); counts as an access.",
        "memory.detail",
        f"{H}.store:read",
        params=(
            Param("path", "memory path", positional=True, required=True),
            Param(
                "session_id",
                "the agent session reading it, recorded exactly as given (for `trace links`)",
            ),
        ),
        errors=("ERR_PATH_NOT_FOUND", "ERR_INVALID_PATH"),
    ),
    Command(
        "list",
        "List memories by type, workspace, tag, entity or PARA bucket (cursor paging).",
        "memory.list",
        f"{H}.store:list_memories",
        params=(
            _TYPES,
            Param("workspace", "projects/<workspace>/ only"),
            Param("tag", "carrying this tag"),
            Param("entity", "mentioning this entity name or type:name (case-folded)"),
            Param("para", "PARA bucket", choices=PARA_BUCKETS),
            Param("include_archived", "include archived memories", type="bool", default=False),
            Param("limit", "page size", type="int", default=50, minimum=1, maximum=500),
            Param(
                "cursor",
                "continue after this path: the previous page's next_cursor (else ERR_INVALID_FLAG)",
            ),
            Param(
                "facet",
                "facet filter name=value (repeatable)",
                multiple=True,
                max_count=MAX_FILTER_VALUES,
            ),
        ),
        errors=("ERR_INVALID_FLAG",),
    ),
    Command(
        "correct",
        "Replace a memory: write the new one and archive the old in one commit.",
        "memory.corrected",
        f"{H}.store:correct",
        params=(
            Param("path", "memory to correct", positional=True, required=True),
            Param(
                "title",
                "new title (default: the original's, or the new claim's when the correction"
                " takes back a word the title says)",
            ),
            *_WRITE_FIELDS[1:],
            Param("type", "new type (default: the original's)", choices=MEMORY_TYPES),
            Param("reason", "why (recorded in the commit message)"),
            Param(
                "importance",
                "new importance (default: the original's)",
                type="int",
                minimum=1,
                maximum=10,
            ),
            Param(
                "confidence",
                "new confidence (default: the original's)",
                type="float",
                minimum=0.0,
                maximum=1.0,
            ),
            Param("session_id", "provenance: agent session id"),
            ALLOW_SECRET,
            Param("prompt_id", "provenance: prompt id"),
            Param("turn_uuid", "provenance: turn uuid"),
        ),
        errors=(
            "ERR_PATH_NOT_FOUND",
            "ERR_INVALID_MEMORY",
            "ERR_ARCHIVED",
            "ERR_DIRTY_TREE",
            "ERR_WRITE_CONFLICT",
            "ERR_SECRET_DETECTED",
        ),
        examples=(
            "memhtml correct resources/db/pool-size.html --claim 'The Postgres pool size is 96.'",
        ),
        details=(
            "The replacement keeps the original's head: type, importance, confidence, author,"
            " tags, entities, aliases, task status and due date, a valid-until still ahead"
            " (with its reprieves), and every authored link but supersedes and from_session;"
            " it is stamped anew (created, updated, valid-from, content hash, the correcting"
            " session), and needs-revision is cleared. Without --title the original's title"
            " stays unless the correction takes back a word it says (a word of the old claim,"
            " function words aside, that the new claim drops: 'Pool size is 64' corrected to"
            " '... is 96'); then the title is the new claim without its closing punctuation."
            " data.title and data.title_from (given, claim, original) say which. A claim needs"
            " a letter or digit. An archived path is ERR_ARCHIVED, naming the live memory it"
            " became (details.live_path)."
        ),
    ),
    Command(
        "archive",
        "Move a memory into archive/<YYYY>/<path> (git mv; never a delete).",
        "memory.archived",
        f"{H}.store:archive",
        params=(
            Param("path", "memory to archive", positional=True, required=True),
            Param("reason", "why (recorded in the commit message)"),
        ),
        errors=("ERR_PATH_NOT_FOUND", "ERR_DIRTY_TREE", "ERR_WRITE_CONFLICT"),
    ),
    Command(
        "link",
        "Add an authored <link> SRC -REL-> DST to SRC's head. Idempotent.",
        "memory.linked",
        f"{H}.store:link",
        params=(
            Param("src", "source memory", positional=True, required=True),
            Param("rel", "relation", positional=True, required=True, choices=EDGE_RELS),
            Param("dst", "target memory", positional=True, required=True),
        ),
        errors=("ERR_PATH_NOT_FOUND", "ERR_INVALID_MEMORY", "ERR_DIRTY_TREE"),
        examples=("memhtml link areas/a.html caused_by areas/b.html",),
    ),
)


_SEARCH_TUNING: Final = (
    Param(
        "weight",
        "arm weight override arm=value, e.g. recency=0.8 (repeatable)",
        multiple=True,
        metavar="ARM=W",
        max_count=MAX_FILTER_VALUES,
    ),
    Param("k", "RRF k (default 10, or the repo config's)", type="int", minimum=1),
    Param(
        "mmr_lambda",
        "MMR lambda; 1 = pure relevance order",
        type="float",
        minimum=0.0,
        maximum=1.0,
    ),
    Param(
        "time_weight",
        "weight of the time the query names ('in May 2023', 'last week'); 0 = off",
        type="float",
        minimum=0.0,
    ),
)

COMMANDS = (
    *COMMANDS,
    Command(
        "search",
        "Ranked memories for a query: FTS + vector + recency + salience fused by RRF, then MMR.",
        "memory.hits",
        f"{H}.query:search",
        params=(
            Param(
                "query",
                "what to look for (at most 4,096 characters)",
                positional=True,
                required=True,
            ),
            Param("limit", "how many hits", type="int", default=10, minimum=1, maximum=500),
            *_SCOPE,
            Param(
                "facet",
                "facet filter name=value (repeatable)",
                multiple=True,
                max_count=MAX_FILTER_VALUES,
            ),
            Param(
                "explain", "per hit, each arm's rank and contribution", type="bool", default=False
            ),
            Param(
                "exact",
                "scan every vector even where the approximate graph would answer (the oracle)",
                type="bool",
                default=False,
            ),
            *_SEARCH_TUNING,
            Param("embedder", f"embedder for the query: {EMBEDDER_NAMES_OR_OFF}"),
        ),
        errors=("ERR_INVALID_FLAG", "ERR_INPUT_TOO_LARGE", "ERR_REPO_REQUIRED"),
        examples=('memhtml search "one writer many readers" --explain',),
        details=(
            "Never bumps salience. When no query vector can be had (embedder off or missing,"
            " another model's index) the vector arm is dropped and data.degraded is true."
            " From MEMHTML_ANN_MIN_ROWS vectors (with the ann extra installed) the vector arm"
            " asks an approximate graph; --exact scans them all, and --explain says which"
            " (data.vector_search.method: exact, exact_scope or ann)."
        ),
    ),
    Command(
        "recall",
        "A disclosure pack for a query under a character budget (arcs folded separately).",
        "recall.pack",
        f"{H}.query:recall",
        params=(
            Param(
                "query", "what to recall (at most 4,096 characters)", positional=True, required=True
            ),
            Param(
                "budget",
                "character budget for memory bodies",
                type="int",
                default=16000,
                minimum=0,
            ),
            *_SCOPE,
            Param("embedder", f"embedder for the query: {EMBEDDER_NAMES_OR_OFF}"),
        ),
        errors=("ERR_INVALID_FLAG", "ERR_INPUT_TOO_LARGE", "ERR_REPO_REQUIRED"),
    ),
    Command(
        "reinforce",
        "Record that memories helped (or not): moves salience through the outcome EWMA.",
        "memory.reinforced",
        f"{H}.query:reinforce",
        params=(
            Param(
                "paths",
                "memories that were used",
                positional=True,
                required=True,
                multiple=True,
                max_count=MAX_PATHS,
            ),
            Param(
                "signal", "outcome", default="neutral", choices=("positive", "negative", "neutral")
            ),
        ),
        errors=("ERR_INVALID_FLAG",),
    ),
    Command(
        "neighbors",
        "Memories within one or two hops of a memory along authored and derived edges.",
        "memory.neighbors",
        f"{H}.query:neighbors",
        params=(
            Param("path", "center memory", positional=True, required=True),
            Param("depth", "hops", type="int", default=1, minimum=1, maximum=2),
            Param(
                "rel",
                "only these memory relations (repeatable)",
                multiple=True,
                max_count=MAX_FILTER_VALUES,
            ),
            Param(
                "limit", "at most this many nodes", type="int", default=100, minimum=1, maximum=500
            ),
        ),
        errors=("ERR_PATH_NOT_FOUND",),
    ),
    Command(
        "resolve",
        "What a path became: follow archive moves and supersedes links to the live memory.",
        "memory.resolved",
        f"{H}.query:resolve",
        params=(Param("path", "a path as cited", positional=True, required=True),),
        errors=("ERR_PATH_NOT_FOUND",),
    ),
    Command(
        "status",
        "One-screen summary: HEAD, dirty tree, counts by type and bucket, index freshness.",
        "status.health",
        f"{H}.index:status",
    ),
    Command(
        "entity activity",
        "Entities with three clocks: last activity, last event (world), last write.",
        "entity.activity",
        f"{H}.index:entity_activity",
        params=(
            Param("type", "only this entity type (case-folded)"),
            Param(
                "limit",
                "at most this many entities",
                type="int",
                default=50,
                minimum=1,
                maximum=500,
            ),
            Param("include_archived", "count archived memories too", type="bool", default=False),
        ),
    ),
    Command(
        "index rebuild",
        "Delete and reproject every row from the tree; keeps vectors of unchanged chunks.",
        "index.report",
        f"{H}.index:rebuild",
        params=(
            Param(
                "embed",
                "embed after reprojecting (default: when an embedder is configured)",
                type="bool",
                default=None,
            ),
            Param(
                "force",
                "allow --no-embed over vectors, or a model change with --embed",
                type="bool",
                default=False,
            ),
            Param("embedder", f"embedder: {EMBEDDER_NAMES_OR_OFF}"),
        ),
        errors=("ERR_REBUILD_NO_EMBED_REFUSED", "ERR_EMBED_MODEL_MISMATCH", "ERR_GIT"),
    ),
    Command(
        "index update",
        "Catch the index up: watermark..HEAD, then the working tree's uncommitted edits.",
        "index.report",
        f"{H}.index:update",
        params=(
            Param("embed", "embed the touched chunks", type="bool", default=True),
            Param("embedder", f"embedder: {EMBEDDER_NAMES_OR_OFF}"),
        ),
        errors=("ERR_GIT", "ERR_STORAGE"),
    ),
    Command(
        "index embed",
        "Embed every chunk that lacks a vector of the configured model.",
        "index.report",
        f"{H}.index:embed",
        params=(
            Param("dry_run", "only count what would be embedded", type="bool", default=False),
            Param("embedder", f"embedder: {EMBEDDER_NAMES_OR_OFF}"),
        ),
        errors=("ERR_EMBED_MODEL_MISMATCH", "ERR_MODEL_UNAVAILABLE"),
    ),
    Command(
        "quickstart",
        "Demo in one step: generate the fixture corpus, index it, run example searches.",
        "quickstart.report",
        f"{H}.quickstart:quickstart",
        params=(
            Param("embedder", f"embedder (default local): {EMBEDDER_NAMES_OR_OFF}"),
            Param("seed", "fixture seed", type="int", default=7),
            Param(
                "keep",
                "keep the temporary store (without --repo it is deleted at the end)",
                type="bool",
                default=False,
            ),
        ),
        needs_repo=False,
        errors=("ERR_INVALID_FLAG", "ERR_MODEL_UNAVAILABLE", "ERR_GIT"),
        examples=("memhtml quickstart", "memhtml quickstart --repo /tmp/demo --embedder fake"),
        details=(
            "Creates the corpus in --repo (a new or empty directory, which is kept) or in a"
            " temporary directory (deleted at the end unless --keep), indexes it with the"
            " embedder (no credentials needed for local), and prints ranked hits for a few"
            " example queries. It never runs against your memories: a --repo that holds"
            " anything but an untouched quickstart corpus is refused with ERR_INVALID_FLAG;"
            " $MEMHTML_ROOT is never used."
        ),
    ),
    Command(
        "index status",
        "Watermark, HEAD, staleness, row counts and the vector space.",
        "index.report",
        f"{H}.index:index_status",
        params=(Param("embedder", f"embedder to compare against: {EMBEDDER_NAMES_OR_OFF}"),),
    ),
)

from memhtml.surface.commands_tasks import TASK_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + TASK_COMMANDS

# Command groups that live beside their own modules join the one table here.
from memhtml.surface.commands_eval import EVAL_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + EVAL_COMMANDS
from memhtml.surface.commands_mcp import MCP_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + MCP_COMMANDS
from memhtml.surface.commands_research import RESEARCH_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + RESEARCH_COMMANDS
from memhtml.surface.commands_sleep import SLEEP_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + SLEEP_COMMANDS
from memhtml.surface.commands_sync import SYNC_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + SYNC_COMMANDS
from memhtml.surface.commands_state import STATE_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + STATE_COMMANDS
from memhtml.surface.commands_trace import TRACE_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + TRACE_COMMANDS
from memhtml.surface.commands_publish import PUBLISH_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + PUBLISH_COMMANDS
from memhtml.surface.commands_exec import EXEC_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + EXEC_COMMANDS
from memhtml.surface.commands_embed import EMBED_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + EMBED_COMMANDS
from memhtml.surface.commands_integrations import INTEGRATION_COMMANDS  # noqa: E402

COMMANDS = COMMANDS + INTEGRATION_COMMANDS


def command_by_words(words: tuple[str, ...]) -> Command | None:
    """The command named by `words`, or None."""
    for cmd in COMMANDS:
        if cmd.words == words:
            return cmd
    return None


def groups() -> list[str]:
    """Command group names (first word of multi-word commands)."""
    return sorted({c.words[0] for c in COMMANDS if len(c.words) > 1})
