"""Field drift between two models of one wire shape: names, required-ness and types.

``tests/test_wire_model.py`` pairs every wire shape with its client copy and, where one
applies, its canonical model, and asserts :func:`field_drift` finds nothing. Types are
compared by their shape (:func:`type_shape`): a nested model counts as the wire class it
is (or copies), so a client ``Turn.session`` (a client ``Session``) matches the server's
``TurnData.session``; ``Annotated`` metadata (strictness, JSON Schema overrides,
discriminators) is left out.
"""

from __future__ import annotations

import types
from collections.abc import Hashable, Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

_WIRE = "citewell.wire."


def shape_name(model: type[BaseModel]) -> str:
    """The wire class ``model`` is or derives from (``citewell.wire.chats.MentionOut`` for a
    client ``Mention``), else ``model``'s own dotted name."""
    for cls in model.__mro__:
        if cls.__module__.startswith(_WIRE):
            return f"{cls.__module__}.{cls.__qualname__}"
    return f"{model.__module__}.{model.__qualname__}"


def type_shape(annotation: Any) -> Hashable:
    """A comparable form of a field's type: models by :func:`shape_name`, unions as sets,
    ``Literal`` as the set of its values, ``Annotated`` as its bare type."""
    if annotation is None or annotation is type(None):
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return ("model", shape_name(annotation))
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_shape(args[0])
    if origin in (Union, types.UnionType):
        members = frozenset(type_shape(arg) for arg in args)
        return next(iter(members)) if len(members) == 1 else ("union", members)
    if origin is Literal:
        return ("literal", frozenset(args))
    if origin is not None:
        return (origin, tuple(type_shape(arg) for arg in args))
    return annotation  # type: ignore[no-any-return]


def field_drift(expected: type[BaseModel], actual: type[BaseModel], *, ignore: Iterable[str] = (),
                compare_types: bool = True) -> list[str]:
    """How the fields of ``actual`` differ from those of ``expected``: one line per field
    that only one of them has, that only one requires, or (``compare_types``) whose type
    shape differs. Fields named in ``ignore`` are skipped. Empty: they agree."""
    skip = set(ignore)
    left = {k: v for k, v in expected.model_fields.items() if k not in skip}
    right = {k: v for k, v in actual.model_fields.items() if k not in skip}
    a, b = expected.__name__, actual.__name__
    found = [f"{name}: only in {a}" for name in left if name not in right]
    found += [f"{name}: only in {b}" for name in right if name not in left]
    for name in left.keys() & right.keys():
        if left[name].is_required() != right[name].is_required():
            which = a if left[name].is_required() else b
            found.append(f"{name}: required only in {which}")
        if compare_types:
            want, got = type_shape(left[name].annotation), type_shape(right[name].annotation)
            if want != got:
                found.append(f"{name}: type {want!r} in {a}, {got!r} in {b}")
    return sorted(found)


__all__ = ["field_drift", "shape_name", "type_shape"]
