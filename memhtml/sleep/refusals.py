"""A person's refusals: a change refused at merge stands, and later nights respect it.

`sleep merge RUN --refuse ID` records each refused change as one committed file,
`.memhtml/sleep/refused/<change-id>.json` (its id, run, phase, kind, summary and
inputs), in the same commit that lands the rest of the night: main moves once, and a
merge that is refused by its gate records nothing. A night reads the files of the
commit it starts from, and a decision whose id is among them is not made again
(memhtml.sleep.changes: the id covers the decision's inputs, content hashes included,
so a fold of the same two files comes back once either file's content changes).
`memhtml sleep lift ID` removes the file in a commit of its own.

Why a committed file, not the state plane: a refusal is a person's judgement about the
corpus ("these two are not duplicates"), so it travels with it (a clone, a sync, a
restore from git all keep it), it is reviewable and revertable like any other
commit, and a night stays a pure function of its tree and date (docs/sleep.md
section 1). One file per refusal, so two clones refusing different changes never
conflict, and lifting is a removal git can show.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import UnknownChangeError
from memhtml.sleep import runs
from memhtml.sleep.changes import Change, is_change_id

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

REFUSED_DIR: Final = f"{runs.SLEEP_DIR}/refused"


def refusal_path(change_id: str) -> str:
    """`.memhtml/sleep/refused/<change-id>.json`."""
    return f"{REFUSED_DIR}/{change_id}.json"


def encode(change: Change, run_id: str, refused_at: str) -> bytes:
    """The refusal file of `change` (sorted keys, one object)."""
    data = {
        "id": change.id,
        "run": run_id,
        "phase": change.phase,
        "kind": change.kind,
        "summary": change.summary,
        "inputs": change.inputs,
        "refused_at": refused_at,
    }
    from memhtml.domain.secrets import redact

    return (redact(json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False)) + "\n").encode()


def standing(
    paths: Iterable[str], read: Callable[[str], bytes | None]
) -> dict[str, dict[str, Any]]:
    """id -> the refusal's record, for every refusal file among `paths` (a tree's listing);
    a file that does not parse still refuses by its name."""
    out: dict[str, dict[str, Any]] = {}
    prefix = REFUSED_DIR + "/"
    for path in paths:
        name = path[len(prefix) :] if path.startswith(prefix) else ""
        cid = name.removesuffix(".json")
        if not name.endswith(".json") or not is_change_id(cid):
            continue
        record: dict[str, Any] = {"id": cid}
        data = read(path)
        try:
            raw = json.loads(data or b"")
            if isinstance(raw, dict):
                record = {**raw, "id": cid}
        except ValueError:
            pass
        out[cid] = record
    return out


def in_tree(paths: Iterable[str], read: Callable[[str], bytes | None]) -> dict[str, dict[str, Any]]:
    """The standing refusals of a tree given as its paths and a reader."""
    prefix = REFUSED_DIR + "/"
    return standing([p for p in paths if p.startswith(prefix)], read)


def allow_unless_refused(
    refused: Mapping[str, Mapping[str, Any]],
) -> Callable[[str, bool], str | None]:
    """A night's `allow`: a change a person refused is not made again (a derived one always is)."""

    def allow(cid: str, derived: bool) -> str | None:
        held = refused.get(cid)
        if held is None or derived:
            return None
        run = held.get("run") or "an earlier run"
        return f"refused by a person at the merge of {run}; `memhtml sleep lift {cid}` lifts it"

    return allow


def at_head(corpus: Corpus) -> dict[str, dict[str, Any]]:
    """The standing refusals main holds."""
    git = corpus.git
    head = git.head()
    if head is None:
        return {}
    paths = [e.path for e in git.ls_tree(head, [REFUSED_DIR + "/"])]
    return standing(paths, lambda p: git.show_blob(head, p))


def lift(corpus: Corpus, ids: Iterable[str]) -> dict[str, Any]:
    """Remove standing refusals from main in one commit (the `sleep.lift` payload).

    An id that is not a standing refusal (never refused, or lifted already) is
    UnknownChangeError, and nothing is lifted.
    """
    from memhtml.store.files import FileChange
    from memhtml.store.git import commit_subject

    wanted = list(dict.fromkeys(i.strip() for i in ids if i and i.strip()))
    if not wanted:
        raise UnknownChangeError("name the refused change(s) to lift (memhtml sleep review)")
    with corpus.lock.hold():
        corpus.recover()
        held = at_head(corpus)
        for cid in wanted:
            if cid not in held:
                raise UnknownChangeError(
                    f"{cid} is not a standing refusal{_history(corpus, cid)}; nothing was lifted",
                    suggestions=["memhtml sleep review  (lists the standing refusals)"],
                    details={"id": cid, "standing": sorted(held)[:50]},
                )
        changes = [FileChange(refusal_path(cid), None) for cid in wanted]
        message = commit_subject("sleep", f"lift {len(wanted)} refusal(s): {', '.join(wanted)}")
        sha, _, _ = corpus.commit_changes(changes, message + "\n")
    return {
        "lifted": [held[cid] for cid in wanted],
        "commit_sha": sha,
        "standing": len(held) - len(wanted),
    }


def _history(corpus: Corpus, cid: str) -> str:
    """` (lifted in <commit>)` when git remembers the refusal, else ``."""
    out = corpus.git.text(
        "log", "-1", "--format=%h", "--diff-filter=D", "HEAD", "--", refusal_path(cid), check=False
    )
    return f" (it was lifted in {out.strip()})" if out.strip() else ""
