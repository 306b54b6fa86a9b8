"""What `memhtml hook` asks of a store: recall for a prompt or a session, transcript indexing.

A hook is a cold process on every prompt, so every function here reads the
index as it is: no freshness check (`git status`), no catch-up write, no
migration of a store that does not exist (`ready` is checked first, so a
mistyped root never becomes a new store). The caller owns the time bound.

Per-prompt recall runs the lexical arms at once and offers that answer, while
the embedding model loads on a thread beside it; if the model is ready before
`embed_until`, the full hybrid search runs and its answer replaces the
lexical one. A model that cannot load in time costs nothing but a sentence
on stderr: the keyword answer stands.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

QUERY_CHARS = 800  # a prompt is searched by its first this-many characters
OPEN_TASKS = 5


class Hit(NamedTuple):
    """What a recall line shows: a memory's path, title and gist."""

    path: str
    title: str
    gist: str


Offer = Callable[[list[Hit], str], None]
Say = Callable[[str], None]


def ready(root: Path) -> bool:
    """Whether `root` is an initialised memhtml store with an index (nothing is created)."""
    from memhtml.ops.corpus import is_initialised

    return (
        (root / ".git").exists()
        and is_initialised(root)
        and (root / ".memhtml" / "index.db").is_file()
    )


def query_of(prompt: str) -> str:
    """The prompt as a query: whitespace folded, cut at a word near QUERY_CHARS."""
    text = re.sub(r"\s+", " ", prompt).strip()
    if len(text) <= QUERY_CHARS:
        return text
    cut = text[:QUERY_CHARS]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def _open(root: Path, embedder: str) -> Any:
    from memhtml.ops.corpus import Corpus

    return Corpus(root, embedder=embedder)


def _vectors_usable(root: Path, name: str) -> str | None:
    """Why the hybrid search cannot run here (None: it can)."""
    if name == "off":
        return "the embedder is off"
    from memhtml.embed.registry import get_embedder
    from memhtml.index.embedding import stored_space

    corpus = _open(root, "off")
    try:
        model, dim, epoch = stored_space(corpus.conn)
    finally:
        corpus.close()
    if model is None or epoch is None:
        return "the index holds no vectors"
    try:
        embedder = get_embedder(name)  # cheap: the local model locates its files, loads nothing
    except Exception as exc:
        return f"the {name} embedder is unavailable ({exc})"
    if embedder is None or (embedder.model_id, embedder.dim) != (model, dim):
        return f"the index's vectors are {model}@{dim}, not the configured embedder's"
    return None


def _hits(result: Any) -> list[Hit]:
    return [Hit(h.path, h.title, h.gist) for h in result.hits]


def hybrid(request: dict[str, Any]) -> list[list[str]] | None:
    """The hybrid search or recall of a request (run beside the lexical one by
    memhtml.ops.hook_model): [path, title, gist] rows, or None when the vector arm did not
    run (the lexical answer stands)."""
    from memhtml.ops.query import recall, search

    corpus = _open(Path(request["root"]), request["embedder"])
    try:
        if request["op"] == "search":
            result = search(corpus, request["query"], limit=request["limit"], catch_up=False)
            hits = None if result.degraded else _hits(result)
        else:
            pack = recall(corpus, request["query"], budget=request["budget"], catch_up=False)
            hits = None if pack["degraded"] else _pack(pack)
    finally:
        corpus.close()
    return None if hits is None else [list(h) for h in hits]


def _ask(root: Path, name: str, request: dict[str, Any]) -> Any:
    from memhtml.ops import hook_model

    model = hook_model.start(name, hybrid)
    model.ask({**request, "root": str(root), "embedder": name})
    return model


def _answer(
    model: Any,
    name: str,
    *,
    embed_until: float,
    late_after: float | None,
    offer: Offer,
    say: Say,
) -> None:
    """The child's hits if they are back by `embed_until`. A keyword answer that was itself
    late (after `late_after`) means a machine too busy for the model to be ready either: the
    keyword answer goes at once."""
    late = late_after is not None and time.monotonic() > late_after
    hits = model.wait(time.monotonic() if late else embed_until)
    if hits is None:
        why = model.error or ("was not ready (a busy machine)" if late else "did not load in time")
        say(f"the {name} embedding model {why}; recalled by keywords only")
    else:
        offer([Hit(*h) for h in hits], "hybrid")


def prompt_hits(
    root: Path,
    prompt: str,
    *,
    limit: int,
    embed_until: float | None,
    offer: Offer,
    say: Say,
    late_after: float | None = None,
) -> None:
    """Offer the lexical hits for `prompt`, then the hybrid ones if they are back in time
    (`embed_until` on `time.monotonic`; None: lexical only)."""
    from memhtml.ops.config import embedder_name
    from memhtml.ops.query import search

    query = query_of(prompt)
    if not query:
        return
    name = embedder_name()
    why = _vectors_usable(root, name) if embed_until is not None else "no time to embed"
    model = (
        _ask(root, name, {"op": "search", "query": query, "limit": limit}) if why is None else None
    )
    corpus = _open(root, "off")
    try:
        offer(_hits(search(corpus, query, limit=limit, catch_up=False)), "lexical")
    finally:
        corpus.close()
    if model is not None and embed_until is not None:
        _answer(model, name, embed_until=embed_until, late_after=late_after, offer=offer, say=say)


def session_pack(
    root: Path,
    query: str,
    *,
    budget: int,
    embed_until: float | None,
    tasks: list[Hit],
    offer: Offer,
    say: Say,
    late_after: float | None = None,
) -> None:
    """Offer the recall pack for a session's start (arcs first, then memories, each as an
    index line), after filling `tasks` with the open tasks to list under it."""
    from memhtml.ops.config import embedder_name
    from memhtml.ops.query import recall
    from memhtml.ops.tasks import task_list

    name = embedder_name()
    why = _vectors_usable(root, name) if embed_until is not None else "no time to embed"
    model = (
        _ask(root, name, {"op": "recall", "query": query, "budget": budget})
        if why is None and query
        else None
    )
    corpus = _open(root, "off")
    try:
        tasks += [
            Hit(t["path"], t["title"], t["task_status"] or "")
            for t in task_list(corpus, limit=OPEN_TASKS, catch_up=False)["tasks"]
        ]
        if query:
            offer(_pack(recall(corpus, query, budget=budget, catch_up=False)), "lexical")
    finally:
        corpus.close()
    if model is not None and embed_until is not None:
        _answer(model, name, embed_until=embed_until, late_after=late_after, offer=offer, say=say)


def _pack(pack: dict[str, Any]) -> list[Hit]:
    out = []
    for fold in (pack["arcs"], pack["memories"]):
        for entry in [*fold["disclosed"], *fold["index_lines"]]:
            out.append(Hit(entry["path"], entry["title"], entry["gist"]))
    return out


def index_transcripts(root: Path, trace_root: str | None, *, lock_wait: float) -> dict[str, Any]:
    """One pass of the trace plane over the transcripts (memhtml.ops.traces)."""
    from memhtml.ops.traces import index_traces

    corpus = _open(root, "off")
    try:
        return index_traces(corpus, root=trace_root, progress=False, lock_wait=lock_wait)
    finally:
        corpus.close()
