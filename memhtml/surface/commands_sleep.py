"""The `sleep` command group: the curation run on a branch, its review, and the gated merge."""

from __future__ import annotations

from typing import Final

from memhtml.surface.spec import Command, Param

H = "memhtml.cli.handlers.sleep"
MAX_REFUSED: Final = 1000  # change ids one merge may refuse
_RUN_ID = Param("run_id", "the run id (YYYY-MM-DD or YYYY-MM-DD-N)", positional=True, required=True)
_LLM = Param(
    "llm",
    "the language model for the model phases (default: $MEMHTML_LLM, else off)",
    choices=("off", "fake", "bedrock", "openai"),
    metavar="NAME",
)
_PHASES = (
    "preflight, dedup-merge, entity-resolution, person-links, relationship-mining, edge-typing,"
    " confidence-decay, arc-synthesis, retention-triage, compress, reprieve, trace-consolidation,"
    " task-detection, placement-triage, integrity, state-export, report"
)

SLEEP_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "sleep run",
        "Curate on a new sleep/<run-id> branch, one commit per phase; main never moves.",
        "sleep.report",
        f"{H}:run",
        params=(
            Param(
                "date", "run date (default: today, UTC); ids are DATE, DATE-2, ...", metavar="DATE"
            ),
            Param(
                "phases",
                "only these phases, comma-separated (preflight and report always run)",
                metavar="A,B",
            ),
            Param(
                "dry_run",
                "count what each phase would do: no branch, nothing written",
                type="bool",
                default=False,
            ),
            Param(
                "deep",
                "also run placement-triage (re-files inbox memories)",
                type="bool",
                default=False,
            ),
            Param("max_llm_calls", "model-call budget for the whole run", type="int", minimum=0),
            _LLM,
        ),
        errors=(
            "ERR_DIRTY_TREE",
            "ERR_EMBED_MODEL_MISMATCH",
            "ERR_INDEX_STALE",
            "ERR_WRITE_CONFLICT",
            "ERR_PARTIAL_FAILURE",
            "ERR_INVALID_FLAG",
            "ERR_MODEL_UNAVAILABLE",
            "ERR_GIT",
        ),
        examples=(
            "memhtml sleep run",
            "memhtml sleep run --dry-run",
            "memhtml sleep run --phases dedup-merge,integrity",
            "memhtml sleep run --llm bedrock --max-llm-calls 200",
        ),
        details=(
            f"Phases, in order: {_PHASES}. preflight refuses a dirty tree, an index of another"
            " embedding model and a half-built index, and stops the run; any other phase that"
            " fails is recorded, the later phases run, the report is committed, and the command"
            " exits 1 with ERR_PARTIAL_FAILURE whose details are the whole run. A phase that"
            " needs a model with none bound (MEMHTML_LLM=off, the default) is skipped and says so;"
            " with one bound, every model call (each retry included) spends the run's"
            " --max-llm-calls budget, and a call past it is refused and counted as llm_capped."
            " Each"
            " committing phase is one commit with the trailers Memhtml-Run, Memhtml-Phase and"
            " Memhtml-Counts. Effects git cannot carry are marks in the committed"
            " .memhtml/sleep/<run-id>.pending.jsonl, applied only by `sleep merge`."
        ),
    ),
    Command(
        "sleep resume",
        "Finish a run that was interrupted: re-run only the phases whose commits are missing.",
        "sleep.report",
        f"{H}:resume",
        params=(_RUN_ID, _LLM),
        errors=(
            "ERR_PATH_NOT_FOUND",
            "ERR_WRITE_CONFLICT",
            "ERR_DIRTY_TREE",
            "ERR_PARTIAL_FAILURE",
            "ERR_MODEL_UNAVAILABLE",
        ),
        examples=("memhtml sleep resume 2026-08-02",),
    ),
    Command(
        "sleep review",
        "A run's changes, each with its id, diff and reason; what it vetoed; standing refusals.",
        "sleep.review",
        f"{H}:review",
        params=(
            Param("run_id", "the run id (default: the latest run)", positional=True),
            Param(
                "serve",
                "serve the review page on 127.0.0.1 (a free port, a secret token in the URL):"
                " refuse changes with checkboxes and merge with one button; runs until Ctrl-C",
                type="bool",
                default=False,
            ),
            Param(
                "html",
                "write the review page, read-only, as one self-contained file",
                metavar="FILE",
            ),
        ),
        errors=("ERR_PATH_NOT_FOUND", "ERR_STORAGE"),
        examples=(
            "memhtml sleep review",
            "memhtml sleep review 2026-08-02",
            "memhtml sleep review 2026-08-02 --serve",
            "memhtml sleep review 2026-08-02 --html review.html",
        ),
        details=(
            "Each change has an id stable across reviews, resumes and later nights; `sleep"
            " merge RUN --refuse ID` leaves it out. The page served by --serve answers only"
            " requests carrying its token, from 127.0.0.1, naming its own host; its merge"
            " refuses a branch that moved since the page was made (ERR_WRITE_CONFLICT)."
        ),
    ),
    Command(
        "sleep merge",
        "Merge a run into main through the discrimination gate, then apply its pending ledger.",
        "sleep.merge",
        f"{H}:merge",
        params=(
            _RUN_ID,
            Param(
                "skip_gate",
                "merge without re-running the gates (the result says so)",
                type="bool",
                default=False,
            ),
            Param(
                "refuse",
                "leave these changes out (ids from `sleep review`, comma-separated or repeated);"
                " each stands as a refusal later nights respect",
                multiple=True,
                max_count=MAX_REFUSED,
                metavar="ID[,ID...]",
            ),
        ),
        errors=(
            "ERR_PATH_NOT_FOUND",
            "ERR_UNKNOWN_CHANGE",
            "ERR_DIRTY_TREE",
            "ERR_INVALID_MEMORY",
            "ERR_DISCRIMINATION_FAILED",
            "ERR_WRITE_CONFLICT",
            "ERR_GIT",
            "ERR_STORAGE",
        ),
        examples=(
            "memhtml sleep merge 2026-08-02",
            "memhtml sleep merge 2026-08-02 --refuse c3f2a9b1c0d4e,c81d07a55e2b1",
        ),
        details=(
            "Refused, with main unchanged: a run id with no branch, a dirty tree, a branch whose"
            " changed files no longer parse, and a gate regression (the fixture gate in fake"
            " mode, and the corpus gate: no twin memory, a claim and its negation, number,"
            " qualifier or role flip, may be merged into the other or out-ranked by it on the"
            " branch). The result is built before the working tree is touched (the branch tip,"
            " or a merge commit made with the merge driver when main moved and the merge is"
            " clean) and lands in one step: a merge stopped midway leaves main unchanged or"
            " merged, and the next command or `doctor --fix` settles it. Then applies the"
            " ledger (marks_applied, marks_pending) and updates the index. With --refuse the"
            " night is rebuilt from its base without those changes (the model is not asked"
            " again: its answers are replayed), a change that rested on one is left out too"
            " and listed in left_out with why, the gates run on the rebuilt night, main moves"
            " once, and each refusal is committed as .memhtml/sleep/refused/<id>.json: later"
            " nights do not propose it again until its inputs change (`sleep lift` lifts it)."
            " The merged branch is deleted; the run record keeps its base and tips."
        ),
    ),
    Command(
        "sleep lift",
        "Lift standing refusals: later nights may propose those changes again.",
        "sleep.lift",
        f"{H}:lift",
        params=(
            Param(
                "ids",
                "the refused change ids (comma-separated), as `sleep review` lists them",
                positional=True,
                required=True,
                metavar="ID[,ID...]",
            ),
        ),
        errors=("ERR_UNKNOWN_CHANGE", "ERR_WRITE_CONFLICT"),
        examples=("memhtml sleep lift c3f2a9b1c0d4e",),
    ),
    Command(
        "sleep status",
        "The latest run and its phases, and every run known.",
        "sleep.report",
        f"{H}:status",
    ),
    Command(
        "sleep plan",
        "What each phase would do against main now: cheap counts, or unknown with the reason.",
        "sleep.plan",
        f"{H}:plan",
        params=(Param("deep", "include placement-triage", type="bool", default=False), _LLM),
    ),
)
