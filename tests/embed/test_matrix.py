"""The vector matrix sidecar: round trips, authoritative headers, resets and concurrent writers."""

from __future__ import annotations

import hashlib
import json
import multiprocessing

import numpy as np
import pytest

from memhtml.contracts.errors import EmbedModelMismatchError, StorageError
from memhtml.embed.matrix import KEY_WIDTH, LoadedMatrix, MatrixHeader, VectorMatrix

MODEL = "memhtml-fake-v1"
DIM = 8


def key(i: int, tag: str = "") -> str:
    return hashlib.sha256(f"{tag}{i}".encode()).hexdigest()


def vector_for(k: str) -> np.ndarray:
    seed = int(k[:16], 16)
    return np.random.default_rng(seed).random(DIM, dtype=np.float32)


def rows_for(keys: list[str]) -> np.ndarray:
    return np.stack([vector_for(k) for k in keys]) if keys else np.empty((0, DIM), np.float32)


def test_absent_epoch_loads_as_none(tmp_path):
    assert VectorMatrix(tmp_path / "nowhere").load("e1", MODEL, DIM) is None


def test_append_load_round_trip(tmp_path):
    matrix = VectorMatrix(tmp_path)
    first = [key(i) for i in range(5)]
    second = [key(i) for i in range(5, 8)]
    assert matrix.append("e1", MODEL, DIM, first, rows_for(first), max_seq=5)
    assert matrix.append("e1", MODEL, DIM, second, rows_for(second), max_seq=8)
    loaded = matrix.load("e1", MODEL, DIM)
    assert isinstance(loaded, LoadedMatrix)
    assert (loaded.rows, loaded.max_seq) == (8, 8)
    assert loaded.vectors.shape == (8, DIM)
    assert loaded.vectors.dtype == np.float32
    np.testing.assert_array_equal(loaded.vectors, rows_for(first + second))
    assert [loaded.key(i) for i in range(8)] == first + second
    assert loaded.keys_at([7, 0]) == [second[-1], first[0]]
    assert not loaded.vectors.flags.writeable


def test_keys_are_hex_text_on_disk(tmp_path):
    matrix = VectorMatrix(tmp_path)
    k = key(1).upper()  # accepted, stored lowercase
    matrix.append("e1", MODEL, DIM, [k], rows_for([k.lower()]), max_seq=1)
    header = matrix.header("e1")
    assert header is not None
    assert matrix.keys_path(header).read_bytes() == k.lower().encode()
    assert len(matrix.keys_path(header).read_bytes()) == KEY_WIDTH


def test_header_is_authoritative_over_a_torn_append(tmp_path):
    matrix = VectorMatrix(tmp_path)
    keys = [key(i) for i in range(4)]
    matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=4)
    header = matrix.header("e1")
    assert header is not None
    with open(matrix.vectors_path(header), "ab") as f:
        f.write(b"\x7f" * (DIM * 4 + 3))  # a row and a bit that no header counts
    with open(matrix.keys_path(header), "ab") as f:
        f.write(b"f" * 70)
    loaded = matrix.load("e1", MODEL, DIM)
    assert loaded is not None
    assert loaded.rows == 4
    np.testing.assert_array_equal(loaded.vectors, rows_for(keys))
    # The next append cuts the torn tail off instead of building on it.
    more = [key(9)]
    matrix.append("e1", MODEL, DIM, more, rows_for(more), max_seq=9)
    loaded = matrix.load("e1", MODEL, DIM)
    assert loaded is not None
    assert loaded.rows == 5
    np.testing.assert_array_equal(loaded.vectors, rows_for(keys + more))
    assert loaded.key(4) == more[0]
    assert matrix.vectors_path(header).stat().st_size == 5 * DIM * 4


def test_model_or_dim_mismatch_loads_as_none(tmp_path):
    matrix = VectorMatrix(tmp_path)
    keys = [key(0)]
    matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=1)
    assert matrix.load("e1", "another-model", DIM) is None
    assert matrix.load("e1", MODEL, DIM * 2) is None
    assert matrix.load("e2", MODEL, DIM) is None


def test_append_under_another_model_is_refused(tmp_path):
    matrix = VectorMatrix(tmp_path)
    keys = [key(0)]
    matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=1)
    with pytest.raises(EmbedModelMismatchError):
        matrix.append("e1", "another-model", DIM, keys, rows_for(keys), max_seq=2)


def test_data_shorter_than_header_is_damage(tmp_path):
    matrix = VectorMatrix(tmp_path)
    keys = [key(i) for i in range(3)]
    matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=3)
    header = matrix.header("e1")
    assert header is not None
    with open(matrix.vectors_path(header), "r+b") as f:
        f.truncate(DIM * 4)
    assert matrix.load("e1", MODEL, DIM) is None
    with pytest.raises(StorageError):
        matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=4)


def test_unreadable_header_loads_as_none(tmp_path):
    matrix = VectorMatrix(tmp_path)
    matrix.append("e1", MODEL, DIM, [key(0)], rows_for([key(0)]), max_seq=1)
    matrix.header_path("e1").write_text("{not json")
    assert matrix.load("e1", MODEL, DIM) is None


def test_reset_empties_the_epoch_and_drops_the_others(tmp_path):
    matrix = VectorMatrix(tmp_path)
    keys = [key(i) for i in range(3)]
    matrix.append("old", MODEL, DIM, keys, rows_for(keys), max_seq=3)
    matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=3)
    before = matrix.load("e1", MODEL, DIM)  # a reader holding the old mapping
    matrix.reset("e1", "other-model", 4)
    loaded = matrix.load("e1", "other-model", 4)
    assert loaded is not None
    assert (loaded.rows, loaded.max_seq) == (0, 0)
    assert loaded.vectors.shape == (0, 4)
    assert matrix.load("old", MODEL, DIM) is None
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [".lock", "e1.1.f32", "e1.1.keys", "e1.json"]
    # The reader that mapped the previous generation still sees its rows intact.
    assert before is not None
    np.testing.assert_array_equal(before.vectors, rows_for(keys))


def test_expect_max_seq_makes_catch_up_idempotent(tmp_path):
    matrix = VectorMatrix(tmp_path)
    keys = [key(i) for i in range(2)]
    assert matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=2, expect_max_seq=0)
    # A second process that also saw max_seq 0 must not append the same rows again.
    assert not matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=2, expect_max_seq=0)
    loaded = matrix.load("e1", MODEL, DIM)
    assert loaded is not None
    assert loaded.rows == 2


def test_empty_append_only_moves_max_seq(tmp_path):
    matrix = VectorMatrix(tmp_path)
    matrix.append("e1", MODEL, DIM, [], rows_for([]), max_seq=7)
    loaded = matrix.load("e1", MODEL, DIM)
    assert loaded is not None
    assert (loaded.rows, loaded.max_seq) == (0, 7)


@pytest.mark.parametrize(
    ("keys", "vectors"),
    [
        (["abc"], np.zeros((1, DIM))),  # not a sha256 hex
        (["z" * 64], np.zeros((1, DIM))),
        ([key(0)], np.zeros((1, DIM + 1))),  # wrong dim
        ([key(0), key(1)], np.zeros((1, DIM))),  # count mismatch
    ],
)
def test_bad_input_is_rejected(tmp_path, keys, vectors):
    with pytest.raises(ValueError):
        VectorMatrix(tmp_path).append("e1", MODEL, DIM, keys, vectors, max_seq=1)


@pytest.mark.parametrize("epoch", ["", "a/b", "../x", "with.dot", "x" * 129])
def test_epoch_names_are_safe_file_stems(tmp_path, epoch):
    with pytest.raises(ValueError):
        VectorMatrix(tmp_path).load(epoch, MODEL, DIM)


def test_stale_compaction_threshold():
    header = MatrixHeader("e1", 0, MODEL, DIM, rows=100, max_seq=100)
    loaded = LoadedMatrix(header, np.zeros((100, DIM), np.float32), np.zeros(100, "S64"))
    assert not loaded.stale_compaction_needed(100)
    assert not loaded.stale_compaction_needed(75)  # exactly 25% stale
    assert loaded.stale_compaction_needed(74)
    assert loaded.stale_compaction_needed(0)
    empty = LoadedMatrix(
        MatrixHeader("e1", 0, MODEL, DIM, rows=0, max_seq=0),
        np.zeros((0, DIM), np.float32),
        np.zeros(0, "S64"),
    )
    assert not empty.stale_compaction_needed(0)


def _writer(directory: str, tag: str, batches: int, size: int) -> None:
    matrix = VectorMatrix(directory)
    for b in range(batches):
        keys = [key(b * size + i, tag) for i in range(size)]
        matrix.append("e1", MODEL, DIM, keys, rows_for(keys), max_seq=b)


def test_concurrent_appends_from_two_processes(tmp_path):
    context = multiprocessing.get_context("spawn")
    batches, size = 40, 25
    workers = [
        context.Process(target=_writer, args=(str(tmp_path), tag, batches, size))
        for tag in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    loaded = VectorMatrix(tmp_path).load("e1", MODEL, DIM)
    assert loaded is not None
    assert loaded.rows == 2 * batches * size
    keys = [loaded.key(i) for i in range(loaded.rows)]
    assert len(set(keys)) == loaded.rows
    np.testing.assert_array_equal(loaded.vectors, rows_for(keys))  # every row beside its key
    # Batches land whole: each run of `size` rows comes from one writer.
    tags = {key(i, t): t for t in ("a", "b") for i in range(batches * size)}
    for start in range(0, loaded.rows, size):
        assert len({tags[k] for k in keys[start : start + size]}) == 1
    header = json.loads((tmp_path / "e1.json").read_text())
    assert header["rows"] == loaded.rows
