"""The OpenAI-compatible backend end to end against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memhtml.contracts.errors import InvalidFlagError, ModelUnavailableError
from memhtml.llm import Answer, CallBudget, ModelCaller, Refused
from memhtml.llm.openai import OpenAIModel
from tests.llm.schemas import BAD, GOOD, Verdict

TOOL = "emit_verdict"
MODEL = "qwen3:8b"
ASK: dict[str, Any] = {
    "system": "You judge pairs.",
    "schema": Verdict,
    "tool_name": TOOL,
    "tool_description": "Emit the verdict.",
}


def content_reply(payload: Any) -> dict[str, Any]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }


def tool_reply(payload: Any) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": TOOL, "arguments": payload}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


@dataclass
class Script:
    """What the server answers, one entry per request: (status, body, delay_s)."""

    replies: list[tuple[int, Any, float]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            script.requests.append({"path": self.path, **body})
            script.headers.append(dict(self.headers))
            status, reply, delay = script.replies.pop(0)
            if delay:
                time.sleep(delay)
            raw = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except OSError:
                pass  # the client gave up (the timeout test)

        def log_message(self, *_: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def model_for(base_url: str, **kw: Any) -> OpenAIModel:
    return OpenAIModel(MODEL, base_url=base_url, **kw)


def test_a_valid_answer_end_to_end(server):
    url, script = server
    script.replies.append((200, content_reply(GOOD), 0))
    out = model_for(url, api_key="sk-local").generate("judge m1, m2", **ASK)
    assert isinstance(out, Verdict) and out.relation == "contradicts"
    [req] = script.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["model"] == MODEL
    assert req["messages"] == [
        {"role": "system", "content": "You judge pairs."},
        {"role": "user", "content": "judge m1, m2"},
    ]
    fmt = req["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == TOOL and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == Verdict.model_json_schema()
    assert "tools" not in req
    assert script.headers[0]["Authorization"] == "Bearer sk-local"


def test_tool_mode_forces_the_function_and_reads_its_arguments(server):
    url, script = server
    script.replies.append((200, tool_reply(json.dumps(GOOD)), 0))
    out = model_for(url, mode="tool").generate("p", **ASK)
    assert isinstance(out, Verdict)
    [req] = script.requests
    assert req["tools"][0]["function"]["parameters"] == Verdict.model_json_schema()
    assert req["tool_choice"] == {"type": "function", "function": {"name": TOOL}}
    assert "response_format" not in req
    assert "Authorization" not in script.headers[0]


def test_either_answer_shape_is_accepted(server):
    url, script = server
    script.replies += [
        (200, tool_reply(GOOD), 0),
        (200, content_reply(f"```json\n{json.dumps(GOOD)}\n```"), 0),
    ]
    model = model_for(url)
    assert model.generate("p", **ASK).keys == ["m1", "m2"]
    assert model.generate("p", **ASK).keys == ["m1", "m2"]


def test_a_schema_violating_answer_is_retried_then_refused(server):
    url, script = server
    script.replies += [(200, content_reply(BAD), 0)] * 3
    caller = ModelCaller(model_for(url), backoff_s=0)
    out = caller.call("p", **ASK)
    assert isinstance(out, Refused) and out.code == "ERR_LLM_CONTRACT"
    assert out.attempts == 3 and len(script.requests) == 3
    assert out.details["errors"][0]["loc"] == "confidence"


def test_prose_instead_of_json_is_retried_then_answered(server):
    url, script = server
    script.replies += [
        (200, content_reply("Sure! They contradict."), 0),
        (200, content_reply(GOOD), 0),
    ]
    out = ModelCaller(model_for(url), backoff_s=0).call("p", **ASK)
    assert isinstance(out, Answer) and out.attempts == 2


def test_http_500_is_retried_and_then_refused_as_unavailable(server):
    url, script = server
    script.replies += [(500, {"error": "boom"}, 0)] * 3
    budget = CallBudget(10)
    out = ModelCaller(model_for(url), budget, backoff_s=0).call("p", **ASK)
    assert isinstance(out, Refused) and out.code == "ERR_MODEL_UNAVAILABLE"
    assert out.details["http_status"] == 500 and out.attempts == 3 and budget.used == 3


def test_http_404_is_not_retried(server):
    url, script = server
    script.replies += [(404, {"error": "model not found"}, 0), (200, content_reply(GOOD), 0)]
    out = ModelCaller(model_for(url), backoff_s=0).call("p", **ASK)
    assert isinstance(out, Refused) and out.attempts == 1
    assert "model not found" in out.reason


def test_a_reply_with_no_choices_is_unavailable(server):
    url, script = server
    script.replies.append((200, {"error": {"message": "overloaded"}}, 0))
    with pytest.raises(ModelUnavailableError):
        model_for(url).generate("p", **ASK)


def test_a_timeout_is_model_unavailable(server):
    url, script = server
    script.replies.append((200, content_reply(GOOD), 1.0))
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError) as info:
        model_for(url, timeout_s=0.2).generate("p", **ASK)
    assert time.monotonic() - started < 0.9
    assert info.value.code == "ERR_MODEL_UNAVAILABLE"
    assert info.value.details["retryable"] is True and info.value.details["timeout_s"] == 0.2


def test_an_unreachable_port_is_model_unavailable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    caller = ModelCaller(model_for(f"http://127.0.0.1:{port}/v1", timeout_s=1), backoff_s=0)
    out = caller.call("p", **ASK)
    assert isinstance(out, Refused) and out.code == "ERR_MODEL_UNAVAILABLE"
    assert out.attempts == 3 and "unreachable" in out.reason


def test_configuration_from_the_environment():
    model = OpenAIModel.from_environment(
        {
            "MEMHTML_LLM_MODEL": "llama3.1",
            "MEMHTML_LLM_BASE_URL": "http://127.0.0.1:8080/v1",
            "MEMHTML_LLM_API_KEY": "k",
            "MEMHTML_LLM_TIMEOUT": "5",
            "MEMHTML_LLM_OPENAI_MODE": "tool",
        }
    )
    assert (model.model_id, model.base_url, model.api_key, model.timeout_s, model.mode) == (
        "llama3.1",
        "http://127.0.0.1:8080/v1",
        "k",
        5.0,
        "tool",
    )
    default = OpenAIModel.from_environment({"MEMHTML_LLM_MODEL": "m"})
    assert (default.base_url, default.timeout_s, default.mode) == (
        "http://127.0.0.1:11434/v1",
        60.0,
        "json_schema",
    )
    with pytest.raises(ModelUnavailableError):
        OpenAIModel.from_environment({})
    with pytest.raises(InvalidFlagError):
        OpenAIModel.from_environment({"MEMHTML_LLM_MODEL": "m", "MEMHTML_LLM_OPENAI_MODE": "x"})


def test_a_sleep_phase_end_to_end_over_http(server, repo):
    """task-detection through the OpenAI-compatible backend: real HTTP, the phase's real
    JSON schema sent, the answer checked against the file before the task is written."""
    import memhtml
    from memhtml.llm import CallBudget, ModelCaller
    from tests.sleep.phase_harness import WRITTEN, doc_of, run_phase

    fixed = memhtml.open(repo, embedder="fake", now=WRITTEN)

    url, script = server
    promise = "Alice will rotate the staging keys by Friday."
    fixed.write(title="Key rotation", claim=promise)
    finding = {"member_key": "m1", "sentence": promise, "kind": "commitment", "confidence": 0.9}
    script.replies.append((200, content_reply({"findings": [finding]}), 0))
    caller = ModelCaller(model_for(url), CallBudget(5), backoff_s=0)
    ran = run_phase(fixed, "task-detection", llm=caller)
    assert ran.outcome.counts["tasks_minted"] == 1 and ran.commit_sha is not None
    [req] = script.requests
    schema = req["response_format"]["json_schema"]
    assert schema["name"] == "task_detection"
    assert "findings" in schema["schema"]["properties"]
    assert "<memory_m1>" in req["messages"][1]["content"]
    (task,) = [p for p in ran.changed if "/tasks/det-" in p]
    assert promise in doc_of(fixed, task).body_text
    fixed.close()
