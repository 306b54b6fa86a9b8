"""Backends from entry points: found by name, listed without import, refused when broken.

Each test installs distributions into a temporary site directory (a dist-info
written by hand, tests/plugins/distinfo.py) and puts it on `sys.path`; nothing
is installed into the test environment. Module names are unique per test,
since an imported module stays in `sys.modules`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memhtml.contracts.errors import InvalidFlagError, ModelUnavailableError
from memhtml.embed import registry as embedders
from memhtml.embed.fake import FakeEmbedder
from memhtml.llm import registry as models
from memhtml.llm.fake import FakeModel
from memhtml.seams import Plugin
from memhtml.surface.manifest import agents_markdown, manifest
from tests.plugins.distinfo import install

HASHBAG_SOURCE = Path(__file__).parent / "hashbag" / "memhtml_hashbag" / "__init__.py"
EMBEDDERS = "memhtml.embedders"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    embedders.clear_cache()
    models.clear_cache()
    yield folder
    embedders.clear_cache()
    models.clear_cache()


def _module(name: str, body: str) -> dict[str, str]:
    return {f"{name}.py": body}


def test_listing_reads_names_and_imports_no_plugin(site: Path) -> None:
    install(
        site,
        "memhtml-boom",
        {EMBEDDERS: {"Boom": "boom_listing:Embedder"}},
        _module("boom_listing", "raise RuntimeError('imported!')\n"),
        version="2.3",
    )
    assert embedders.plugins() == [Plugin("boom", "boom_listing:Embedder", "memhtml-boom", "2.3")]
    assert "boom" in embedders.available()
    listed = manifest()["backends"]["embedders"]
    assert listed["plugins"] == [
        {
            "name": "boom",
            "entry_point": "boom_listing:Embedder",
            "distribution": "memhtml-boom",
            "version": "2.3",
        }
    ]
    assert listed["entry_point_group"] == EMBEDDERS and listed["variable"] == "MEMHTML_EMBED"
    assert "boom" not in agents_markdown()  # AGENTS.md does not depend on what is installed
    assert "boom_listing" not in sys.modules


def test_a_plugin_serves_by_name_once_per_process(site: Path) -> None:
    install(
        site,
        "memhtml-hashbag",
        {EMBEDDERS: {"hashbag": "hashbag_inproc:HashBagEmbedder"}},
        {"hashbag_inproc.py": HASHBAG_SOURCE.read_text(encoding="utf-8")},
    )
    embedder = embedders.get_embedder(" HashBag ")
    assert embedder is not None and embedder.model_id == "example/hashbag-256"
    assert embedders.get_embedder("hashbag") is embedder
    rows = embedder.embed_documents(["one writer", "many readers"])
    assert rows.shape == (2, 256)


def test_the_environment_variable_finds_a_plugin(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(
        site,
        "memhtml-hashbag",
        {EMBEDDERS: {"hashbag": "hashbag_env:HashBagEmbedder"}},
        {"hashbag_env.py": HASHBAG_SOURCE.read_text(encoding="utf-8")},
    )
    monkeypatch.setenv("MEMHTML_EMBED", "hashbag")
    embedder = embedders.get_embedder()
    assert embedder is not None and type(embedder).__name__ == "HashBagEmbedder"


def test_a_model_plugin_is_found_in_its_own_group(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(
        site, "memhtml-scripted", {"memhtml.models": {"scripted": "memhtml.llm.fake:FakeModel"}}
    )
    monkeypatch.setenv("MEMHTML_LLM", "scripted")
    assert isinstance(models.get_model(), FakeModel)
    assert "scripted" in models.available() and "scripted" not in embedders.available()
    assert [p["name"] for p in manifest()["backends"]["models"]["plugins"]] == ["scripted"]


def test_a_built_in_name_cannot_be_taken_by_a_plugin(site: Path) -> None:
    install(
        site,
        "memhtml-impostor",
        {EMBEDDERS: {"fake": "impostor_mod:Embedder"}},
        _module("impostor_mod", "raise RuntimeError('must not load')\n"),
    )
    assert isinstance(embedders.get_embedder("fake"), FakeEmbedder)
    assert "impostor_mod" not in sys.modules


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("raise RuntimeError('the plugin is broken')\n", "cannot be imported: RuntimeError"),
        ("import a_module_nobody_installed\n", "cannot be imported: ModuleNotFoundError"),
        ("def Embedder(:\n", "cannot be imported: SyntaxError"),
        ("OTHER = 1\n", "cannot be imported: AttributeError"),
        (
            "def Embedder():\n    raise ValueError('no config')\n",
            "failed while building: ValueError: no config",
        ),
        (
            "class Embedder:\n    model_id = 'x'\n    batch_size = 1\n"
            "    def embed_documents(self, texts): return []\n",
            "which is not an embedder (it lacks embed_query)",
        ),
    ],
    ids=["raises", "missing-dependency", "syntax", "no-attribute", "build-fails", "not-one"],
)
def test_a_broken_plugin_is_a_typed_refusal_naming_it(
    site: Path, body: str, why: str, request: pytest.FixtureRequest
) -> None:
    module = "broken_" + request.node.callspec.id.replace("-", "_")
    install(
        site, "memhtml-broken", {EMBEDDERS: {"broken": f"{module}:Embedder"}}, _module(module, body)
    )
    for _ in range(2):  # a failure is not cached: the next call tries again
        with pytest.raises(ModelUnavailableError) as info:
            embedders.get_embedder("broken")
    err = info.value
    assert err.code == "ERR_MODEL_UNAVAILABLE"
    assert err.message.startswith(
        f"the embedder plugin 'broken' ({module}:Embedder, from memhtml-broken 1.0) "
    )
    assert why in err.message
    assert err.details == {
        "embedder": "broken",
        "plugin": "broken",
        "entry_point": f"{module}:Embedder",
        "distribution": "memhtml-broken",
        "version": "1.0",
        "group": EMBEDDERS,
    }
    assert (
        err.suggestions[-1]
        == "set MEMHTML_EMBED to a built-in embedder: bedrock, fake, local, openai"
    )


def test_a_plugins_own_typed_refusal_passes_through(site: Path) -> None:
    body = (
        "from memhtml.contracts.errors import ModelUnavailableError\n"
        "def Embedder():\n    raise ModelUnavailableError('weights not downloaded yet')\n"
    )
    install(
        site,
        "memhtml-own",
        {EMBEDDERS: {"own": "own_refusal:Embedder"}},
        _module("own_refusal", body),
    )
    with pytest.raises(ModelUnavailableError, match=r"^weights not downloaded yet$"):
        embedders.get_embedder("own")


def test_two_distributions_declaring_one_name_are_refused(site: Path) -> None:
    for dist in ("memhtml-twin-a", "memhtml-twin-b"):
        install(site, dist, {EMBEDDERS: {"twin": "twin_mod:Embedder"}})
    with pytest.raises(ModelUnavailableError) as info:
        embedders.get_embedder("twin")
    assert "memhtml-twin-a" in info.value.message and "memhtml-twin-b" in info.value.message
    assert info.value.suggestions[0] == "uninstall all but one of: memhtml-twin-a, memhtml-twin-b"


def test_an_unknown_name_lists_plugins_and_says_how_to_add_one(site: Path) -> None:
    install(site, "memhtml-hashbag", {EMBEDDERS: {"hashbag": "unused:Embedder"}})
    with pytest.raises(InvalidFlagError) as info:
        embedders.get_embedder("word2vec")
    assert info.value.details["available"] == [
        "bedrock",
        "fake",
        "hashbag",
        "local",
        "openai",
        "off",
    ]
    assert any("'memhtml.embedders' entry points" in s for s in info.value.suggestions)


def test_a_built_in_name_reads_no_package_metadata() -> None:
    """`importlib.metadata` stays off a built-in backend's path (docs/benchmarks.md)."""
    code = (
        "import sys; from memhtml.embed import get_embedder; from memhtml.llm import get_model;"
        "get_embedder('fake'); get_embedder('off'); get_model('fake');"
        "print('importlib.metadata' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_cli_reports_a_broken_plugin_and_keeps_the_write(repo: Path, tmp_path: Path) -> None:
    site = tmp_path / "cli-site"
    install(
        site,
        "memhtml-boom",
        {EMBEDDERS: {"boom": "boom_cli:Embedder"}},
        _module("boom_cli", "raise RuntimeError('the plugin is broken')\n"),
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "MEMHTML_ROOT": str(repo),
        "MEMHTML_EMBED": "boom",
    }

    def cli(*argv: str) -> tuple[int, dict]:
        done = subprocess.run(
            [sys.executable, "-m", "memhtml.cli", *argv, "--dense"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        return done.returncode, json.loads(done.stdout)

    code, written = cli("write", "--title", "Plugins", "--type", "semantic", "--claim", "A claim.")
    assert code == 0 and written["data"]["created"]
    assert "the embedder plugin 'boom'" in written["data"]["vectors"]["error"]
    code, hits = cli("search", "claim")
    assert code == 0 and hits["data"]["degraded"] is True
    assert [h["path"] for h in hits["data"]["hits"]] == [written["data"]["path"]]
    code, refused = cli("index", "embed")
    assert code == 1 and refused["code"] == "ERR_MODEL_UNAVAILABLE"
    assert refused["details"]["distribution"] == "memhtml-boom"


def test_the_documented_example_is_the_tested_plugin() -> None:
    """docs/plugins.md quotes the example's entry point; it must be the one the tests install."""
    import re
    import tomllib

    docs = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```toml\n(.*?)```", docs, flags=re.S)
    quoted = tomllib.loads(block)["project"]
    shipped = tomllib.loads((HASHBAG_SOURCE.parents[1] / "pyproject.toml").read_text("utf-8"))
    assert quoted["entry-points"] == shipped["project"]["entry-points"]
    assert quoted["entry-points"] == {
        "memhtml.embedders": {"hashbag": "memhtml_hashbag:HashBagEmbedder"}
    }
    assert (quoted["name"], quoted["version"]) == (
        shipped["project"]["name"],
        shipped["project"]["version"],
    )
    for group in (embedders.GROUP, models.GROUP):
        assert f"`{group}`" in docs
