"""The vector graph (memhtml.embed.ann): a prefix of the matrix, extended, never stale, kill-safe.

Real parts: the memory-mapped matrix on disk, the graph library (usearch), real
files and a real SIGKILL in a child process at each stage of a build.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memhtml.embed import ann
from memhtml.embed.matrix import VectorMatrix

pytestmark = pytest.mark.skipif(not ann.available(), reason="the ann extra is not installed")

DIM = 16
MODEL = "test-model"


def keys(start: int, n: int) -> list[str]:
    return [f"{i:064x}" for i in range(start, start + n)]


def vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def grow(folder: Path, n: int, seed: int, epoch: str = "e1") -> np.ndarray:
    """Append `n` rows to the matrix; returns them."""
    vm = VectorMatrix(folder, durable=False)
    header = vm.header(epoch)
    start = header.rows if header else 0
    rows = vectors(n, seed)
    vm.append(epoch, MODEL, DIM, keys(start, n), rows, max_seq=start + n)
    return rows


def loaded(folder: Path, epoch: str = "e1"):
    m = VectorMatrix(folder).load(epoch, MODEL, DIM)
    assert m is not None
    return m


def graph_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "ann" in p.name and p.name != "ann.lock")


def test_build_then_extend_keeps_the_prefix_and_finds_new_rows(tmp_path):
    grow(tmp_path, 300, seed=1)
    first = ann.update(tmp_path, loaded(tmp_path))
    assert first is not None and first.rows == 300
    added = grow(tmp_path, 50, seed=2)
    matrix = loaded(tmp_path)
    stale = ann.load(tmp_path, matrix)
    assert stale is not None and stale.rows == 300  # a prefix: the tail is the caller's
    extended = ann.update(tmp_path, matrix)
    assert extended is not None and extended.rows == 350
    # every new row is its own nearest neighbour in the extended graph
    for i, row in enumerate(added):
        assert 300 + i in extended.search(row, 5).tolist()
    # one graph file and its manifest: the previous file was swept
    assert len([n for n in graph_files(tmp_path) if n.endswith(".ann")]) == 1


def test_a_graph_of_another_generation_or_space_is_never_used(tmp_path):
    grow(tmp_path, 200, seed=3)
    assert ann.update(tmp_path, loaded(tmp_path)) is not None
    vm = VectorMatrix(tmp_path, durable=False)
    vm.reset("e1", MODEL, DIM)  # a new generation: row numbers mean other rows now
    assert not any(n.endswith(".ann") for n in graph_files(tmp_path))  # left with the matrix
    grow(tmp_path, 200, seed=4)
    assert ann.load(tmp_path, loaded(tmp_path)) is None
    # a manifest planted for the old generation is ignored, not trusted
    rebuilt = ann.update(tmp_path, loaded(tmp_path))
    assert rebuilt is not None and rebuilt.manifest.generation == 1
    manifest = json.loads((tmp_path / "e1.ann.json").read_text())
    (tmp_path / "e1.ann.json").write_text(json.dumps({**manifest, "generation": 0}))
    assert ann.load(tmp_path, loaded(tmp_path)) is None
    # a new space (a model switch makes a new epoch): the old epoch's graph goes with its matrix
    vm.reset("e2", MODEL, DIM)
    assert graph_files(tmp_path) == []


def test_a_damaged_graph_file_is_rebuilt(tmp_path):
    grow(tmp_path, 250, seed=5)
    graph = ann.update(tmp_path, loaded(tmp_path))
    assert graph is not None
    path = tmp_path / graph.manifest.file
    del graph
    path.write_bytes(path.read_bytes()[:1000])
    assert ann.load(tmp_path, loaded(tmp_path)) is None
    again = ann.update(tmp_path, loaded(tmp_path))
    assert again is not None and again.rows == 250


def test_a_reader_does_not_wait_for_another_builder(tmp_path):
    grow(tmp_path, 100, seed=6)
    with ann.builder_lock(tmp_path, wait=True) as held:
        assert held
        code = (
            "import sys; from pathlib import Path; from memhtml.embed import ann;"
            " from memhtml.embed.matrix import VectorMatrix;"
            f" m = VectorMatrix(Path({str(tmp_path)!r})).load('e1', {MODEL!r}, {DIM});"
            f" print(ann.update(Path({str(tmp_path)!r}), m, wait=False))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], check=False, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "None"


KILL = """
import os, signal, sys
from pathlib import Path
from memhtml.embed import ann
from memhtml.embed.matrix import VectorMatrix

folder, label = Path(sys.argv[1]), sys.argv[2]
m = VectorMatrix(folder).load("e1", {model!r}, {dim})

def step(name):
    if name == label:
        os.kill(os.getpid(), signal.SIGKILL)

ann.update(folder, m, step=step)
"""


@pytest.mark.parametrize("label", ["ann:add", "ann:saved", "ann:renamed"])
@pytest.mark.parametrize("had_graph", [False, True])
def test_killed_mid_build_the_next_read_repairs_it(tmp_path, label, had_graph):
    grow(tmp_path, 300, seed=7)
    if had_graph:
        assert ann.update(tmp_path, loaded(tmp_path)) is not None
        grow(tmp_path, 40, seed=8)
    before = ann.read_manifest(tmp_path, "e1")
    script = KILL.format(model=MODEL, dim=DIM)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path), label], check=False)
    assert proc.returncode == -signal.SIGKILL
    # the manifest is the previous one (or none): a reader never sees a half-built graph
    assert ann.read_manifest(tmp_path, "e1") == before
    matrix = loaded(tmp_path)
    usable = ann.load(tmp_path, matrix)
    assert (usable is not None) == had_graph
    if usable is not None:
        assert usable.rows == 300  # the old graph; the 40 new rows are the exact tail
    repaired = ann.update(tmp_path, matrix)
    assert repaired is not None
    assert repaired.rows == (340 if had_graph else 300)
    names = graph_files(tmp_path)
    assert not any(n.endswith(".tmp") for n in names), names
    assert len([n for n in names if n.endswith(".ann")]) == 1, names


def test_the_lock_file_is_not_data(tmp_path):
    """A matrix reset keeps the builders' lock (another process may hold it)."""
    grow(tmp_path, 50, seed=9)
    assert ann.update(tmp_path, loaded(tmp_path)) is not None
    VectorMatrix(tmp_path).reset("e1", MODEL, DIM)
    assert (tmp_path / ann.LOCK_NAME).exists()
    assert os.listdir(tmp_path)  # the new generation's files


def test_a_matrix_sync_reads_the_vectors_a_page_at_a_time(corpus, repo):
    """The matrix equals the embeddings table in seq order whatever the page (a million
    vectors are never read at once)."""
    from memhtml.domain.vectors import vector_from_blob
    from memhtml.index.embedding import matrix_key, stored_space, sync_matrix, vectors_dir

    corpus.apply(
        [
            {"op": "write", "type": "semantic", "title": f"page {i}", "claim": f"Paged {i}."}
            for i in range(11)
        ]
    )
    conn = corpus.conn
    _, _, epoch = stored_space(conn)
    VectorMatrix(vectors_dir(repo)).reset(epoch, "memhtml-fake-v1", 384)
    loaded = sync_matrix(conn, repo, epoch, page=3)
    rows = conn.execute("SELECT content_hash, vector FROM embeddings ORDER BY seq").fetchall()
    assert loaded is not None and loaded.rows == len(rows) == 11
    assert [loaded.key(i) for i in range(11)] == [matrix_key(h) for h, _ in rows]
    assert np.array_equal(loaded.vectors, np.stack([vector_from_blob(v) for _, v in rows]))
    assert loaded.max_seq == conn.execute("SELECT max(seq) FROM embeddings").fetchone()[0]


def test_the_graph_and_the_local_model_share_a_process(tmp_path):
    """Loaded in the wrong order, usearch then onnxruntime crash the process (SIGSEGV): the
    graph's module loads onnxruntime first, and the local model then embeds as usual."""
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("onnxruntime is not installed")
    grow(tmp_path, 50, seed=10)
    code = (
        "import sys; from pathlib import Path; from memhtml.embed import ann;"
        " from memhtml.embed.matrix import VectorMatrix;"
        f" m = VectorMatrix(Path({str(tmp_path)!r})).load('e1', {MODEL!r}, {DIM});"
        f" g = ann.update(Path({str(tmp_path)!r}), m); assert g is not None;"
        " from memhtml.embed.registry import get_embedder;"
        " v = get_embedder('local').embed_query('drain the pool first'); print(len(v))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.strip().splitlines()[-1] == "384"
