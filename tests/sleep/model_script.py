"""Scripting the fake model for the model phases: read the framed blocks, answer by content."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from memhtml.llm import CallBudget, ModelCaller
from memhtml.llm.fake import FakeCall, FakeModel

_BLOCK = re.compile(r"<([a-z][a-z0-9]*)_([a-z]*[0-9]+)>\n(.*?)\n</\1_\2>", re.DOTALL)


def blocks(prompt: str, label: str) -> dict[str, str]:
    """key -> text of the `<label>_<key>` blocks a prompt frames as data."""
    return {key: text for lab, key, text in _BLOCK.findall(prompt) if lab == label}


def caller(script: Any, max_calls: int | None = None) -> ModelCaller:
    """A caller over the fake model, no backoff between retries."""
    return ModelCaller(FakeModel(script), CallBudget(max_calls), backoff_s=0)


def keyed(
    label: str, answer: Callable[[str, str], dict[str, Any] | None], field: str
) -> Callable[[FakeCall], dict[str, Any]]:
    """A responder answering `answer(key, text)` for each block (None: no entry)."""

    def respond(call: FakeCall) -> dict[str, Any]:
        entries = []
        for key, text in blocks(call.prompt, label).items():
            got = answer(key, text)
            if got is not None:
                entries.append(got)
        return {field: entries}

    return respond
