"""State export / import: the original's sidecar bytes, a strict import that never lowers a
newer row, and a clone that keeps the store's salience ranking."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import memhtml
from memhtml.contracts.errors import InvalidSidecarError, PathNotFoundError
from memhtml.ops.state_io import (
    ACCESS_SIDECAR,
    CORROBORATION_SIDECAR,
    export_state,
    import_state,
    parse_access,
    parse_corroboration,
    render_access,
    render_corroboration,
)

T0 = "2026-03-01T09:00:00Z"
TOPICS = ("cache", "queue", "deploy", "backup", "index")


def _rows(corpus: Any, table: str = "access") -> list[tuple[Any, ...]]:
    return corpus.conn.execute(f"SELECT * FROM state.{table} ORDER BY 1, 2, 3").fetchall()


def test_the_access_sidecar_is_the_originals_bytes() -> None:
    line = (
        '{"path":"areas/x/y.html","accessCount":3,"reinforcementCount":1,"outcomeScore":0.3,'
        '"lastAccessedAt":"2026-08-01T10:00:00Z","lastReinforcedAt":"2026-08-01T10:00:00Z",'
        '"updatedAt":"2026-08-01T10:00:00Z"}\n'
    )
    at = "2026-08-01T10:00:00Z"
    assert render_access([("areas/x/y.html", 3, 1, 0.30000004, at, at, at)]) == line.encode()
    # whole scores have no fraction and -0 is 0, as JSON.stringify writes them
    whole = render_access(
        [("areas/a.html", 1, 1, -1.0, at, at, at), ("areas/b.html", 1, 0, -0.0, at, None, at)]
    )
    assert b'"outcomeScore":-1,' in whole and b'"outcomeScore":0,' in whole
    assert render_access([]) == b""
    assert [r.path for r in parse_access(line)] == ["areas/x/y.html"]


_INSTANT = st.sampled_from(["2026-01-01T00:00:00Z", "2026-05-06T07:08:09Z", "2025-12-31"])


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"areas/[a-z]{1,8}\.html", fullmatch=True),
            st.integers(0, 10**6),
            st.integers(0, 10**3),
            st.floats(-1, 1, allow_nan=False),
            st.none() | _INSTANT,
            st.none() | _INSTANT,
            _INSTANT,
        ),
        max_size=8,
        unique_by=lambda r: r[0],
    )
)
def test_render_then_parse_round_trips(rows: list[tuple[Any, ...]]) -> None:
    rows.sort()
    parsed = parse_access(render_access(rows).decode())
    assert [(r.path, r.access_count, r.reinforcement_count) for r in parsed] == [
        (p, a, r) for p, a, r, *_ in rows
    ]
    assert [r.outcome_score for r in parsed] == [pytest.approx(round(r[3], 4)) for r in rows]
    again = [
        (
            r.path,
            r.access_count,
            r.reinforcement_count,
            r.outcome_score,
            r.last_accessed_at,
            r.last_reinforced_at,
            r.updated_at,
        )
        for r in parsed
    ]
    assert render_access(again) == render_access(rows)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"accessCount": 1}', "path must be"),
        ('{"path": 7}', "path must be"),
        ('{"path": "areas/a.html", "accessCount": -1}', "accessCount"),
        ('{"path": "areas/a.html", "accessCount": true}', "accessCount"),
        ('{"path": "areas/a.html", "outcomeScore": 2}', "outcomeScore"),
        ('{"path": "areas/a.html", "lastAccessedAt": "yesterday"}', "lastAccessedAt"),
        ('{"path": "areas/a.html", "updatedAt": 5}', "updatedAt"),
    ],
)
def test_a_malformed_line_is_refused_by_its_number(line: str, why: str) -> None:
    good = '{"path": "areas/ok.html", "accessCount": 1, "updatedAt": "2026-01-01"}'
    with pytest.raises(InvalidSidecarError) as err:
        parse_access(f"{good}\n\n{line}\n", "s.jsonl")
    assert err.value.details == {"file": "s.jsonl", "line": 3}
    assert "line 3" in err.value.message and why in err.value.message
    assert err.value.code == "ERR_INVALID_SIDECAR" and err.value.exit_code == 2


def test_corroboration_round_trips_and_refuses_bad_rows() -> None:
    entities = [("person", "bob", "Robert", 2, "2026-01-01", "2026-02-01", 1)]
    edges = [("areas/a.html", "supports", "areas/b.html", 3, "2026-01-01", "2026-03-01")]
    data = render_corroboration(entities, edges).decode()
    assert parse_corroboration(data)[:2] == (entities, edges)
    with pytest.raises(InvalidSidecarError, match="line 1: kind"):
        parse_corroboration(
            '{"kind":"vertex","count":1,"firstSeen":"2026-01-01","lastSeen":"2026-01-01"}'
        )


def _store(repo: Path) -> tuple[list[str], list[str]]:
    """Thirty memories on five topics, read and reinforced unevenly at distinct times."""
    paths: list[str] = []
    with memhtml.open(repo, embedder="fake", now=T0) as c:
        for i in range(30):
            topic = TOPICS[i % len(TOPICS)]
            paths.append(
                c.write(
                    title=f"{topic} note {i}",
                    claim=f"The {topic} runbook step {i} covers the {topic} service.",
                    type="semantic",
                )["path"]
            )
    for day in range(1, 6):  # each day opens a later clock, past every cooldown
        with memhtml.open(repo, embedder="fake", now=f"2026-03-{day + 1:02d}T09:00:00Z") as c:
            for j, path in enumerate(paths):
                if (j * 7 + day) % (j % 5 + 2) == 0:
                    c.read(path)
                if j % 4 == day % 4:
                    c.reinforce([path], "positive" if j % 3 else "negative")
    queries = [f"{t} runbook step {k}" for t in TOPICS for k in range(4)]
    return paths, queries


def _ranking(repo: Path, queries: list[str]) -> list[list[str]]:
    with memhtml.open(repo, embedder="fake", now="2026-03-10T00:00:00Z") as c:
        return [[h.path for h in c.search(q, limit=10).hits] for q in queries]


def test_export_clone_import_keeps_the_salience_ranking(repo: Path, tmp_path: Path) -> None:
    _, queries = _store(repo)
    assert len(queries) == 20
    with memhtml.open(repo, embedder="fake") as c:
        exported = export_state(c)
        assert exported["written"] and exported["commit_sha"]
        original_rows = _rows(c)
    lines = (repo / ACCESS_SIDECAR).read_text().splitlines()
    assert [json.loads(x)["path"] for x in lines] == sorted(r[0] for r in original_rows)
    expected = _ranking(repo, queries)

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    assert _ranking(clone, queries) != expected  # without its state the clone ranks otherwise
    with memhtml.open(clone, embedder="fake") as c:
        report = import_state(c)
        assert report["rows"] == len(original_rows) == report["restored"]
        assert report["skipped"] == 0 and report["clamped"] == 0
        assert [r[:6] for r in _rows(c)] == [
            (p, a, rc, pytest.approx(o, abs=5e-5), la, lr)
            for p, a, rc, o, la, lr, _ in original_rows
        ]
        again = import_state(c)  # idempotent
        assert again["restored"] == 0
    assert _ranking(clone, queries) == expected


def test_import_never_lowers_a_newer_row_and_skips_rows_of_gone_paths(
    corpus: Any, tmp_path: Path
) -> None:
    path = corpus.write(title="kept", claim="A kept memory.", type="semantic")["path"]
    corpus.conn.execute(
        "INSERT INTO state.access VALUES (?, 9, 4, 0.8, '2026-05-01T00:00:00Z',"
        " '2026-05-01T00:00:00Z', '2026-05-01T00:00:00Z')",
        (path,),
    )
    older = tmp_path / "access.jsonl"
    older.write_text(
        json.dumps(
            {
                "path": path,
                "accessCount": 2,
                "reinforcementCount": 1,
                "outcomeScore": -0.5,
                "lastAccessedAt": "2026-01-01T00:00:00Z",
                "lastReinforcedAt": None,
                "updatedAt": "2026-01-01T00:00:00Z",
            }
        )
        + "\n"
        + json.dumps({"path": "areas/gone/old.html", "accessCount": 5, "updatedAt": "2026-01-02"})
        + "\n"
    )
    before = _rows(corpus)
    report = import_state(corpus, str(older))
    rows = dict((r[0], r) for r in _rows(corpus))
    assert rows[path] == before[0]  # nothing of the newer row moved
    assert "areas/gone/old.html" not in rows  # not a memory: skipped, and counted
    assert report["skipped"] == 1 and report["skipped_paths"] == ["areas/gone/old.html"]
    assert report["restored"] == 0
    newer = tmp_path / "newer.jsonl"
    newer.write_text(
        json.dumps(
            {
                "path": path,
                "accessCount": 3,
                "reinforcementCount": 6,
                "outcomeScore": -0.25,
                "lastAccessedAt": "2026-04-01T00:00:00Z",
                "lastReinforcedAt": "2026-06-01T00:00:00Z",
                "updatedAt": "2026-06-01T00:00:00Z",
            }
        )
        + "\n"
    )
    import_state(corpus, str(newer))
    merged = dict((r[0], r) for r in _rows(corpus))[path]
    assert merged[1:] == (
        9,
        6,
        -0.25,
        "2026-05-01T00:00:00Z",
        "2026-06-01T00:00:00Z",
        "2026-06-01T00:00:00Z",
    )


def test_a_bad_sidecar_imports_nothing(corpus: Any, tmp_path: Path) -> None:
    bad = tmp_path / "access.jsonl"
    bad.write_text('{"path":"areas/a.html","accessCount":1,"updatedAt":"2026-01-01"}\n{"path":7}\n')
    with pytest.raises(InvalidSidecarError, match="line 2"):
        import_state(corpus, str(bad))
    assert _rows(corpus) == []
    with pytest.raises(PathNotFoundError):
        import_state(corpus, str(tmp_path / "none.jsonl"))
    assert import_state(corpus)["rows"] == 0  # no committed sidecar: nothing to do


def test_corroboration_survives_export_and_import(corpus: Any, repo: Path) -> None:
    corpus.conn.execute(
        "INSERT INTO state.entity_corroboration VALUES"
        " ('person', 'bob', 'Robert', 2, '2026-01-01', '2026-02-01', 0)"
    )
    first = export_state(corpus)
    assert first["commit_sha"] and (repo / CORROBORATION_SIDECAR).is_file()
    assert export_state(corpus)["commit_sha"] is None  # same rows, same bytes
    corpus.conn.execute("DELETE FROM state.entity_corroboration")
    assert export_state(corpus)["commit_sha"] is None  # an empty plane keeps the sidecar
    report = import_state(corpus)
    assert report["corroboration_restored"] == 1
    assert _rows(corpus, "entity_corroboration") == [
        ("person", "bob", "Robert", 2, "2026-01-01", "2026-02-01", 0)
    ]
