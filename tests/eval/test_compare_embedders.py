"""`eval compare-embedders`: two embedders side by side, one of them over real HTTP."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from bench.embed_standin import StandIn
from memhtml.contracts.errors import InvalidFlagError
from memhtml.embed import registry
from memhtml.eval.benchmarks import SAMPLES_DIR
from memhtml.eval.embedders import compare_embedders, comparison_table


@pytest.fixture(autouse=True)
def _no_shared_data(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    # A checkout beside ../shared/data would read the real benchmarks: these tests are about
    # the bundled samples, wherever the checkout lies.
    monkeypatch.setenv("MEMHTML_BENCH_DATA", str(tmp_path_factory.mktemp("no-benchmark-data")))


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    with StandIn() as server:
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        registry.clear_cache()
        yield server
        registry.clear_cache()


def test_the_stand_in_ranks_exactly_like_the_fake_it_wraps(standin, tmp_path):
    out = compare_embedders("fake", "openai", size=60, workdir=str(tmp_path))
    fake, remote = out["embedders"]
    assert (fake["space"], remote["space"]) == ("memhtml-fake-v1@384", "openai:stand-in-embed@384")
    # Same vectors through HTTP: every retrieval figure agrees, only the speeds differ.
    assert fake["gate"]["mrr"] == remote["gate"]["mrr"] and fake["gate"]["passed"] is True
    assert fake["gate"]["by_kind"] == remote["gate"]["by_kind"]

    def recall(column):
        return {k: {**v, "search_ms": None} for k, v in column["benchmarks"].items()}

    assert recall(fake) == recall(remote)
    assert set(fake["benchmarks"]) == {"locomo", "beam"}
    for column in (fake, remote):
        assert column["docs_per_s"] > 0 and column["query_ms"]["p50"] is not None
        for bench in column["benchmarks"].values():
            assert 0.0 <= bench["recall@10"] <= 1.0 and bench["questions"] > 0
    assert standin.documents > 0
    assert [b["source"] for b in out["benchmarks"]] == ["bundled sample (a smoke check)"] * 2
    table = comparison_table(out)
    assert "gate MRR" in table and "openai:stand-in-embed@384" in table


def test_a_worse_model_shows_in_the_table(standin, tmp_path):
    standin.fault = "regress"  # rows of noise: the vector arm stops telling facts apart
    out = compare_embedders("fake", "openai", workdir=str(tmp_path))
    fake, remote = out["embedders"]
    assert remote["gate"]["mrr"] < fake["gate"]["mrr"]
    assert remote["gate"]["passed"] is False and fake["gate"]["passed"] is True


def test_real_benchmark_data_is_read_from_a_folder(tmp_path, standin):
    data = tmp_path / "data"
    (data / "locomo").mkdir(parents=True)
    shutil.copy(SAMPLES_DIR / "locomo_sample.json", data / "locomo" / "locomo10.json")
    out = compare_embedders(
        "fake", "openai", data=str(data), size=60, conversations=1, workdir=str(tmp_path)
    )
    [bench] = out["benchmarks"]
    assert bench["name"] == "locomo" and "locomo10.json, 1 conversation(s)" in bench["source"]
    assert out["embedders"][0]["benchmarks"]["locomo"]["conversations"] == 1


def test_refusals(tmp_path):
    with pytest.raises(InvalidFlagError):
        compare_embedders("fake", " FAKE ")
    with pytest.raises(InvalidFlagError) as info:
        compare_embedders("fake", "local", data=str(tmp_path))
    assert "locomo/locomo10.json" in info.value.message
