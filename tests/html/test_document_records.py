"""The format's records behave exactly as the frozen dataclasses they replaced.

`memhtml.html.document` writes its records' methods out (a dataclass generates
them with `exec` at import, a cold-start cost). Each record is checked here
against a frozen dataclass with the same fields and defaults: constructor,
equality (including against other types), hash, repr, immutability, pickling
and copying, and the fresh `metas` dict per instance.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from memhtml.html.document import (
    Citation,
    Facet,
    HeadItem,
    Issue,
    Link,
    MemoryDocument,
    NewMemory,
)

RECORDS = [Issue, Link, Facet, Citation, HeadItem, MemoryDocument, NewMemory]
_FACTORY_FIELDS = {"metas"}


def reference(cls: type) -> type:
    """A frozen dataclass with `cls`'s name, fields and defaults (the old definition)."""
    specs: list[Any] = []
    for name, param in inspect.signature(cls).parameters.items():
        if name in _FACTORY_FIELDS:
            specs.append((name, Any, dataclasses.field(default_factory=dict)))
        elif param.default is inspect.Parameter.empty:
            specs.append((name, Any))
        else:
            specs.append((name, Any, dataclasses.field(default=param.default)))
    ref = dataclasses.make_dataclass(cls.__name__, specs, frozen=True)
    ref.__qualname__ = cls.__qualname__
    return ref


def sample_values(cls: type, seed: int) -> dict[str, Any]:
    """Distinct, hashable-where-possible values for every field of `cls`."""
    values: dict[str, Any] = {}
    for i, name in enumerate(inspect.signature(cls).parameters):
        if name in _FACTORY_FIELDS:
            values[name] = {f"k{seed}": f"v{i}"}
        elif name in {"numeric"}:
            values[name] = float(seed + i)
        elif name in {"include_content_hash"}:
            values[name] = bool(seed % 2)
        elif name in {"entities", "tags", "links", "violations", "body"}:
            values[name] = (f"{name}-{seed}",)
        else:
            values[name] = f"{name}-{seed}-{i}"
    return values


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_signature_fields_and_defaults_match_the_dataclass(cls: type) -> None:
    ref = reference(cls)
    ours = inspect.signature(cls).parameters
    theirs = inspect.signature(ref).parameters
    assert list(ours) == list(theirs) == list(cls._fields)  # type: ignore[attr-defined]
    for name in ours:
        assert ours[name].kind == theirs[name].kind
        if name not in _FACTORY_FIELDS:
            assert ours[name].default == theirs[name].default
    assert cls.__match_args__ == ref.__match_args__  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_equality_hash_repr_match_the_dataclass(cls: type) -> None:
    ref = reference(cls)
    a, b = sample_values(cls, 1), sample_values(cls, 2)
    ours_a, ours_a2, ours_b = cls(**a), cls(**dict(a)), cls(**b)
    ref_a, ref_b = ref(**a), ref(**b)
    assert repr(ours_a) == repr(ref_a)
    assert vars(ours_a) == vars(ref_a)
    assert list(vars(ours_a)) == list(vars(ref_a))
    assert (ours_a == ours_a2) is (ref_a == ref(**dict(a))) is True
    assert (ours_a == ours_b) is (ref_a == ref_b) is False
    assert (ours_a != ours_b) is True
    assert ours_a != ref_a  # another class never compares equal, as with dataclasses
    assert ours_a.__eq__(("x",)) is NotImplemented
    if "metas" in a:
        with pytest.raises(TypeError, match="unhashable"):
            hash(ours_a)
        with pytest.raises(TypeError, match="unhashable"):
            hash(ref_a)
    else:
        assert hash(ours_a) == hash(ref_a) == hash(ours_a2)
        assert len({ours_a, ours_a2, ours_b}) == 2


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_assignment_and_deletion_are_refused_like_a_frozen_dataclass(cls: type) -> None:
    record = cls(**sample_values(cls, 3))
    first = cls._fields[0]  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{first}'"):
        setattr(record, first, "x")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'other'"):
        record.other = 1  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot delete field '{first}'"):
        delattr(record, first)
    assert getattr(record, first) == sample_values(cls, 3)[first]


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_pickle_copy_and_replace_round_trip(cls: type) -> None:
    record = cls(**sample_values(cls, 4))
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(record, protocol))
        assert back == record and type(back) is cls
    assert copy.copy(record) == record
    assert copy.deepcopy(record) == record
    first = cls._fields[0]  # type: ignore[attr-defined]
    changed = record.replace(**{first: "changed"})
    assert getattr(changed, first) == "changed" and changed != record
    assert getattr(record, first) != "changed"
    with pytest.raises(TypeError):
        record.replace(no_such_field=1)


def test_defaults_and_fresh_metas() -> None:
    one, two = MemoryDocument(), MemoryDocument()
    assert one.metas == {} and one.metas is not two.metas
    assert one == two and one.ok
    assert one.title == "" and one.violations == () and one.memory_type is None
    new = NewMemory("t", "semantic", "2024-01-01", "2024-01-01")
    assert new.metas == {} and new.metas is not NewMemory("t", "s", "c", "u").metas
    assert new.status == "active" and new.include_content_hash is True
    assert Facet("n", "v") == Facet("n", "v", None) and Citation("t").url is None
    match Link("caused_by", "/areas/x.html", "areas/x.html"):
        case Link(rel, href, path):
            assert (rel, href, path) == ("caused_by", "/areas/x.html", "areas/x.html")
        case _:
            pytest.fail("Link did not match positionally")
