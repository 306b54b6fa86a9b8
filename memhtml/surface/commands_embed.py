"""Commands about the embedding model: migrating the index to another one, comparing two."""

from __future__ import annotations

from typing import Final

from memhtml.surface.spec import EMBEDDER_NAMES, Command, Param

H = "memhtml.cli.handlers.embedders"

EMBED_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "index migrate",
        "Move the index to another embedding model; reads use the old vectors until the switch.",
        "index.migration",
        f"{H}:migrate",
        params=(
            Param("to", f"the embedder to migrate to: {EMBEDDER_NAMES}", metavar="NAME"),
            Param("resume", "continue the open migration", type="bool", default=False),
            Param(
                "abort",
                "stop the open migration and drop its vectors",
                type="bool",
                default=False,
            ),
            Param(
                "status",
                "report the open migration (with --to: estimate one)",
                type="bool",
                default=False,
            ),
            Param(
                "skip_gate",
                "switch even when the gate finds a regression",
                type="bool",
                default=False,
            ),
            Param(
                "keep_old",
                "keep the old space's vectors for a rollback",
                type="bool",
                default=False,
            ),
            Param(
                "drop_old",
                "drop the spaces --keep-old kept",
                type="bool",
                default=False,
            ),
        ),
        errors=(
            "ERR_MODEL_UNAVAILABLE",
            "ERR_EMBED_CONTRACT",
            "ERR_EMBED_MODEL_MISMATCH",
            "ERR_DISCRIMINATION_FAILED",
            "ERR_WRITE_CONFLICT",
            "ERR_INVALID_FLAG",
        ),
        examples=(
            "memhtml index migrate --to openai --status",
            "memhtml index migrate --to openai",
            "memhtml index migrate --resume",
            "memhtml index migrate --abort",
        ),
        details=(
            "Builds the new model's vectors beside the old ones (keyed by chunk and space, so"
            " nothing is embedded twice) while search and writes use the old space. Progress"
            " and an estimate (chunks, memories, tokens) go to stderr on a terminal. A kill or"
            " an endpoint failure (typed: ERR_MODEL_UNAVAILABLE, ERR_EMBED_CONTRACT) pauses"
            " it; --resume continues where it stopped. When every chunk is covered the"
            " discrimination gate runs on the new model; a regression refuses the switch"
            " (ERR_DISCRIMINATION_FAILED) unless --skip-gate. The switch is one transaction;"
            " the old vectors go with it unless --keep-old. Afterwards set MEMHTML_EMBED to"
            " the new embedder: the old one is refused with a message naming the migration."
        ),
    ),
    Command(
        "eval compare-embedders",
        "Two embedders side by side: gate margins, benchmark recall, docs/s, query latency.",
        "eval.embedders",
        f"{H}:compare",
        params=(
            Param("a", f"first embedder: {EMBEDDER_NAMES}", positional=True, required=True),
            Param("b", f"second embedder: {EMBEDDER_NAMES}", positional=True, required=True),
            Param(
                "data",
                "benchmark data folder holding locomo/locomo10.json and/or beam/100K"
                " (default: $MEMHTML_BENCH_DATA, else the bundled samples)",
                metavar="DIR",
            ),
            Param(
                "conversations",
                "benchmark conversations per benchmark",
                type="int",
                default=1,
                minimum=1,
                maximum=50,
            ),
            Param("seed", "gate fixture seed", type="int", default=7),
            Param("size", "memory files in the gate fixture", type="int", default=300, minimum=60),
        ),
        needs_repo=False,
        errors=("ERR_MODEL_UNAVAILABLE", "ERR_EMBED_CONTRACT", "ERR_INVALID_FLAG", "ERR_GIT"),
        examples=(
            "memhtml eval compare-embedders local openai",
            "memhtml eval compare-embedders fake local --data ~/bench-data --conversations 2",
        ),
        details=(
            "Runs, for each embedder: the discrimination gate (fixture corpus; MRR, failing"
            " probes, worst margin), LoCoMo and BEAM retrieval (evidence recall@10 over the"
            " first --conversations of each, from --data, else the small samples bundled"
            " with memhtml, which are a smoke check rather than a benchmark), documents"
            " embedded per second and query embedding latency. Every figure comes from your"
            " own endpoint and machine. Nothing touches your memories."
        ),
    ),
)
