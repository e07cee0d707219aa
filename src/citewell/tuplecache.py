"""What is computed from the store's shared tuple of one search generation, kept as long
as that tuple is in use.

The store hands the ready resources of a workspace as one shared, read-only tuple per
search generation (:meth:`~citewell.store.base.Store.ranking_resources`): the same object
until a write (ingest, delete, rename …) makes a new one. A :class:`TupleCache` keeps what
a function makes of such a tuple, keyed by the tuple's identity (and holding the tuple, so
that the identity is not reused while the entry lives): it is made once per generation,
not once per question. Anything but a tuple (a list can change) is computed afresh.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class TupleCache(Generic[V]):
    """``make(items)`` for the last ``size`` tuples it was asked about (least recently used
    go first); thread-safe."""

    def __init__(self, make: Callable[[Sequence[Any]], V], size: int = 8) -> None:
        self.make = make
        self.size = size
        self._items: OrderedDict[int, tuple[tuple[Any, ...], V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, items: Sequence[Any]) -> V:
        """``make(items)``: kept for a tuple, made afresh for any other sequence."""
        if not isinstance(items, tuple):
            return self.make(items)
        key = id(items)
        with self._lock:
            held = self._items.get(key)
            if held is not None and held[0] is items:
                self._items.move_to_end(key)
                return held[1]
        value = self.make(items)
        with self._lock:
            self._items[key] = (items, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


__all__ = ["TupleCache"]
