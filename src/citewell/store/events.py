"""The client events of streamed answers (schema v6), kept so a client that reconnects
with ``Last-Event-ID`` gets the rest without a gap or a duplicate, also after the answer
finished."""

from __future__ import annotations

from typing import Protocol, Sequence

from ..errors import StoreError
from .sqlbase import SQLBase


class EventStore(Protocol):
    """The client events of streamed answers, by ``(workspace, message, seq)`` (the events
    concern of :class:`~citewell.store.base.Store`): what a client reconnecting with
    ``Last-Event-ID`` reads again. An event is ``(seq, event name, JSON data)``; a ``seq``
    is recorded once (:class:`~citewell.errors.StoreError` otherwise)."""

    def append_events(self, workspace_id: str, message_id: str, events: Sequence[tuple[int, str, str]]) -> None:
        """Record client events ``(seq, event name, JSON data)`` of a streamed message in one
        transaction; recording a ``seq`` twice is a :class:`~citewell.errors.StoreError`
        (nothing of the call is recorded)."""
        ...

    def events(self, workspace_id: str, message_id: str, *, after: int = 0) -> list[tuple[int, str, str]]:
        """The recorded events ``(seq, name, data)`` of a message with ``seq > after``, in order."""
        ...


class Events(SQLBase):
    """Stream events by ``(workspace, message, seq)``."""

    # -- stream events -----------------------------------------------------------------
    def append_events(self, workspace_id: str, message_id: str, events: Sequence[tuple[int, str, str]]) -> None:
        """Record client events ``(seq, event name, JSON data)`` of a streamed message (one
        transaction; a ``seq`` recorded already is a :class:`StoreError` and records none)."""
        if not events:
            return
        try:
            with self._write() as conn:
                conn.executemany("INSERT INTO stream_events VALUES (?, ?, ?, ?, ?)",
                                 [(workspace_id, message_id, seq, name, data) for seq, name, data in events])
        except self._DB_ERRORS as exc:
            raise StoreError(f"cannot record the events of message {message_id}: {exc}") from exc

    def events(self, workspace_id: str, message_id: str, *, after: int = 0) -> list[tuple[int, str, str]]:
        """The recorded events of a message with ``seq > after``, in order."""
        rows = self._conn().execute("SELECT seq, event, data FROM stream_events WHERE workspace_id = ? AND "
                                    "message_id = ? AND seq > ? ORDER BY seq", (workspace_id, message_id, after))
        return [(row["seq"], row["event"], row["data"]) for row in rows]
