"""`sleep review` and `sleep status`: what a run did, file by file and phase by phase.

Classification comes from git, commit by commit over base..tip, so it is
complete after a resume, a lost run record, or a hand commit on the branch
(attributed to `phase: null`): a rename into `archive/<YYYY>/` is `archived`,
or `merged` when the archived copy names its survivor (`memhtml-superseded-by`);
another rename is `moved`; an addition `created`; a modification `rewritten`
(`content_changed` tells a head-only edit from a new text); a removal
`deleted` (sleep itself never deletes). The phases' own Touched records, kept
in the run record, refine the kind where they describe a path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memhtml.contracts.paths import is_archived_path
from memhtml.sleep import runs
from memhtml.store.branch import BlobReader, log_range
from memhtml.store.git import DiffEntry, Git

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

KINDS = ("merged", "archived", "rewritten", "created", "moved", "deleted")


def _hash_of(data: bytes | None) -> str | None:
    if data is None:
        return None
    from memhtml.html import parse_memory

    doc = parse_memory(data)
    return doc.content_hash or None


def classify(
    git: Git, reader: BlobReader, parent: str, commit: str, entries: Sequence[DiffEntry]
) -> list[dict[str, Any]]:
    """Each changed path of one commit with its kind."""
    from memhtml.html import parse_memory

    names = [f"{commit}:{e.path}" for e in entries if e.status != "D"]
    names += [f"{parent}:{e.old_path or e.path}" for e in entries if e.status in ("M", "R")]
    blobs = reader.read_many(names)

    def blob(name: str) -> bytes | None:
        got = blobs.get(name)
        return None if got is None else got[1]

    out: list[dict[str, Any]] = []
    for e in entries:
        item: dict[str, Any] = {
            "path": e.path,
            "from_path": e.old_path if e.status == "R" else None,
        }
        if e.status in ("A", "C"):
            item["kind"] = "created"
        elif e.status == "D":
            item["kind"] = "deleted"
        elif e.status == "R":
            if is_archived_path(e.path):
                new = blob(f"{commit}:{e.path}")
                into = parse_memory(new).superseded_by if new is not None else None
                item["kind"] = "merged" if into else "archived"
                if into:
                    item["into"] = into
            else:
                item["kind"] = "moved"
        else:
            item["kind"] = "rewritten"
            if e.path.endswith(".html") and not e.path.startswith(".memhtml/"):
                before = _hash_of(blob(f"{parent}:{e.path}"))
                after = _hash_of(blob(f"{commit}:{e.path}"))
                item["content_changed"] = before != after
        out.append(item)
    return out


def review(corpus: Corpus, run_id: str | None = None) -> dict[str, Any]:
    """Every file a run touched, classified, per phase (the `sleep.review` payload)."""
    git = corpus.git
    run_id = run_id or latest_run(corpus)
    if run_id is None:
        raise runs.RunNotFoundError("no sleep run yet", suggestions=["memhtml sleep run"])
    record, tip = runs.find_run(git, corpus.root, run_id)
    commits = runs.phase_commits(log_range(git, f"{record.base}..{tip}"), run_id)
    phase_touched: dict[str, dict[str, dict[str, Any]]] = {}
    for result in record.results:
        phase_touched[result["phase"]] = {t["path"]: t for t in result.get("touched") or []}
    per_commit: list[dict[str, Any]] = []
    files: dict[str, dict[str, Any]] = {}
    # the run's bookkeeping, not files it curated
    bookkeeping = {runs.ledger_path(run_id), runs.changes_path(run_id)}
    with BlobReader(git) as reader:
        for entry, phase in commits:
            parent = entry.parents[0] if entry.parents else record.base
            diff = [d for d in git.diff(parent, entry.sha) if d.path not in bookkeeping]
            items = classify(git, reader, parent, entry.sha, diff)
            own = phase_touched.get(phase or "", {})
            for item in items:
                told = own.get(item["path"])
                if told is not None and told.get("kind") in KINDS and item["kind"] != "deleted":
                    item["kind"] = told["kind"]
                item["phase"] = phase
                seen = files.setdefault(item["path"], {**item, "phases": []})
                seen["kind"], seen["phases"] = item["kind"], [*seen["phases"], phase]
            per_commit.append(
                {
                    "commit_sha": entry.sha,
                    "subject": entry.subject,
                    "phase": phase,
                    "hand_edit": phase is None,
                    "counts": runs.counts_of(entry),
                    "files": items,
                    "by_kind": _tally(items),
                }
            )
    # A path a later commit moved on is reported where it ended up.
    moved_away = {f.get("from_path") for f in files.values() if f.get("from_path")}
    final = [
        {k: v for k, v in f.items() if k != "phase"}
        for p, f in sorted(files.items())
        if not (p in moved_away and f["kind"] == "deleted")
    ]
    results = {r["phase"]: r for r in record.results}
    phases = []
    for name in record.phases:
        mine = [c for c in per_commit if c["phase"] == name]
        kept = results.get(name, {})
        phases.append(
            {
                "phase": name,
                "status": kept.get("status") or ("ok" if mine else "not run"),
                "detail": kept.get("detail"),
                "commit_sha": mine[-1]["commit_sha"] if mine else None,
                "counts": mine[-1]["counts"] if mine else kept.get("counts", {}),
                "by_kind": _tally([f for c in mine for f in c["files"]]),
                "files": [f for c in mine for f in c["files"]],
            }
        )
    stat = git.text("diff", "--shortstat", record.base, tip) if tip != record.base else ""
    decided = decisions(corpus, record, tip)
    return {
        "run_id": run_id,
        "branch": record.branch,
        "base_sha": record.base,
        "head_sha": tip,
        "status": _status(record, tip, git),
        "phases": phases,
        "hand_commits": [c for c in per_commit if c["hand_edit"]],
        "files": final,
        "by_kind": _tally(final),
        "commits": len(per_commit),
        "diff_stat": stat,
        "report_path": runs.report_path(run_id),
        **decided,
    }


def decisions(corpus: Corpus, record: runs.RunRecord, tip: str) -> dict[str, Any]:
    """The run's changes (with their diffs and reasons), what it vetoed, what a merge
    refused and left out, and the refusals standing on the current branch."""
    from memhtml.sleep.changes import decode
    from memhtml.sleep.changeview import change_views, veto_summary, veto_views
    from memhtml.sleep.refusals import at_head

    git = corpus.git
    data = git.show_blob(tip, runs.changes_path(record.run_id))
    changes, vetoes = decode(data) if data else ([], [])
    with BlobReader(git) as reader:
        views = change_views(reader, changes)
    vetoed = veto_views(vetoes)
    standing = sorted(at_head(corpus).values(), key=lambda r: str(r.get("refused_at") or ""))
    return {
        "changes": views,
        "vetoed": vetoed,
        "vetoes_by_guard": veto_summary(vetoed),
        "refused": list(record.refused),
        "left_out": list(record.left_out),
        "standing_refusals": standing,
    }


def _tally(items: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item["kind"]] = out.get(item["kind"], 0) + 1
    return out


def _status(record: runs.RunRecord, tip: str | None, git: Git) -> str:
    return runs.shown_status(record, tip)


def latest_run(corpus: Corpus) -> str | None:
    """The newest run that still has a branch (else the newest recorded one)."""
    ids = runs.run_ids(corpus.git, corpus.root)
    live = [i for i in ids if runs.ref_sha(corpus.git, runs.ref_of(i)) is not None]
    found = live or ids
    return found[-1] if found else None


def status(corpus: Corpus) -> dict[str, Any]:
    """The latest run and its phases, and every run known (the `sleep.report` payload)."""
    git = corpus.git
    ids = runs.run_ids(git, corpus.root)
    known = []
    for run_id in ids:
        tip = runs.ref_sha(git, runs.ref_of(run_id))
        record = runs.load_record(corpus.root, run_id)
        if record is None and tip is not None:
            record = runs.reconstruct(git, run_id)
        if record is None:
            continue
        known.append({"run_id": run_id, "status": _status(record, tip, git), "head_sha": tip})
    latest = latest_run(corpus)
    if latest is None:
        return {"run_id": None, "status": None, "phases": [], "runs": []}
    tip = runs.ref_sha(git, runs.ref_of(latest))
    record = runs.load_record(corpus.root, latest) or (
        runs.reconstruct(git, latest) if tip is not None else None
    )
    assert record is not None
    done = runs.completed_phases(git, record, tip) if tip is not None else {}
    results = {r["phase"]: r for r in record.results}
    phases = []
    for name in record.phases:
        kept = results.get(name)
        phases.append(
            {
                "phase": name,
                "status": kept["status"] if kept else ("ok" if name in done else "pending"),
                "counts": kept["counts"] if kept else {},
                "detail": kept.get("detail") if kept else None,
                "commit_sha": done.get(name) or (kept or {}).get("commit_sha"),
                "llm_calls": (kept or {}).get("llm_calls", 0),
            }
        )
    commits = len(log_range(git, f"{record.base}..{tip}")) if tip is not None else 0
    return {
        "run_id": latest,
        "branch": record.branch if tip is not None else None,
        "base_sha": record.base,
        "head_sha": tip,
        "status": _status(record, tip, git),
        "date": record.date,
        "started_at": record.started_at,
        "ended_at": record.ended_at,
        "phases": phases,
        "failed_phases": [p["phase"] for p in phases if p["status"] == "failed"],
        "commits": commits,
        "runs": known,
    }
