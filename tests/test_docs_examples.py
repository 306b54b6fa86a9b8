"""The Python examples in docs/api.md run, in order, against a fresh repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_api_examples_run(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {"root": tmp_path / "memory"}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)
