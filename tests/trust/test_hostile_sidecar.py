"""A committed state sidecar arrives by sync: it cannot pin a memory (issue 29, item 7).

Whoever can push to the shared remote writes `.memhtml/state/access.jsonl`
and `corroboration.jsonl`. `state import` must refuse what no local clock or
counter could have produced (a timestamp from the future, a count that
overflows, a line nested past the parser), clamp what is merely large, never
import a row for a path that is not a memory, and a row already stamped in
the future must not hold a path's cooldown.
"""

from __future__ import annotations

import json
import os
import sqlite3
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memhtml.ops.sidecar_rows import FUTURE_SKEW_S, MAX_COUNT, MAX_LINE_BYTES, MAX_SIDECAR_BYTES

from .conftest import git, run_cli

SIDECAR = ".memhtml/state/access.jsonl"
CORROBORATION = ".memhtml/state/corroboration.jsonl"


def _instant(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


YESTERDAY = _instant(timedelta(days=-1))


def _row(path: str, **fields: Any) -> str:
    row = {
        "path": path,
        "accessCount": 3,
        "reinforcementCount": 1,
        "outcomeScore": 0.5,
        "lastAccessedAt": YESTERDAY,
        "lastReinforcedAt": YESTERDAY,
        "updatedAt": YESTERDAY,
        **fields,
    }
    return json.dumps(row, separators=(",", ":"))


def _write(root: Path, title: str) -> str:
    code, env = run_cli(
        root, "write", "--type", "semantic", "--title", title, "--claim", f"{title} holds."
    )
    assert code == 0, env
    return str(env["data"]["path"])


def _commit_sidecar(root: Path, lines: list[str], rel: str = SIDECAR) -> None:
    """The sidecar as a sync would bring it: committed, in the tree."""
    (root / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
    git(root, "add", "-f", rel)
    git(root, "commit", "-qm", "remote: sidecar")


def _access(root: Path) -> dict[str, tuple[Any, ...]]:
    with sqlite3.connect(root / ".memhtml" / "state.db") as db:
        return {r[0]: r for r in db.execute("SELECT * FROM access")}


@pytest.fixture
def memories(repo: Path) -> list[str]:
    return [_write(repo, f"{name} cache eviction") for name in ("Alpha", "Beta", "Gamma")]


def test_the_issue_repro_a_sidecar_from_the_future_is_refused(
    repo: Path, memories: list[str]
) -> None:
    beta = memories[1]
    far = "9999-12-31T23:59:59Z"
    _commit_sidecar(
        repo,
        [
            _row(
                beta,
                accessCount=9_000_000_000_000_000_000,
                outcomeScore=1,
                lastAccessedAt=far,
                lastReinforcedAt=far,
                updatedAt=far,
            )
        ],
    )
    code, env = run_cli(repo, "state", "import")
    assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR", env
    assert "line 1" in env["error"] and "future" in env["error"]
    assert env["details"] == {"file": SIDECAR, "line": 1}
    assert _access(repo) == {}  # nothing imported
    code, env = run_cli(repo, "reinforce", beta, "--signal", "negative")
    assert code == 0 and env["data"]["bumped"] == [beta], env


def test_a_huge_count_is_clamped_and_an_overflowing_one_refused(
    repo: Path, memories: list[str]
) -> None:
    alpha, beta, _ = memories
    _commit_sidecar(repo, [_row(alpha), _row(beta, accessCount=9_000_000_000_000_000_000)])
    code, env = run_cli(repo, "state", "import")
    assert code == 0, env
    assert env["data"]["clamped"] == 1 and env["data"]["restored"] == 2
    assert _access(repo)[beta][1] == MAX_COUNT and _access(repo)[alpha][1] == 3

    over = _row(alpha, accessCount=9_300_000_000_000_000_000)  # past SQLite's INTEGER
    (repo / "over.jsonl").write_text(over + "\n")
    code, env = run_cli(repo, "state", "import", str(repo / "over.jsonl"))
    assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR", env
    assert "overflows" in env["error"]


def test_a_deeply_nested_line_is_a_typed_refusal(repo: Path, memories: list[str]) -> None:
    deep = "[" * 5000 + "]" * 5000  # within the line limit, past the parser's recursion
    huge = "[" * 100_000 + "]" * 100_000  # past the line limit
    for name, line in (("deep.jsonl", deep), ("huge.jsonl", huge)):
        (repo / name).write_text(_row(memories[0]) + "\n" + line + "\n")
        code, env = run_cli(repo, "state", "import", str(repo / name))
        assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR", env
        assert "line 2" in env["error"]
    assert _access(repo) == {}


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"path":"areas/a.html","accessCount":NaN}', "NaN"),
        ('{"path":"areas/a.html","outcomeScore":Infinity}', "Infinity"),
        ('{"path":"areas/a.html","outcomeScore":-Infinity}', "Infinity"),
        ('{"path":"areas/a.html","path":"areas/b.html"}', "given twice"),
        ('{"path":"areas/a.html","accessCount":-4}', "accessCount"),
        ('{"path":"areas/a.html","reinforcementCount":1.5}', "reinforcementCount"),
        ('{"path":"areas/a.html","accessCount":' + "9" * 5000 + "}", "line 1"),
        ('{"path":"areas/a.html","updatedAt":"' + _instant(timedelta(hours=1)) + '"}', "future"),
    ],
)
def test_hostile_values_are_refused_by_line(repo: Path, line: str, why: str) -> None:
    (repo / "bad.jsonl").write_text(line + "\n")
    code, env = run_cli(repo, "state", "import", str(repo / "bad.jsonl"))
    assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR", env
    assert why in env["error"] and len(env["error"]) < 400


def test_a_small_clock_skew_is_allowed(repo: Path, memories: list[str]) -> None:
    ahead = _instant(timedelta(seconds=FUTURE_SKEW_S // 2))
    (repo / "skew.jsonl").write_text(_row(memories[0], lastAccessedAt=ahead) + "\n")
    code, env = run_cli(repo, "state", "import", str(repo / "skew.jsonl"))
    assert code == 0 and env["data"]["restored"] == 1, env


def test_rows_for_paths_that_are_not_memories_are_skipped(repo: Path, memories: list[str]) -> None:
    alpha = memories[0]
    (repo / "areas" / "inbox" / "link.html").symlink_to("alpha-cache-eviction.html")
    git(repo, "add", "areas/inbox/link.html")
    git(repo, "commit", "-qm", "remote: a symlink")
    decomposed = unicodedata.normalize("NFD", "areas/inbox/café.html")
    (repo / "areas" / "inbox" / "café.html").write_bytes((repo / alpha).read_bytes())
    hostile = [
        SIDECAR,
        ".memhtml/index.db",
        "areas/inbox/index.html",
        "../outside.html",
        "/etc/passwd",
        "areas/nope.html",
        "areas/inbox/link.html",
        alpha.replace("alpha", "al\u200dpha"),
        alpha.replace("alpha", "\u202ealpha"),
        alpha.upper(),
        decomposed,
    ]
    _commit_sidecar(repo, [_row(alpha), *(_row(p, accessCount=500) for p in hostile)])
    code, env = run_cli(repo, "state", "import")
    assert code == 0, env
    data = env["data"]
    assert data["rows"] == 1 and data["restored"] == 1
    assert data["skipped"] == len(hostile) and data["skipped_paths"] == hostile
    assert set(_access(repo)) == {alpha}


def test_a_row_follows_its_memory_along_a_move(repo: Path, memories: list[str]) -> None:
    alpha = memories[0]
    moved = "resources/caches/alpha.html"
    (repo / "resources" / "caches").mkdir(parents=True)
    git(repo, "mv", alpha, moved)
    git(repo, "commit", "-qm", "hand move")
    _commit_sidecar(repo, [_row(alpha)])
    code, env = run_cli(repo, "state", "import")
    assert code == 0, env
    assert env["data"]["followed"] == [{"from": alpha, "to": moved}]
    assert set(_access(repo)) == {moved}


def test_committed_sidecars_that_are_links_or_huge_are_refused(
    repo: Path, memories: list[str], tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text(_row(memories[0]) + "\n")
    (repo / SIDECAR).symlink_to(outside)
    git(repo, "add", "-f", SIDECAR)
    git(repo, "commit", "-qm", "remote: a linked sidecar")
    code, env = run_cli(repo, "state", "import")
    assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR", env
    assert "not a regular file" in env["error"]
    (repo / SIDECAR).unlink()
    with (repo / SIDECAR).open("wb") as f:  # sparse: the size is refused before a read
        f.truncate(MAX_SIDECAR_BYTES + 1)
    code, env = run_cli(repo, "state", "import")
    assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR", env
    assert "MiB" in env["error"]
    assert _access(repo) == {}


def test_a_long_line_is_refused_without_reading_the_file_whole(repo: Path) -> None:
    (repo / "long.jsonl").write_bytes(b'{"path":"' + b"a" * (MAX_LINE_BYTES + 10) + b'"}\n')
    code, env = run_cli(repo, "state", "import", str(repo / "long.jsonl"))
    assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR" and "longer than" in env["error"]
    (repo / "latin1.jsonl").write_bytes(b'{"path":"areas/caf\xe9.html"}\n')
    code, env = run_cli(repo, "state", "import", str(repo / "latin1.jsonl"))
    assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR" and "UTF-8" in env["error"]


def test_the_corroboration_sidecar_is_held_to_the_same_rules(
    repo: Path, memories: list[str]
) -> None:
    alpha, beta, _ = memories
    day = YESTERDAY[:10]

    def edge(src: str, dst: str, **fields: Any) -> str:
        row = {"kind": "edge", "srcPath": src, "rel": "contradicts", "dstPath": dst}
        return json.dumps({**row, "count": 2, "firstSeen": day, "lastSeen": day, **fields})

    def entity(**fields: Any) -> str:
        row = {"kind": "entity", "entityType": "person", "alias": "bob", "canonical": "Robert"}
        return json.dumps({**row, "count": 2, "firstSeen": day, "lastSeen": day, **fields})

    refused = [
        (edge(alpha, beta, lastSeen="9999-01-01"), "future"),
        (edge(alpha, beta, count=2**63), "overflows"),
        (edge(alpha, beta, rel="pwns"), "rel"),
        (entity(promoted="yes"), "promoted"),
        (entity(alias="bob\u0007"), "control"),
        (entity(canonical="x" * 600), "longer than"),
    ]
    for line, why in refused:
        (repo / "c.jsonl").write_text(entity() + "\n" + line + "\n")
        os.replace(repo / "c.jsonl", repo / "corroboration.jsonl")
        code, env = run_cli(repo, "state", "import", str(repo / "corroboration.jsonl"))
        assert code == 2 and env["code"] == "ERR_INVALID_SIDECAR", (line, env)
        assert "line 2" in env["error"] and why in env["error"], (line, env)
    _commit_sidecar(
        repo,
        [
            entity(count=10**12),
            edge(alpha, beta),
            edge(alpha, "areas/nope.html"),
            edge(".memhtml/index.db", beta),
        ],
        CORROBORATION,
    )
    code, env = run_cli(repo, "state", "import")
    assert code == 0, env
    assert env["data"]["corroboration_rows"] == 2 and env["data"]["skipped"] == 2
    assert env["data"]["clamped"] == 1
    with sqlite3.connect(repo / ".memhtml" / "state.db") as db:
        assert db.execute("SELECT count FROM entity_corroboration").fetchall() == [(MAX_COUNT,)]
        assert db.execute("SELECT src_path, dst_path FROM edge_corroboration").fetchall() == [
            (alpha, beta)
        ]


def test_a_row_stamped_in_the_future_does_not_hold_the_cooldown(
    repo: Path, memories: list[str]
) -> None:
    """A plane an older build imported a future row into: the local clock still decides."""
    _, beta, gamma = memories
    far = "9999-12-31T23:59:59Z"
    run_cli(repo, "status")  # the state plane exists
    with sqlite3.connect(repo / ".memhtml" / "state.db") as db:
        db.execute(
            "INSERT INTO access VALUES (?, 9000000000000000000, 0, 1.0, ?, ?, ?)",
            (beta, far, far, far),
        )
        db.execute("INSERT INTO access VALUES (?, 5, 0, 0.0, ?, NULL, ?)", (gamma, far, far))
    code, env = run_cli(repo, "reinforce", beta, "--signal", "negative")
    assert code == 0 and env["data"]["bumped"] == [beta], env
    row = _access(repo)[beta]
    assert row[3] < 1.0 and row[5] < far  # the outcome moved; the stamp is now's
    code, env = run_cli(repo, "reinforce", beta, "--signal", "negative")
    assert env["data"]["cooled_down"] == [beta]  # from now on the ordinary cooldown
    code, env = run_cli(repo, "read", gamma)
    assert code == 0
    assert _access(repo)[gamma][1:2] == (6,) and _access(repo)[gamma][4] < far  # bumped


def test_export_after_a_hostile_import_carries_only_memories(
    repo: Path, memories: list[str]
) -> None:
    alpha, beta, _ = memories
    _commit_sidecar(
        repo,
        [_row(alpha), _row(beta, accessCount=10**15), _row("areas/nope.html", accessCount=7)],
    )
    code, env = run_cli(repo, "state", "import")
    assert code == 0 and env["data"]["skipped"] == 1, env
    code, env = run_cli(repo, "state", "export")
    assert code == 0 and env["data"]["written"], env
    lines = [json.loads(x) for x in (repo / SIDECAR).read_text().splitlines()]
    assert [(x["path"], x["accessCount"]) for x in lines] == [(alpha, 3), (beta, MAX_COUNT)]
    code, env = run_cli(repo, "state", "import")
    assert code == 0 and env["data"]["restored"] == 0 and env["data"]["clamped"] == 0


def test_a_night_exports_only_what_the_import_let_in(
    repo: Path, memories: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sleep's state-export phase renders the plane: a hostile sidecar's skipped and clamped
    rows come back out of a night as the import left them, not as the remote wrote them."""
    alpha, beta, _ = memories
    _commit_sidecar(
        repo,
        [_row(alpha), _row(beta, accessCount=10**15), _row(".memhtml/index.db", accessCount=9)],
    )
    code, env = run_cli(repo, "state", "import")
    assert code == 0 and env["data"]["clamped"] == 1 and env["data"]["skipped"] == 1, env
    monkeypatch.setenv("MEMHTML_LLM", "off")
    code, env = run_cli(repo, "sleep", "run")
    assert code == 0, env
    branch = env["data"]["branch"]
    night = git(repo, "show", f"{branch}:{SIDECAR}").splitlines()
    assert [(x["path"], x["accessCount"]) for x in map(json.loads, night)] == [
        (alpha, 3),
        (beta, MAX_COUNT),
    ]
