"""Stored messages read back through rule 10, and the resolver that reads link targets
from a store.

The store keeps message rows as they were written (:meth:`Store.message_rows`); this
module gives the canonical :class:`~citewell.models.Message` of each row
(:func:`citewell.cite.history.read_message`): a current row as stored, a legacy row (raw
links, NULL ``format_version``) converted by the cite stage against the workspace's
sources (:class:`StoreResolver`) and, with ``persist`` (the default), written back once
(:meth:`Store.save_conversion`), so later reads are byte-identical even after the
workspace changes. A read-only store still reads: the conversion is deterministic.
"""

from __future__ import annotations

import threading

from ..cite.history import is_current, read_message
from ..cite.resolver import SourceResolver
from ..errors import NotFoundError, StoreError
from ..models import Message, Passage
from ..store.base import Store


class StoreResolver:
    """Resolves link targets against one workspace of a store (the cite stage's resolver)."""

    def __init__(self, store: Store, workspace_id: str) -> None:
        self.store = store
        self.workspace_id = workspace_id

    def chunk(self, chunk_id: str) -> Passage | None:
        """The passage of a chunk of this workspace, or None."""
        return self.store.chunks(self.workspace_id, [chunk_id]).get(chunk_id)

    def post(self, source: str, id: str, *, dataset_id: str | None = None) -> Passage | None:  # noqa: A002
        """The chunk of post (source, id) as a passage, or None: the copy of posts file
        ``dataset_id``, or without it the copy of the most recently added ready posts file
        holding it (:meth:`Store.mentions`)."""
        return self.store.post_passage(self.workspace_id, source, id, dataset_id=dataset_id)

    #: research_preview ids being checked on this thread (a legacy message read while
    #: checking may link to itself or back: such a check answers True, it exists)
    _checking = threading.local()

    def entity_exists(self, type: str, id: str) -> bool:  # noqa: A002
        """True when an entity of ``type`` with ``id`` exists in this workspace.

        ``resource`` is any resource, ``dataset`` a posts resource, ``chat`` a chat (of
        any user of the workspace), ``research_preview`` an assistant message (the
        pointer to a turn, pending or not), ``pattern`` a pattern a tracking agent found.
        """
        if type == "chat":
            try:
                self.store.chat(self.workspace_id, id)
            except NotFoundError:
                return False
            return True
        if type == "research_preview":
            return self._assistant_message_exists(id)
        if type == "pattern":
            try:
                self.store.tracking().pattern(self.workspace_id, id)
            except NotFoundError:
                return False
            return True
        if type not in ("resource", "dataset"):
            return False
        try:
            resource = self.store.resource(self.workspace_id, id)
        except Exception:
            return False
        return type == "resource" or resource.kind == "post"

    def _assistant_message_exists(self, message_id: str) -> bool:
        checking: set[str] = self._checking.__dict__.setdefault("ids", set())
        if message_id in checking:
            return True
        checking.add(message_id)
        try:
            return stored_message(self.store, self.workspace_id, message_id, resolver=self).role == "assistant"
        except NotFoundError:
            return False
        finally:
            checking.discard(message_id)


def _read(store: Store, workspace_id: str, row: dict, resolver: SourceResolver | None, persist: bool) -> Message:
    """A row through rule 10; a legacy row converted (and written back once when
    ``persist``; if another process converted it first, its version wins)."""
    if is_current(row):
        return read_message(row)
    message = read_message(row, resolver or StoreResolver(store, workspace_id))
    message = Message.model_validate_json(message.model_dump_json())  # exactly what later reads return
    if not persist:
        return message
    try:
        current = store.save_conversion(workspace_id, row["id"], message)
    except StoreError:  # a read-only store still reads: the conversion is deterministic
        return message
    if current is not None and is_current(current):
        return read_message(current)
    return message


def stored_message(store: Store, workspace_id: str, message_id: str, *, resolver: SourceResolver | None = None,
                   user_id: str | None = None, persist: bool = True) -> Message:
    """One message of the workspace (in a chat of that user, when ``user_id``) through
    rule 10. ``resolver`` resolves link targets when a legacy row is converted (default: a
    :class:`StoreResolver` over ``store`` and the workspace); ``persist``: write such a
    conversion back. ``NotFoundError`` for an unknown id or one of another workspace (or
    of another user's chat)."""
    row = store.message_row(workspace_id, message_id, user_id=user_id)
    return _read(store, workspace_id, row, resolver, persist)


def stored_messages(store: Store, workspace_id: str, chat_id: str, *, limit: int | None = None,
                    after: str | None = None, resolver: SourceResolver | None = None, user_id: str | None = None,
                    persist: bool = True) -> list[Message]:
    """Messages of a chat, oldest first (storage order), through rule 10 (see
    :func:`stored_message`); at most ``limit``; only those stored after message ``after``.
    ``NotFoundError`` for an unknown chat or ``after``; ``UsageError`` for a negative limit."""
    rows = store.message_rows(workspace_id, chat_id, limit=limit, after=after, user_id=user_id)
    return [_read(store, workspace_id, row, resolver, persist) for row in rows]


__all__ = ["StoreResolver", "stored_message", "stored_messages"]
