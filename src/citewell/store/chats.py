"""Chats and messages (schema v4).

A message row keeps the whole canonical message as JSON (``payload``) with its
``format_version``; rows of the older shape (NULL version, raw links) are stored as they
are and read back as rows: converting them is the cite stage's job
(:mod:`citewell.answer.messages` reads messages, converts legacy rows and writes the
conversion back once through :meth:`Chats.save_conversion`). No store module imports the
engine or the cite stage.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import datetime
from typing import Any, Callable, Mapping, Protocol, Sequence

from ..errors import NotFoundError, StoreError, UsageError
from ..models import FORMAT_VERSION, Message, Notice
from .records import ChatRecord, question_title
from .sqlbase import SQLBase, now, parse_time


class ChatStore(Protocol):
    """Chats, their messages and pending turns (the chats concern of
    :class:`~citewell.store.base.Store`).

    A chat is a :class:`ChatRecord`; a message is a canonical
    :class:`~citewell.models.Message` stored whole, or a row of an older shape read back as
    a row (``dict``; :func:`citewell.answer.messages.stored_message` converts it). An
    unknown chat or message, or one of another workspace or user, raises
    :class:`~citewell.errors.NotFoundError`; a taken id or a second settling
    :class:`~citewell.errors.UsageError`."""

    def create_chat(self, workspace_id: str, title: str | None = None, *, user_id: str | None = None,
                    user_email: str | None = None) -> ChatRecord:
        """Create an empty chat in the workspace (new UUIDv4 id), of a user when given."""
        ...

    def chat(self, workspace_id: str, chat_id: str, *, user_id: str | None = None) -> ChatRecord:
        """One chat (of that user, when ``user_id``); :class:`citewell.errors.NotFoundError`
        for an unknown id or one of another workspace or user (indistinguishable)."""
        ...

    def chats(self, workspace_id: str, *, user_id: str | None = None) -> list[ChatRecord]:
        """Chats of the workspace (of that user, when ``user_id``), oldest first."""
        ...

    def rename_chat(self, workspace_id: str, chat_id: str, title: str, *, user_id: str | None = None) -> ChatRecord:
        """Set a chat's ``title`` (of that user, when ``user_id``) and return it;
        :class:`citewell.errors.NotFoundError` as :meth:`chat`. ``updated_at`` is kept (it
        dates the last message)."""
        ...

    def add_message(self, workspace_id: str, chat_id: str, message: Message) -> Message:
        """Append ``message`` to a chat in one transaction; returns the stored message.

        The stored message is a copy of ``message`` with ``chat_id`` set and ``id`` a new
        UUIDv4 when it had none; it is stored whole (every field, additive ones included)
        with the current ``format_version`` and reads back identical (rule 10).
        Raises ``NotFoundError`` for an unknown chat, ``UsageError`` when the id is taken.
        """
        ...

    def add_messages(self, workspace_id: str, chat_id: str, messages: Sequence[Message]) -> list[Message]:
        """:meth:`add_message` for several messages (one turn) in one transaction, in order."""
        ...

    def add_legacy_message(self, workspace_id: str, chat_id: str, row: Mapping[str, Any]) -> str:
        """Store a message row of an older shape as it is (``format_version`` NULL).

        ``row``: ``{role, text, references?, id?, status?, created_at?, image_url?, …}``
        with raw links in ``text`` (the pre-``format_version`` shape). It is converted
        when read (:func:`citewell.answer.messages.stored_message`). Returns the message id.
        """
        ...

    def settle_message(self, workspace_id: str, message: Message) -> Message:
        """Replace the stored pending message ``message.id`` by ``message`` (status settled
        or failed) in one transaction; returns what reads return from now on. A message
        settles once: ``UsageError`` if it is not pending (or ``message`` is), ``NotFoundError``
        for an unknown id."""
        ...

    def fail_pending(self, *, before: datetime, code: str, message: str,
                     keep: Callable[[Message], bool] | None = None) -> int:
        """Settle as failed (warning and additive ``error`` ``{code, message}``) every
        pending message of any workspace created before ``before`` — turns a stopped server
        never finished — except those for which ``keep(message)`` is true (a live process
        still answers them); returns how many."""
        ...

    def message_row(self, workspace_id: str, message_id: str, *, user_id: str | None = None) -> dict[str, Any]:
        """The stored row of one message (the ``messages`` columns,
        :data:`citewell.cite.history.ROW_KEYS`): read it with
        :func:`citewell.answer.messages.stored_message`. ``NotFoundError`` for an unknown id
        or one of another workspace (or, with ``user_id``, of another user's chat)."""
        ...

    def message_rows(self, workspace_id: str, chat_id: str, *, limit: int | None = None,
                     after: str | None = None, user_id: str | None = None) -> list[dict[str, Any]]:
        """The stored rows of a chat's messages, oldest first (storage order); at most
        ``limit``; only those stored after message ``after``. ``NotFoundError`` for an
        unknown chat or ``after``."""
        ...

    def save_conversion(self, workspace_id: str, message_id: str, message: Message) -> dict[str, Any] | None:
        """Write the conversion ``message`` of legacy row ``message_id`` back once (rule 10;
        the original stays in ``legacy``). None when written (or the row is gone), else the
        row as stored now (converted first by another process: its version wins);
        ``StoreError`` when the store cannot be written."""
        ...


class Chats(SQLBase):
    """Chats, their messages and the pending turns of stopped servers."""

    #: a chat row with the first question that has text (the title of an untitled chat)
    _CHAT_SELECT = ("SELECT c.*, (SELECT m.text FROM messages m WHERE m.chat_id = c.id AND m.role = 'user' "
                    "AND m.text != '' ORDER BY m.seq LIMIT 1) AS first_question FROM chats c")

    @staticmethod
    def _chat_from_row(row: sqlite3.Row) -> ChatRecord:
        title = row["title"]
        if title is None and row["first_question"] is not None:
            title = question_title(row["first_question"]) or None
        return ChatRecord(id=row["id"], workspace_id=row["workspace_id"], title=title,
                          created_at=parse_time(row["created_at"]), updated_at=parse_time(row["updated_at"]),
                          user_id=row["user_id"], user_email=row["user_email"])

    def create_chat(self, workspace_id: str, title: str | None = None, *, user_id: str | None = None,
                    user_email: str | None = None) -> ChatRecord:
        """Create an empty chat (UUIDv4 id); see :meth:`Store.create_chat`."""
        stamp = now()
        chat_id = str(uuid.uuid4())
        with self._write() as conn:
            conn.execute("INSERT INTO chats (id, workspace_id, title, created_at, updated_at, user_id, user_email) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", (chat_id, workspace_id, title, stamp, stamp, user_id, user_email))
            row = conn.execute(self._CHAT_SELECT + " WHERE c.id = ?", (chat_id,)).fetchone()
        return self._chat_from_row(row)

    def chat(self, workspace_id: str, chat_id: str, *, user_id: str | None = None) -> ChatRecord:
        """One chat of the workspace (of that user, when ``user_id``); ``NotFoundError``
        otherwise (other workspaces' and other users' chats too)."""
        sql = self._CHAT_SELECT + " WHERE c.id = ? AND c.workspace_id = ?"
        args: list[Any] = [chat_id, workspace_id]
        if user_id is not None:
            sql += " AND c.user_id = ?"
            args.append(user_id)
        row = self._conn().execute(sql, args).fetchone()
        if row is None:
            raise NotFoundError(f"no chat {chat_id}")
        return self._chat_from_row(row)

    def rename_chat(self, workspace_id: str, chat_id: str, title: str, *, user_id: str | None = None) -> ChatRecord:
        """Set a chat's title; see :meth:`Store.rename_chat` (``NotFoundError`` for another
        workspace's or user's chat: the update's own condition, so nothing is read first)."""
        sql = "UPDATE chats SET title = ? WHERE id = ? AND workspace_id = ?"
        args: list[Any] = [title, chat_id, workspace_id]
        if user_id is not None:
            sql += " AND user_id = ?"
            args.append(user_id)
        with self._write() as conn:
            if conn.execute(sql, args).rowcount == 0:
                raise NotFoundError(f"no chat {chat_id}")
        return self.chat(workspace_id, chat_id, user_id=user_id)

    def chats(self, workspace_id: str, *, user_id: str | None = None) -> list[ChatRecord]:
        """Chats of the workspace (of that user, when ``user_id``), oldest first."""
        sql = self._CHAT_SELECT + " WHERE c.workspace_id = ?"
        args: list[Any] = [workspace_id]
        if user_id is not None:
            sql += " AND c.user_id = ?"
            args.append(user_id)
        rows = self._conn().execute(sql + " ORDER BY c.created_at, c.id", args).fetchall()
        return [self._chat_from_row(row) for row in rows]

    @staticmethod
    def _next_seq(conn: sqlite3.Connection, workspace_id: str, chat_id: str) -> int:
        if conn.execute("SELECT 1 FROM chats WHERE id = ? AND workspace_id = ?",
                        (chat_id, workspace_id)).fetchone() is None:
            raise NotFoundError(f"no chat {chat_id}")
        return int(conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE chat_id = ?",
                                (chat_id,)).fetchone()[0])

    @staticmethod
    def _check_free(conn: sqlite3.Connection, workspace_id: str, message_id: str) -> None:
        if conn.execute("SELECT 1 FROM messages WHERE workspace_id = ? AND id = ?",
                        (workspace_id, message_id)).fetchone() is not None:
            raise UsageError(f"message id {message_id} is already used")

    def add_message(self, workspace_id: str, chat_id: str, message: Message) -> Message:
        """Append one message (one transaction); see :meth:`Store.add_message`."""
        return self.add_messages(workspace_id, chat_id, [message])[0]

    def add_messages(self, workspace_id: str, chat_id: str, messages: Sequence[Message]) -> list[Message]:
        """Append messages in order, all in one transaction; returns the stored copies. A
        message timed before the chat's last one (turns of one chat answered concurrently)
        takes that time, so ``created_at`` never goes back in the history's order."""
        stored: list[Message] = []
        with self._write() as conn:
            seq = self._next_seq(conn, workspace_id, chat_id)
            last = conn.execute("SELECT created_at FROM messages WHERE chat_id = ? ORDER BY seq DESC LIMIT 1",
                                (chat_id,)).fetchone()
            latest = parse_time(last["created_at"]) if last else None
            for message in messages:
                copy = message.model_copy(deep=True)
                copy.chat_id = chat_id
                copy.id = copy.id or str(uuid.uuid4())
                copy.format_version = FORMAT_VERSION
                if latest is not None and copy.created_at < latest:
                    copy.created_at = latest
                latest = copy.created_at
                self._check_free(conn, workspace_id, copy.id)
                payload = copy.model_dump_json()
                conn.execute("INSERT INTO messages (id, chat_id, workspace_id, role, status, text, payload, "
                             "format_version, legacy, created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                             (copy.id, chat_id, workspace_id, copy.role, copy.status, copy.text,
                              payload, FORMAT_VERSION, copy.created_at.isoformat(), seq))
                seq += 1
                # what a read returns (JSON round trip: tuples in additive fields become lists …)
                stored.append(Message.model_validate_json(payload))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (now(), chat_id))
        return stored

    def add_legacy_message(self, workspace_id: str, chat_id: str, row: Mapping[str, Any]) -> str:
        """Store a row of the pre-``format_version`` shape as given (see :meth:`Store.add_legacy_message`)."""
        original = dict(row)
        message_id = str(original.get("id") or uuid.uuid4())
        original["id"] = message_id
        original["chat_id"] = chat_id
        created = original.get("created_at") or now()
        original["created_at"] = str(created)
        with self._write() as conn:
            seq = self._next_seq(conn, workspace_id, chat_id)
            self._check_free(conn, workspace_id, message_id)
            conn.execute("INSERT INTO messages (id, chat_id, workspace_id, role, status, text, payload, "
                         "format_version, legacy, created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
                         (message_id, chat_id, workspace_id, original.get("role") or "assistant",
                          original.get("status") or "settled", original.get("text") or "",
                          json.dumps(original, ensure_ascii=False), original["created_at"], seq))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (now(), chat_id))
        return message_id

    def settle_message(self, workspace_id: str, message: Message) -> Message:
        """Replace a pending message by its settled (or failed) form (see :meth:`Store.settle_message`)."""
        copy = message.model_copy(deep=True)
        copy.format_version = FORMAT_VERSION
        if copy.status == "pending":
            raise UsageError("a message settles as settled or failed, not pending")
        with self._write() as conn:
            row = conn.execute("SELECT chat_id, status FROM messages WHERE workspace_id = ? AND id = ?",
                               (workspace_id, copy.id)).fetchone()
            if row is None:
                raise NotFoundError(f"no message {copy.id}")
            if row["status"] != "pending":
                raise UsageError(f"message {copy.id} has settled already ({row['status']})")
            copy.chat_id = row["chat_id"]
            payload = copy.model_dump_json()
            conn.execute("UPDATE messages SET status = ?, text = ?, payload = ?, format_version = ? "
                         "WHERE workspace_id = ? AND id = ?",
                         (copy.status, copy.text, payload, FORMAT_VERSION, workspace_id, copy.id))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (now(), row["chat_id"]))
        return Message.model_validate_json(payload)

    def fail_pending(self, *, before: datetime, code: str, message: str,
                     keep: Callable[[Message], bool] | None = None) -> int:
        """Settle as failed every pending message (all workspaces) created before ``before``
        (but those ``keep`` says another live process is still answering)."""
        with self._write() as conn:
            rows = conn.execute("SELECT workspace_id, id, payload FROM messages WHERE status = 'pending' "
                                "AND format_version IS NOT NULL").fetchall()
            failed = 0
            for row in rows:
                pending = Message.model_validate_json(row["payload"])
                if pending.created_at >= before or (keep is not None and keep(pending)):
                    continue
                pending.status = "failed"
                pending.warnings.append(Notice(code=code, message=message))
                setattr(pending, "error", {"code": code, "message": message})
                conn.execute("UPDATE messages SET status = 'failed', payload = ? WHERE workspace_id = ? AND id = ?",
                             (pending.model_dump_json(), row["workspace_id"], row["id"]))
                failed += 1
        return failed

    def message_row(self, workspace_id: str, message_id: str, *, user_id: str | None = None) -> dict[str, Any]:
        """The stored row of one message (the ``messages`` columns, see
        :data:`citewell.cite.history.ROW_KEYS`); ``NotFoundError`` for an unknown id or one
        of another workspace (or, with ``user_id``, of another user's chat)."""
        sql = "SELECT m.* FROM messages m WHERE m.workspace_id = ? AND m.id = ?"
        args: list[Any] = [workspace_id, message_id]
        if user_id is not None:
            sql += " AND EXISTS (SELECT 1 FROM chats c WHERE c.id = m.chat_id AND c.user_id = ?)"
            args.append(user_id)
        row = self._conn().execute(sql, args).fetchone()
        if row is None:
            raise NotFoundError(f"no message {message_id}")
        return dict(row)

    def message_rows(self, workspace_id: str, chat_id: str, *, limit: int | None = None,
                     after: str | None = None, user_id: str | None = None) -> list[dict[str, Any]]:
        """The stored rows of a chat's messages, oldest first (storage order); at most
        ``limit``; only those stored after message ``after``. ``NotFoundError`` for an unknown
        chat (or one of another user, with ``user_id``) or ``after``; ``UsageError`` for a
        negative ``limit``."""
        conn = self._conn()
        self.chat(workspace_id, chat_id, user_id=user_id)
        sql = "SELECT * FROM messages WHERE workspace_id = ? AND chat_id = ?"
        args: list[Any] = [workspace_id, chat_id]
        if after is not None:
            mark = conn.execute("SELECT seq FROM messages WHERE workspace_id = ? AND chat_id = ? AND id = ?",
                                (workspace_id, chat_id, after)).fetchone()
            if mark is None:
                raise NotFoundError(f"no message {after} in chat {chat_id}")
            sql += " AND seq > ?"
            args.append(mark["seq"])
        sql += " ORDER BY seq"
        if limit is not None:
            if limit < 0:
                raise UsageError("limit must not be negative")
            sql += " LIMIT ?"
            args.append(limit)
        return [dict(row) for row in conn.execute(sql, args).fetchall()]

    def save_conversion(self, workspace_id: str, message_id: str, message: Message) -> dict[str, Any] | None:
        """Write the conversion ``message`` of legacy row ``message_id`` back, once (rule 10): the row gets
        its payload, text, status and the current ``format_version``, the original is kept in
        ``legacy``. Returns None when written (or when the row is gone), else the row as
        stored now (another process converted it first: its version wins). ``StoreError``
        when the store cannot be written (a read-only file)."""
        payload = message.model_dump_json()
        try:
            with self._write() as conn:
                updated = conn.execute(
                    "UPDATE messages SET legacy = COALESCE(legacy, payload), payload = ?, format_version = ?, "
                    "text = ?, status = ? WHERE workspace_id = ? AND id = ? AND format_version IS NULL",
                    (payload, FORMAT_VERSION, message.text, message.status, workspace_id, message_id)).rowcount
                if updated:
                    return None
                current = conn.execute("SELECT * FROM messages WHERE workspace_id = ? AND id = ?",
                                       (workspace_id, message_id)).fetchone()
        except self._DB_ERRORS as exc:
            raise StoreError(f"cannot write the conversion of message {message_id}: {exc}") from exc
        return dict(current) if current is not None else None
