"""Search through the vector graph: it agrees with the exact scan, sees every write at once,
follows a model switch, and search without the graph library is what it always was.

Real parts: a 5,000-memory synthetic store (bench/synth.py) in a real git repository,
the shipped migrations, the fake embedder at the network edge, the CLI in subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memhtml
from bench.synth import SERVICES, THINGS, VERBS, build_store
from memhtml.embed import ann
from memhtml.ops.ann import ENV_MIN_ROWS

pytestmark = pytest.mark.skipif(not ann.available(), reason="the ann extra is not installed")

N = 5000
FLOOR = "1000"


def queries(n: int) -> list[str]:
    import random

    rng = random.Random(11)
    return [f"{rng.choice(SERVICES)} {rng.choice(THINGS)} {rng.choice(VERBS)}" for _ in range(n)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5,000 synthetic memories, indexed and embedded, with the graph built by the rebuild."""
    root = build_store(tmp_path_factory.mktemp("ann") / "memory", N, seed=3)
    old = os.environ.get(ENV_MIN_ROWS)
    os.environ[ENV_MIN_ROWS] = FLOOR
    try:
        with memhtml.open(root, embedder="fake") as c:
            data = c.index.rebuild(embed=True)
    finally:
        if old is None:
            os.environ.pop(ENV_MIN_ROWS, None)
        else:
            os.environ[ENV_MIN_ROWS] = old
    assert data["graph"]["built"] and data["graph"]["rows"] >= N
    return root


@pytest.fixture
def floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MIN_ROWS, FLOOR)


def paths(result: Any) -> list[str]:
    return [h.path for h in result.hits]


def agreement(c: Any, qs: list[str], **filters: Any) -> tuple[float, set[str]]:
    shares, methods = [], set()
    for q in qs:
        approx = c.search(q, explain=True, **filters)
        exact = c.search(q, exact=True, explain=True, **filters)
        assert exact.vector_search["method"] == "exact"
        methods.add(approx.vector_search["method"])
        want = set(paths(exact))
        shares.append(len(want & set(paths(approx))) / max(1, len(want)))
    return sum(shares) / len(shares), methods


def test_default_searches_go_through_the_graph_and_agree_with_exact(store, floor):
    with memhtml.open(store, embedder="fake") as c:
        share, methods = agreement(c, queries(60))
    assert methods == {"ann"}
    assert share >= 0.95, share


def test_restrictive_scopes_agree_too(store, floor):
    """A scope under the threshold is scanned exactly over its own rows; a wider one goes
    through the graph with an over-fetch scaled to the share of rows in scope."""
    with memhtml.open(store, embedder="fake") as c:
        narrow, narrow_methods = agreement(c, queries(20), type=["verdict"])
        wide, wide_methods = agreement(c, queries(20), type=["semantic"])
        tag, _ = agreement(c, queries(20), tag=["retry-budget"])
    assert narrow_methods == {"exact_scope"} and narrow == 1.0
    assert wide_methods == {"ann"} and wide >= 0.95, wide
    assert tag == 1.0


def test_explain_says_why_below_the_threshold(store):
    with memhtml.open(store, embedder="fake") as c:
        result = c.search("checkout-api retry budget", explain=True)
        plain = c.search("checkout-api retry budget")
    assert result.vector_search["method"] == "exact"
    assert "below MEMHTML_ANN_MIN_ROWS (100000)" in result.vector_search["why"]
    assert "vector_search" not in plain.to_data()  # only when explain asks


def cli(root: Path, *args: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *args, "--repo", str(root), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMHTML_EMBED": "fake", ENV_MIN_ROWS: FLOOR, **(extra or {})},
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return dict(json.loads(out.stdout))


def test_a_write_is_visible_to_the_next_search_cold_and_long_lived(store, floor):
    """The graph is never the whole answer: rows past it are scanned exactly."""
    with memhtml.open(store, embedder="fake") as c:
        warm = c.search("anything at all about queues", explain=True)
        assert warm.vector_search["method"] == "ann"
        # a write from another process (the cold CLI), then one from this process
        cli(
            store,
            "write",
            "--type",
            "semantic",
            "--title",
            "zephyr quokka",
            "--claim",
            "The zephyr quokka ledger rotates every fortnight.",
        )
        mine = c.write(title="xylophone wombat", claim="The xylophone wombat queue never sleeps.")
        for q, title in (("zephyr quokka ledger", "zephyr"), ("xylophone wombat", "xylophone")):
            got = c.search(q, explain=True, weights={"fts": 0.0})  # the vector arm alone
            assert got.vector_search["method"] == "ann"
            assert got.vector_search["tail_rows"] >= 1
            assert title in got.hits[0].path, (q, paths(got)[:3])
        cold = cli(store, "search", "xylophone wombat", "--explain", "--weight", "fts=0")
        assert cold["data"]["vector_search"]["method"] == "ann"
        assert cold["data"]["hits"][0]["path"] == mine["path"]


def test_without_the_graph_library_search_is_the_exact_scan(store):
    """The extra uninstalled (hidden from the interpreter): the same answers as --exact."""
    hide = (
        "import sys; sys.modules['usearch'] = None;"
        " from memhtml.cli.main import main; sys.exit(main())"
    )
    env = {**os.environ, "MEMHTML_EMBED": "fake", ENV_MIN_ROWS: FLOOR}
    for q in queries(3):
        args = ["search", q, "--repo", str(store), "--json", "--explain"]
        hidden = subprocess.run(
            [sys.executable, "-c", hide, *args],
            check=False,
            capture_output=True,
            text=True,
            env=env,
        )
        assert hidden.returncode == 0, hidden.stderr
        data = json.loads(hidden.stdout)["data"]
        assert data["vector_search"]["method"] == "exact"
        assert "not installed" in data["vector_search"]["why"]
        exact = cli(store, "search", q, "--exact")["data"]
        assert [h["path"] for h in data["hits"]] == [h["path"] for h in exact["hits"]]


def test_mcp_search_has_the_exact_door(store, floor):
    from memhtml.mcp.inputs import SearchInput
    from memhtml.mcp.tools import memory_search

    with memhtml.open(store, embedder="fake") as c:
        out = memory_search(
            lambda: c, SearchInput(query="edge-proxy cache", exact=True, explain=True)
        )
        assert out["data"]["vector_search"]["method"] == "exact"
        out = memory_search(lambda: c, SearchInput(query="edge-proxy cache", explain=True))
        assert out["data"]["vector_search"]["method"] == "ann"


def test_a_cold_read_rebuilds_a_graph_a_kill_left_unfinished(store, floor):
    """What a kill mid-build leaves (a temp file, no manifest, or a torn graph file): the next
    CLI search builds the graph again and answers through it."""
    folder = store / ".memhtml" / "vectors"
    manifest = next(folder.glob("*.ann.json"))
    graph = folder / json.loads(manifest.read_text())["file"]
    (folder / f".{graph.name}.999999.tmp").write_bytes(graph.read_bytes()[:4096])
    graph.write_bytes(graph.read_bytes()[:4096])  # torn
    before = cli(store, "search", "ledger-service cron schedule", "--exact")["data"]
    after = cli(store, "search", "ledger-service cron schedule", "--explain")["data"]
    assert after["vector_search"]["method"] == "ann"
    assert after["vector_search"]["tail_rows"] == 0
    left = sorted(p.name for p in folder.iterdir() if ".ann" in p.name)
    assert not any(n.endswith(".tmp") for n in left), left
    assert len(left) == 2  # one graph, one manifest
    want = {h["path"] for h in before["hits"]}
    assert len(want & {h["path"] for h in after["hits"]}) >= 0.9 * len(want)
    manifest.unlink()  # killed before the first manifest: no graph at all
    again = cli(store, "search", "ledger-service cron schedule", "--explain")["data"]
    assert again["vector_search"]["method"] == "ann"


def test_a_search_below_the_threshold_never_imports_the_graph_library(store):
    """The cold path below MEMHTML_ANN_MIN_ROWS costs what it did: no usearch import."""
    code = (
        "import sys, io, json; from memhtml.cli.main import run; buf = io.StringIO();"
        "run(['search', 'checkout-api retry budget', '--dense'], stdout=buf);"
        "print(json.dumps([m for m in ('usearch', 'usearch.index', 'memhtml.embed.ann')"
        " if m in sys.modules]))"
    )
    env = {**os.environ, "MEMHTML_ROOT": str(store), "MEMHTML_EMBED": "fake"}
    env.pop(ENV_MIN_ROWS, None)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_a_write_door_folds_a_long_tail_into_the_graph(tmp_path, monkeypatch):
    """Writes are added to the graph by insertion once their tail reaches FOLD_ROWS; the
    file keeps the rows it had (a prefix), so nothing is rebuilt."""
    from bench.synth import synth_ops
    from memhtml.ops.ann import FOLD_ROWS

    monkeypatch.setenv(ENV_MIN_ROWS, "500")
    root = build_store(tmp_path / "memory", 800, seed=5)
    with memhtml.open(root, embedder="fake") as c:
        c.index.rebuild(embed=True)
        before = c.search("pricing-engine rate limiter", explain=True).vector_search
        assert before["method"] == "ann" and before["tail_rows"] == 0
        small = c.apply(synth_ops(10, seed=8, offset=10_000))
        assert small.failure is None
        mid = c.search("pricing-engine rate limiter", explain=True).vector_search
        assert mid["graph_rows"] == before["graph_rows"] and mid["tail_rows"] >= 10
        big = c.apply(synth_ops(FOLD_ROWS, seed=9, offset=20_000))
        assert big.failure is None
        after = c.search("pricing-engine rate limiter", explain=True).vector_search
    assert after["method"] == "ann" and after["tail_rows"] == 0
    assert after["graph_rows"] >= before["graph_rows"] + FOLD_ROWS


def _held(root: Path) -> list[str]:
    """Files under `root` this process holds open or mapped (/proc/self: fds and maps)."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(root)):
            held.append(target)
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        held += [line.split()[-1] for line in maps if str(root) in line]
    return sorted(set(held))


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc")
def test_a_closed_corpus_holds_no_file_of_the_store(store, floor):
    """The mapped matrix and graph go with close(): a store's folder can then be moved,
    deleted or unmounted (a tmpfs stayed busy after a closed corpus's search)."""
    c = memhtml.open(store, embedder="fake")
    assert c.search("cache warm", explain=True).vector_search["method"] == "ann"
    assert any(p.endswith(".f32") for p in _held(store))  # the search did map the matrix
    c.close()
    assert _held(store) == []
