"""No door words a refusal in pydantic's terms: JSONL ops (apply, the MCP batch), MCP inputs,
the Python write, the CLI's error envelope. memhtml.contracts.plain is the one translation."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from memhtml.cli.main import run
from memhtml.contracts.op_models import OP_ADAPTER, ArchiveOp, CorrectOp, LinkOp, WriteOp
from memhtml.contracts.plain import field_name, leaks, problem, problems, sentence
from memhtml.mcp.tools import TOOLS, call_tool

OP_MODELS: dict[str, type[BaseModel]] = {
    "write": WriteOp,
    "correct": CorrectOp,
    "archive": ArchiveOp,
    "link": LinkOp,
}
# A well-formed op of each kind, to spoil one field at a time.
GOOD: dict[str, dict[str, Any]] = {
    "write": {"op": "write", "title": "T", "type": "semantic", "claim": "A fact."},
    "correct": {"op": "correct", "target_path": "areas/a.html", "claim": "A fact."},
    "archive": {"op": "archive", "path": "areas/a.html"},
    "link": {"op": "link", "src": "areas/a.html", "rel": "supports", "dst": "areas/b.html"},
}
# A value no op field takes: every op field is text, a number, a flag or a list of text.
WRONG: Any = {"nested": {"object": 1}}


def _bad_ops() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for kind, model in OP_MODELS.items():
        for name in model.model_fields:
            if name == "op":
                continue
            out.append((kind, name, {**GOOD[kind], name: WRONG}))
        out.append((kind, "unknown field", {**GOOD[kind], "colour": "blue"}))
        required = [n for n, f in model.model_fields.items() if f.is_required() and n != "op"]
        for name in required:
            out.append(
                (kind, f"missing {name}", {k: v for k, v in GOOD[kind].items() if k != name})
            )
    out.append(("?", "unknown op", {"op": "zap"}))
    out.append(("?", "not an object", [1, 2]))  # type: ignore[arg-type]
    return out


BAD_OPS = _bad_ops()


def test_every_op_field_is_spoiled_once() -> None:
    spoiled = {(k, n) for k, n, _ in BAD_OPS}
    for kind, model in OP_MODELS.items():
        assert {(kind, n) for n in model.model_fields if n != "op"} <= spoiled


@pytest.mark.parametrize(("kind", "what", "op"), BAD_OPS, ids=[f"{k}-{w}" for k, w, _ in BAD_OPS])
def test_apply_refuses_every_bad_op_field_in_plain_words(
    kind: str, what: str, op: Any, repo: Path, tmp_path: Path
) -> None:
    ops = tmp_path / "ops.jsonl"
    ops.write_text(json.dumps(op) + "\n")
    out = io.StringIO()
    code = run(["apply", str(ops), "--repo", str(repo)], stdout=out)
    payload = json.loads(out.getvalue())
    assert code == 2 and payload["code"] == "ERR_INVALID_OP", payload
    assert not leaks(payload["error"]), payload["error"]
    field = what.removeprefix("missing ")
    if kind != "?" and what != "unknown field":
        assert field in payload["error"], "the message names the field"
    if what == "unknown field":
        assert "colour" in payload["error"]


def test_a_bad_op_reads_as_a_sentence(repo: Path, tmp_path: Path) -> None:
    ops = tmp_path / "ops.jsonl"
    ops.write_text(
        '{"op":"write","title":"T","type":"semantic","claim":"A fact.","importance":"high"}\n'
    )
    out = io.StringIO()
    run(["apply", str(ops), "--repo", str(repo)], stdout=out)
    error = json.loads(out.getvalue())["error"]
    assert error == (
        "line 1 (op index 0): importance must be a whole number (got text); nothing was run"
    )


@pytest.mark.parametrize(("kind", "what", "op"), BAD_OPS, ids=[f"{k}-{w}" for k, w, _ in BAD_OPS])
def test_the_mcp_batch_refuses_every_bad_op_field_in_plain_words(
    kind: str, what: str, op: Any
) -> None:
    env = call_tool(_never, "memory_write_batch", {"ops": [op]})
    assert env["ok"] is False, env
    assert not leaks(env["error"]), env["error"]
    assert not leaks(json.dumps(env.get("details"))), env["details"]


def _never() -> Any:
    raise AssertionError("the corpus was opened for an input that must be refused first")


def _wrong_for(model: type[BaseModel], name: str) -> Any:
    """A value the field cannot take (an object, or for a field that takes objects, a number)."""
    probe = {name: WRONG}
    try:
        model.model_validate(probe)
    except ValidationError as exc:
        if any(e["loc"][:1] == (name,) for e in exc.errors()):
            return WRONG
    return 12345


def _bad_inputs() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for tool in TOOLS:
        model = tool.model
        for name in model.model_fields:
            out.append((tool.name, name, {name: _wrong_for(model, name)}))
        out.append((tool.name, "unknown field", {"colour": "blue"}))
    return out


BAD_INPUTS = _bad_inputs()


@pytest.mark.parametrize(
    ("tool", "field", "arguments"), BAD_INPUTS, ids=[f"{t}-{f}" for t, f, _ in BAD_INPUTS]
)
def test_every_mcp_input_field_is_refused_in_plain_words(
    tool: str, field: str, arguments: dict[str, Any]
) -> None:
    env = call_tool(_never, tool, arguments)
    assert env["ok"] is False, env
    assert not leaks(env["error"]), env["error"]
    for p in env["details"]["errors"]:
        assert not leaks(p["problem"]), p
    if field != "unknown field":
        assert any(
            p["field"].split("[")[0].split(".")[0] == field for p in env["details"]["errors"]
        )


def test_mcp_names_list_items_as_a_caller_spells_them() -> None:
    env = call_tool(_never, "memory_reinforce", {"paths": ["areas/a.html", 7], "signal": "x"})
    fields = [p["field"] for p in env["details"]["errors"]]
    assert "paths[1]" in fields
    assert "paths[1] must be text (got a number)" in env["error"]


def test_the_python_write_refuses_in_plain_words(corpus: Any) -> None:
    from memhtml.contracts.errors import InvalidMemoryError

    with pytest.raises(InvalidMemoryError) as exc:
        corpus.write(title="T", type="semantic", claim="A fact.", importance="high")
    assert not leaks(exc.value.message), exc.value.message
    assert "importance" in exc.value.message


# -- the translation itself (pure) -------------------------------------------------------


def test_field_names_drop_tags_and_index_lists() -> None:
    assert field_name(("write", "tag", 0)) == "tag[0]"
    assert field_name(("ops", 2, "title"), drop=()) == "ops[2].title"
    assert field_name(("paths", "function-after[_path_ok(), str]", 1), drop=()) == "paths[1]"
    assert field_name(()) == ""


def test_a_validator_message_keeps_its_words() -> None:
    err = {
        "type": "value_error",
        "loc": ("type",),
        "msg": "Value error, no such type",
        "ctx": {"error": ValueError("no such type 'x'")},
    }
    assert problem(err) == "no such type 'x'"
    assert sentence([err]) == "type: no such type 'x'"


def test_type_errors_never_echo_the_value() -> None:
    secret = "sk-live-0123456789abcdefghijklmnop"
    err = {"type": "int_parsing", "loc": ("importance",), "msg": "x", "input": secret}
    assert secret not in sentence([err])
    assert sentence([err]) == "importance must be a whole number (got text)"


def test_sentences_stop_at_the_limit_and_count_the_rest() -> None:
    errs = [{"type": "missing", "loc": (f"f{i}",), "msg": "Field required"} for i in range(5)]
    assert sentence(errs, limit=2) == "f0 is required; f1 is required; and 3 more problems"
    assert [p["kind"] for p in problems(errs)] == ["missing"] * 5


# Any JSON a caller could send, as every field of every op kind.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    kind=st.sampled_from(sorted(GOOD)),
    spoil=st.dictionaries(
        st.sampled_from(
            [
                "title",
                "type",
                "claim",
                "body",
                "tag",
                "entity",
                "importance",
                "confidence",
                "path",
                "src",
                "rel",
                "strict_path",
                "target_path",
                "reason",
                "extra",
            ]
        ),
        JSON,
        min_size=1,
        max_size=3,
    ),
)
def test_no_refusal_of_any_op_leaks_pydantic_wording(kind: str, spoil: dict[str, Any]) -> None:
    try:
        OP_ADAPTER.validate_python({**GOOD[kind], **spoil})
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        assert not leaks(sentence(errors, limit=len(errors))), errors
