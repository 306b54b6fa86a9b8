"""The ops' fast path agrees with the pydantic models on every input, and skips pydantic."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from memhtml.contracts import op_models, op_spec, ops
from memhtml.contracts.op_spec import OpField
from memhtml.contracts.ops import ArchiveOp, CorrectOp, LinkOp, WriteOp, parse_op

OP_CLASSES: list[type[ops._Op]] = [WriteOp, CorrectOp, ArchiveOp, LinkOp]

KEYS = sorted(
    {
        *(
            alias
            for cls in (WriteOp, CorrectOp, ArchiveOp, LinkOp)
            for field in cls.SPEC.fields
            for alias in field.aliases
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


# -- one declaration: the models and the fast path are both op_spec's ----------------------
@pytest.mark.parametrize("cls", OP_CLASSES, ids=lambda c: c.__name__)
def test_the_models_are_built_from_the_spec(cls: type[ops._Op]) -> None:
    spec = cls.SPEC
    assert spec in op_spec.OPS
    assert (spec.op, spec.name) == (cls.OP, cls.__name__)
    model = op_models.MODELS[spec.op]
    assert model is getattr(op_models, spec.name)
    assert model.__name__ == spec.name  # the title of its errors
    assert model.model_config == op_models._CONFIG
    assert list(model.model_fields) == [f.name for f in spec.fields]
    for f in spec.fields:
        info = model.model_fields[f.name]
        if f.also:
            assert info.validation_alias == op_models.AliasChoices(*f.aliases)
        else:
            assert info.validation_alias is None
        assert info.is_required() == f.required
        if not f.required:
            assert info.get_default(call_default_factory=True) == f.default
        alone = op_spec.OpSpec("One", spec.op, (f,))
        assert repr(info) == repr(op_models.model_from_spec(alone).model_fields[f.name])


def test_the_union_is_the_specs_in_order() -> None:
    assert (
        [s.op for s in op_spec.OPS]
        == list(op_models.MODELS)
        == ["write", "correct", "archive", "link"]
    )
    with pytest.raises(ValidationError) as info:
        op_models.OP_ADAPTER.validate_python({"op": "zap"})
    assert "'write', 'correct', 'archive', 'link'" in info.value.errors()[0]["msg"]


@pytest.mark.parametrize("cls", OP_CLASSES, ids=lambda c: c.__name__)
def test_the_fast_path_is_built_from_the_spec(cls: type[ops._Op]) -> None:
    assert list(cls.FIELDS) == [f.name for f in cls.SPEC.fields]
    for f in cls.SPEC.fields:
        aliases, validate, default = cls.FIELDS[f.name]
        assert aliases == f.aliases
        assert default is f.default
        if f.kind != "op":
            assert validate is ops._FAST[f.kind]


# The typed attributes of each op class are for mypy; they must say what the spec says.
_HINTS = {
    "op": "str",
    "str": "str",
    "opt_str": "str | None",
    "title": "str",
    "type": "str",
    "opt_type": "str | None",
    "list": "list[str]",
    "opt_list": "list[str] | None",
    "bool": "bool",
    "importance": "int | None",
    "confidence": "float | None",
}


@pytest.mark.parametrize("cls", OP_CLASSES, ids=lambda c: c.__name__)
def test_the_typed_attributes_are_the_specs(cls: type[ops._Op]) -> None:
    hints = {k: v for k, v in cls.__annotations__.items() if not v.startswith("ClassVar")}
    expected = {}
    for f in cls.SPEC.fields:
        hint = _HINTS[f.kind]
        expected[f.name] = hint if f.default is not None or "None" in hint else f"{hint} | None"
    assert hints == expected


def test_every_kind_has_both_validators() -> None:
    assert set(_HINTS) == op_spec.KINDS == {"op", *ops._FAST} == {"op", *op_models._TYPES}


def test_a_spec_of_another_name_is_refused() -> None:
    with pytest.raises(TypeError, match="declares the spec of ArchiveOp"):

        class MoveOp(ops._Op):
            SPEC = op_spec.ARCHIVE


def test_a_changed_spec_changes_the_model() -> None:
    """Change entries of a copy of a spec: the model derived from it follows."""
    fields = list(op_spec.ARCHIVE.fields)
    assert [f.name for f in fields] == ["op", "path", "reason"]
    base = op_models.model_from_spec(op_spec.ARCHIVE)
    with pytest.raises(ValidationError):
        base(op="archive", memory_path="areas/a.html")
    fields[1] = OpField("path", "str", also=("memory_path",))
    fields[2] = OpField("reason", "title", "why not")
    fields.append(OpField("importance", "importance", None))
    changed = op_models.model_from_spec(op_spec.ARCHIVE._replace(fields=tuple(fields)))
    op = changed(op="archive", memory_path="areas/a.html")
    assert (op.path, op.reason, op.importance) == ("areas/a.html", "why not", None)
    with pytest.raises(ValidationError) as info:
        changed(op="archive", path="p", reason="", importance=11)
    assert info.value.title == "ArchiveOp"
    assert [e["loc"] for e in info.value.errors()] == [("reason",), ("importance",)]
    fewer = op_models.model_from_spec(op_spec.ARCHIVE._replace(fields=tuple(fields[:2])))
    with pytest.raises(ValidationError):
        fewer(op="archive", path="p", reason="r")
