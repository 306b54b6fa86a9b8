"""The ops' fast path agrees with the pydantic models on every input, and skips pydantic."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from memhtml.contracts import op_models
from memhtml.contracts.ops import ArchiveOp, CorrectOp, LinkOp, WriteOp, parse_op

KEYS = sorted(
    {
        *(
            alias
            for cls in (WriteOp, CorrectOp, ArchiveOp, LinkOp)
            for spec in cls.FIELDS.values()
            for alias in spec[0]
        ),
        "bogus",
    }
)
VALUES: list[Any] = [
    None,
    "",
    "x",
    "semantic",
    "arc",
    "task",
    "nonsense-type",
    "areas/inbox/a.html",
    "write",
    "correct",
    "archive",
    "link",
    "supersedes",
    "é ü",
    "\ud800",
    "t" * 300,
    "t" * 301,
    0,
    1,
    5,
    10,
    11,
    -1,
    True,
    False,
    0.0,
    0.5,
    1.0,
    1.5,
    float("nan"),
    "5",
    b"bytes",
    [],
    ["a", "b"],
    ["a", 1],
    ("a",),
    {"a": 1},
]


def _reference(raw: dict[str, Any]) -> tuple[str, Any]:
    data = raw if "op" in raw else {**raw, "op": "write"}
    try:
        model = op_models.OP_ADAPTER.validate_python(data)
    except ValidationError as exc:
        return "error", exc.errors(include_url=False)
    return type(model).__name__, {name: getattr(model, name) for name in type(model).model_fields}


def _ours(raw: dict[str, Any]) -> tuple[str, Any]:
    try:
        op = parse_op(raw)
    except ValidationError as exc:
        return "error", exc.errors(include_url=False)
    return type(op).__name__, dict(op.__dict__)


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    # repr: NaN never equals itself, and a refused NaN appears in an error's input.
    return a[0] == b[0] and repr(a[1]) == repr(b[1])


op_dicts = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=8)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(["write", "correct", "archive", "link", None]),
    raw=op_dicts,
)
def test_parse_op_equals_the_pydantic_union(op: str | None, raw: dict[str, Any]) -> None:
    if op is not None:
        raw = {**raw, "op": op}
    assert _same(_ours(raw), _reference(raw))


VALID: list[dict[str, Any]] = [
    {"title": "T", "type": "semantic", "claim": "C."},
    {
        "op": "write",
        "title": "T",
        "memory_type": "task",
        "body": "one. two.",
        "tags": "x",
        "entities": ["service:a"],
        "importance": 3,
        "confidence": 1,
        "strict_path": True,
        "path": "areas/inbox/t.html",
        "event_at": "2024-01-02",
    },
    {"op": "correct", "path": "areas/a.html", "body": None, "type": None, "claim": "x"},
    {"op": "correct", "target_path": "areas/a.html", "body": "b", "memory_type": "verdict"},
    {"op": "archive", "path": "areas/a.html", "reason": "old"},
    {"op": "link", "src_path": "areas/a.html", "rel": "supports", "dst": "areas/b.html"},
    {"title": "T", "type": "semantic", "body": None, "tag": None, "entity": None},
]


@pytest.mark.parametrize("raw", VALID)
def test_valid_ops_take_the_fast_path_with_the_models_values(raw: dict[str, Any]) -> None:
    ours = _ours(raw)
    assert ours[0] != "error"
    assert _same(ours, _reference(raw))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(VALID),
    changes=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
    dropped=st.sets(st.sampled_from(KEYS), max_size=1),
)
def test_near_valid_ops_agree(
    base: dict[str, Any], changes: dict[str, Any], dropped: set[str]
) -> None:
    """Valid ops with a field or two changed or dropped: where the fast path matters."""
    raw = {k: v for k, v in {**base, **changes}.items() if k not in dropped}
    assert _same(_ours(raw), _reference(raw))


@settings(max_examples=300, deadline=None)
@given(raw=op_dicts)
def test_constructing_a_write_op_equals_the_model(raw: dict[str, Any]) -> None:
    try:
        ours: tuple[str, Any] = ("ok", dict(WriteOp(**raw).__dict__))
    except ValidationError as exc:
        ours = ("error", exc.errors(include_url=False))
    try:
        model = op_models.WriteOp(**raw)
        ref: tuple[str, Any] = (
            "ok",
            {n: getattr(model, n) for n in op_models.WriteOp.model_fields},
        )
    except ValidationError as exc:
        ref = ("error", exc.errors(include_url=False))
    assert _same(ours, ref)


def test_ops_compare_by_value_and_keep_the_models_error_title() -> None:
    a = ArchiveOp(op="archive", path="areas/a.html", reason=None)
    assert a == ArchiveOp(op="archive", path="areas/a.html")
    assert a != ArchiveOp(op="archive", path="areas/b.html")
    assert repr(LinkOp(op="link", src="a", rel="r", dst="b")) == (
        "LinkOp(op='link', src='a', rel='r', dst='b')"
    )
    with pytest.raises(ValidationError) as info:
        WriteOp(title="", type="semantic")
    assert info.value.title == "WriteOp"
    assert info.value.errors()[0]["loc"] == ("title",)


def test_a_valid_write_does_not_import_pydantic() -> None:
    code = (
        "import sys; from memhtml.ops.batch import validate_op;"
        "validate_op({'op': 'write', 'title': 'T', 'type': 'semantic', 'claim': 'C.',"
        " 'tag': ['a'], 'importance': 2});"
        "from memhtml.contracts.ops import WriteOp; WriteOp(title='T', type='semantic');"
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
