"""A deterministic, scriptable model for tests: no network, every call recorded.

A script says what the model answers; each answer is a mapping or JSON text
(validated against the requested schema, so a test can script a
schema-violating answer), a pydantic instance, or an exception instance to
raise (``ModelUnavailableError(..., details={"retryable": True})`` for a
transient failure). The script is one of:

* a callable ``(FakeCall) -> answer``;
* a list (or tuple) of answers, consumed one per call (running out is a
  contract violation, so a test notices an unexpected extra call);
* a mapping from tool name to a callable, a list of answers, or one answer
  given to every call of that tool;
* one answer (not a mapping), given to every call.

With no script (``MEMHTML_LLM=fake`` from the command line) the model answers
the schema's defaults, and refuses a schema whose fields have none.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import LlmContractViolationError
from memhtml.llm.base import validate_answer

if TYPE_CHECKING:
    from pydantic import BaseModel

MODEL_ID = "memhtml-fake-llm-v1"


@dataclass(frozen=True)
class FakeCall:
    """One call the fake received."""

    prompt: str
    system: str
    schema: type[BaseModel]
    tool_name: str
    tool_description: str


Responder = Callable[[FakeCall], Any]


class _Queue:
    def __init__(self, answers: Sequence[Any]) -> None:
        self.answers = deque(answers)

    def __call__(self, call: FakeCall) -> Any:
        if not self.answers:
            raise LlmContractViolationError(
                f"the fake model's script has no answer left for {call.tool_name!r}",
                details={"model": MODEL_ID, "tool_name": call.tool_name},
            )
        return self.answers.popleft()


def _answers(script: Any) -> Responder:
    """A callable as it is; a list or tuple consumed in order; anything else, every time."""
    if callable(script):
        return script
    if isinstance(script, list | tuple):
        return _Queue(script)
    return lambda _call: script


def _responder(script: Any) -> Responder:
    if isinstance(script, Mapping):
        by_tool = {name: _answers(s) for name, s in script.items()}

        def by_name(call: FakeCall) -> Any:
            responder = by_tool.get(call.tool_name)
            if responder is None:
                raise LlmContractViolationError(
                    f"the fake model has no script for tool {call.tool_name!r}",
                    details={"model": MODEL_ID, "tool_name": call.tool_name},
                )
            return responder(call)

        return by_name
    return _answers(script)


def _defaults(call: FakeCall) -> Any:
    return {}


class FakeModel:
    """Answers from its script; ``calls`` holds every call in order."""

    def __init__(self, script: Any = None, *, model_id: str = MODEL_ID) -> None:
        self.model_id = model_id
        self.calls: list[FakeCall] = []
        self._respond: Responder = _defaults if script is None else _responder(script)

    def generate(
        self,
        prompt: str,
        *,
        system: str,
        schema: type[BaseModel],
        tool_name: str,
        tool_description: str,
    ) -> BaseModel:
        """The scripted answer, validated against ``schema`` (a scripted exception is raised)."""
        call = FakeCall(prompt, system, schema, tool_name, tool_description)
        self.calls.append(call)
        answer = self._respond(call)
        if isinstance(answer, BaseException):
            raise answer
        return validate_answer(schema, answer, model_id=self.model_id)
