"""Open copies of wire models: how the typed client derives its models from the wire model.

A client model is a thin subclass of the wire class it reads, over :class:`OpenCopy`::

    class Session(wire.sessions.Session, OpenCopy):
        \"\"\"A session (the same object as a chat).\"\"\"

It inherits every field (name, type, required-ness, default, description) of the wire
class and differs only in ``model_config``: an open copy keeps every key it does not
declare (``extra="allow"``), so a field the server adds later survives as an attribute and
in ``model_dump()``. Fields that hold other wire shapes are retargeted to their open
copies when the copy is made (:class:`OpenCopyMeta`): ``Turn.session`` of a client
``Turn`` is a client ``Session``, not the server's class. A copy is made after the copies
of the shapes it nests (define the inner ones first); a field the subclass declares itself
is left as written (client-only additions, which ``tests/test_wire_model.py`` lists).
"""

from __future__ import annotations

import copy
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict
from pydantic._internal._model_construction import ModelMetaclass

#: wire class → its open copy, filled as the copies are defined.
_COPIES: dict[type[BaseModel], type[BaseModel]] = {}


def open_copy_of(wire_class: type[BaseModel]) -> type[BaseModel] | None:
    """The open copy made of ``wire_class`` (None: none yet)."""
    return _COPIES.get(wire_class)


def wire_class_of(copy_class: type[BaseModel]) -> type[BaseModel] | None:
    """The wire class ``copy_class`` is an open copy of (None: not a copy)."""
    return next((base for base in copy_class.__bases__ if _is_wire(base)), None)


def _is_wire(base: type) -> bool:
    return (isinstance(base, type) and issubclass(base, BaseModel) and base is not BaseModel
            and not isinstance(base, OpenCopyMeta))


def retarget(annotation: Any) -> Any:
    """``annotation`` with every wire class that has an open copy replaced by that copy
    (through ``X | None``, ``list[X]``, ``dict[K, X]`` and ``Annotated[X, …]``); the very
    same object when nothing changes."""
    if isinstance(annotation, type):
        return _COPIES.get(annotation, annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is None or not args or origin is Literal:
        return annotation
    if origin is Annotated:
        inner = retarget(args[0])
        return annotation if inner is args[0] else Annotated[(inner, *annotation.__metadata__)]
    new = tuple(retarget(arg) for arg in args)
    if all(a is b for a, b in zip(new, args)):
        return annotation
    if origin in (Union, types.UnionType):
        return Union[new]  # noqa: UP007 (a union of a tuple of types)
    return origin[new]


class OpenCopyMeta(ModelMetaclass):
    """The metaclass of open copies: when a class has a wire class among its bases, each
    inherited field whose type names a wire class with an open copy is re-declared with
    that copy (same default, description and constraints), and the new class is recorded
    as the wire class's copy."""

    def __new__(mcs, cls_name: str, bases: tuple[type, ...], namespace: dict[str, Any],
                **kwargs: Any) -> type:
        """Make the class (see the class docstring)."""
        own = set(namespace.get("__annotations__", {}))
        wire = [base for base in bases if _is_wire(base)]
        if wire and "model_config" not in namespace:  # open whatever the order of the bases
            namespace["model_config"] = ConfigDict(extra="allow", populate_by_name=True)
        for base in wire:
            for name, info in base.model_fields.items():
                if name in own or name in namespace:
                    continue
                annotation = retarget(info.annotation)
                if annotation is not info.annotation:
                    namespace.setdefault("__annotations__", {})[name] = annotation
                    namespace[name] = copy.copy(info)
        cls = super().__new__(mcs, cls_name, bases, namespace, **kwargs)
        for base in wire:
            _COPIES.setdefault(base, cls)
        return cls


class OpenCopy(BaseModel, metaclass=OpenCopyMeta):
    """The base of open copies (and of the client's other models): unknown keys are kept,
    fields may also be given by name when they have an alias."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


__all__ = ["OpenCopy", "OpenCopyMeta", "open_copy_of", "retarget", "wire_class_of"]
