"""The model's answers of a night, kept so a refusing merge can rebuild the night exactly.

`sleep merge RUN --refuse ID` rebuilds the night without the refused decisions
(memhtml.sleep.rebuild). The deterministic phases are a pure function of the tree, the
date and the state plane; a model phase is not, so while a night runs every answer
that validates is appended to `.git/memhtml-sleep/<run-id>/answers.jsonl` under the
digest of the question (tool, system text, prompt, after redaction), and the rebuild
asks a `Replay` instead of the model: the same question gets the same answer, and a
question the night never asked (its members changed because a refused decision did
not happen) is refused, so that batch makes no decision and what it made is left out
and reported. No model is called at merge, and no call budget is spent.

The answers stay in the run's scratch folder, outside every tree, and go with it after
the merge (the prompts were redacted before they were asked; the answers quote only
what the prompts held).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import ModelUnavailableError
from memhtml.llm.base import validate_answer

if TYPE_CHECKING:
    from pydantic import BaseModel

    from memhtml.llm.base import Model

ANSWERS: Final = "answers.jsonl"


def question_key(prompt: str, system: str, tool_name: str) -> str:
    """The digest a question is kept under."""
    raw = "\x00".join((tool_name, system, prompt)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


class Recorder:
    """A model that answers through `inner` and keeps every answer that validates."""

    def __init__(self, inner: Model, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.model_id = str(getattr(inner, "model_id", type(inner).__name__))
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # what else the inner model offers (a fake's calls)

    def generate(
        self,
        prompt: str,
        *,
        system: str,
        schema: type[BaseModel],
        tool_name: str,
        tool_description: str,
    ) -> BaseModel:
        """The inner model's answer (validated here, so only a usable one is kept)."""
        raw = self.inner.generate(
            prompt,
            system=system,
            schema=schema,
            tool_name=tool_name,
            tool_description=tool_description,
        )
        value = validate_answer(schema, raw, model_id=self.model_id)
        line = json.dumps(
            {
                "key": question_key(prompt, system, tool_name),
                "answer": value.model_dump(mode="json"),
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
                out.flush()
                os.fsync(out.fileno())
        return value


class Replay:
    """A model that answers only the questions a night asked, with the night's answers."""

    def __init__(self, path: Path, model_id: str = "replay") -> None:
        self.model_id = f"replay of {model_id}"
        self.answers: dict[str, Any] = {}
        self.asked = 0
        self.missing = 0
        if path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    raw = json.loads(line)
                except ValueError:
                    continue  # a torn last line of a killed night
                if isinstance(raw, dict) and isinstance(raw.get("key"), str):
                    self.answers[raw["key"]] = raw.get("answer")

    def generate(
        self,
        prompt: str,
        *,
        system: str,
        schema: type[BaseModel],
        tool_name: str,
        tool_description: str,
    ) -> Any:
        """The night's answer to this very question; refused when the night never asked it."""
        self.asked += 1
        key = question_key(prompt, system, tool_name)
        if key not in self.answers:
            self.missing += 1
            raise ModelUnavailableError(
                "the reviewed night never asked this question (its members changed)",
                details={"retryable": False},
            )
        return self.answers[key]


def answers_path(folder: Path) -> Path:
    """Where a run keeps its answers."""
    return folder / ANSWERS


@contextmanager
def recording(caller: Any, folder: Path) -> Iterator[None]:
    """While a night runs, its `ModelCaller` keeps every answer in `folder`; the caller's
    own model is put back afterwards (a caller handed in by a test is returned as it came)."""
    if caller is None or isinstance(caller.model, Recorder):
        yield
        return
    inner = caller.model
    caller.model = Recorder(inner, answers_path(folder))
    try:
        yield
    finally:
        caller.model = inner
