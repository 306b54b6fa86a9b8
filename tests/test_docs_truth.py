"""The docs say what ships (issue 32, item 8): truth is derived from the code.

- Every `MEMHTML_*` variable the package reads (a string constant that is a
  whole variable name, in any module) is in the manifest's environment list,
  and every listed one is read somewhere; the seams' value lists name every
  registered backend.
- The manifest names exactly the tools and resources the MCP server serves, and
  every "N tools" the README, AGENTS.md and docs/mcp.md state is that number;
  docs/mcp.md's table has one row per served tool.

A variable or tool added elsewhere needs only its manifest entry (and the
counts the docs state) for these to pass again.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memhtml.surface.manifest import agents_markdown, manifest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "memhtml"
_VAR = re.compile(r"MEMHTML_[A-Z0-9_]*[A-Z0-9]")
_TOOL_COUNT = re.compile(r"\b(\d+) (?:MCP )?tools\b")


def _variables_read() -> dict[str, list[str]]:
    """Each MEMHTML_* name spelled whole in a string constant, with the modules spelling it."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            is_str = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_str and _VAR.fullmatch(node.value):
                found.setdefault(node.value, []).append(str(path.relative_to(ROOT)))
            if isinstance(node, ast.JoinedStr):  # a name built at run time would escape
                for part in node.values:
                    if isinstance(part, ast.Constant) and str(part.value).endswith("MEMHTML_"):
                        pytest.fail(f"{path}: a MEMHTML_ name built in an f-string")
    return found


def test_every_variable_the_code_reads_is_in_the_manifest() -> None:
    read = _variables_read()
    listed = manifest()["environment"]
    assert {"MEMHTML_ROOT", "MEMHTML_LLM", "MEMHTML_LLM_MODEL"} <= set(read)  # the scan works
    missing = {name: where for name, where in read.items() if name not in listed}
    assert not missing, f"read but not in surface/table.py ENVIRONMENT: {missing}"
    stale = sorted(set(listed) - set(read))
    assert not stale, f"listed in ENVIRONMENT but read nowhere: {stale}"
    agents = (ROOT / "AGENTS.md").read_text(encoding="utf-8")
    for name in listed:
        assert f"`{name}`" in agents, name


def test_the_seam_variables_name_every_backend() -> None:
    from memhtml.embed import registry as embedders
    from memhtml.llm import registry as models

    env = manifest()["environment"]
    for variable, names in (
        ("MEMHTML_LLM", [*models.available(), "off"]),
        ("MEMHTML_EMBED", [*embedders.available(), "off"]),
    ):
        described = set(re.findall(r"[a-z]+", env[variable]))
        assert set(names) <= described, (variable, sorted(set(names) - described))


def test_the_manifest_names_what_the_mcp_server_serves() -> None:
    from memhtml.mcp.resources import FIXED, TEMPLATES
    from memhtml.mcp.server import _tool_list

    served = [t.name for t in _tool_list()]
    mcp = manifest()["mcp"]
    assert mcp["tools"] == served
    assert mcp["resource_templates"] == [r.uri for r in TEMPLATES]
    assert mcp["resources"] == [r.uri for r in FIXED]
    serve = next(c for c in manifest()["commands"] if c["name"] == "serve mcp")
    assert f"{len(served)} tools: {', '.join(served)}." in serve["details"]


@pytest.mark.parametrize("doc", ["README.md", "AGENTS.md", "docs/mcp.md"])
def test_every_tool_count_the_docs_state_is_the_served_count(doc: str) -> None:
    from memhtml.mcp.tools import TOOLS

    text = (ROOT / doc).read_text(encoding="utf-8")
    counts = [int(n) for n in _TOOL_COUNT.findall(text)]
    assert counts, f"{doc} states no tool count"
    assert set(counts) == {len(TOOLS)}, f"{doc} says {counts} tools; the server serves {len(TOOLS)}"


def test_the_mcp_page_has_one_row_per_served_tool() -> None:
    from memhtml.mcp.tools import TOOLS

    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z_]+)`", text, flags=re.M)
    assert sorted(rows) == sorted(t.name for t in TOOLS)


def test_agents_md_is_generated_with_the_mcp_section() -> None:
    text = agents_markdown()
    assert "## MCP" in text and "`memory_correct`" in text.split("## MCP", 1)[1]
