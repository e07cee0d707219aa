"""The values the store's interface exchanges: records, filter conditions and the few
rules of their shape (ISO times, chat titles).

A leaf module (it imports nothing of citewell), so that every concern of the store
(:mod:`citewell.store.base` composes them) and every caller can import them without an
import cycle; :mod:`citewell.store.base` re-exports each name.
"""

from __future__ import annotations

import os
import socket
import uuid

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple


@dataclass(frozen=True)
class FileRecord:
    """What the store remembers of a file path in a workspace (for sync).

    ``resource_id`` is the path's current usable version (ready, or missing/superseded
    history); ``last_resource_id``/``last_sha256``/``size_bytes``/``mtime_ns`` describe
    the content seen at the last attempt, which may have failed.
    """

    path: str
    resource_id: str | None
    last_resource_id: str | None
    last_sha256: str
    size_bytes: int
    mtime_ns: int
    present: bool


@dataclass(frozen=True)
class Condition:
    """One filter condition: ``key`` (canonical name), ``op`` (eq, ge, le), ``values``.

    ``eq`` with several values means any of them; ``ne`` (``resource_id`` only, made by
    the scope check, never parsed from a request) means none of them; values are already normalised
    (lower-cased strings; fiscal_quarter "1".."4"; fiscal_year an integer string).
    """

    key: str
    op: str
    values: tuple[str, ...]


def iso_utc(value: datetime) -> str:
    """``value`` as ISO 8601 UTC with milliseconds and ``Z`` (``2026-08-05T10:02:11.004Z``)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: Longest title taken from a question (code points, "…" included).
QUESTION_TITLE_CHARS = 80


def question_title(question: str) -> str:
    """The title of a chat created without one, from its first question: the question's
    whitespace collapsed to single spaces, cut at a word boundary to at most
    :data:`QUESTION_TITLE_CHARS` code points ending in "…" when cut (a single longer
    word is cut inside). ``""`` for a question without text. Never raises.

    Rule: seed 001 always shows a session ``title`` string (issue 15)."""
    text = " ".join(question.split())
    if len(text) <= QUESTION_TITLE_CHARS:
        return text
    cut = text[:QUESTION_TITLE_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


@dataclass(frozen=True)
class ChatRecord:
    """A stored chat (= session = conversation, docs/architecture.md "Canonical data").

    ``title``: the title it was created with; for a chat created without one, the
    :func:`question_title` of its first question with text (stores derive it on read, so
    older untitled chats get one too), None until that question is asked. ``updated_at``
    moves when a message is added. :meth:`to_dict` gives the seed 001 ``session`` shape:
    ``{id, title, workspace_id, created_at, updated_at}`` with ISO ``Z`` times, ``title``
    always a string (``""`` before the first question).
    """

    id: str
    workspace_id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    #: the workspace user the chat belongs to (set when a platform key acts for a user);
    #: None for a workspace-level chat
    user_id: str | None = None
    user_email: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``{id, title, workspace_id, created_at, updated_at}`` (``title``: ``""``
        when None)."""
        return {"id": self.id, "title": self.title or "", "workspace_id": self.workspace_id,
                "created_at": iso_utc(self.created_at), "updated_at": iso_utc(self.updated_at)}


@dataclass(frozen=True)
class ApiKeyRecord:
    """A stored API key: never the key itself, only its SHA-256 (see :mod:`citewell.keys`).

    ``platform``: the key may act for another workspace (``organization_id``) and for a
    user of it (seed 003); ``prefix``: the key's first characters, to tell keys apart.
    """

    id: str
    workspace_id: str
    platform: bool
    prefix: str
    created_at: datetime


#: Chunks looked at on each side of a chunk for the rest of its page (a page has at most a
#: few dozen 50–250-word chunks).
PAGE_REACH = 40


class TextHit(NamedTuple):
    """One full-text match read without its chunk's metadata
    (:meth:`~citewell.store.search.SearchStore.search_hits`): the chunk's ``chunk_id``,
    ``resource_id`` and exact ``text``, and ``score`` (the negated BM25 of
    :meth:`~citewell.store.search.SearchStore.search_text`: higher is better)."""

    chunk_id: str
    resource_id: str
    text: str
    score: float


__all__ = ["PAGE_REACH", "QUESTION_TITLE_CHARS", "worker_id", "ApiKeyRecord", "ChatRecord", "Condition", "FileRecord",
           "TextHit", "iso_utc", "question_title"]


def worker_id() -> str:
    """``host:pid:random`` naming this process as the owner of the leases it takes (a
    label for logs and for people: ownership itself is the lease's token and expiry)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
