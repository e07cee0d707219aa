"""The PostgreSQL store (in progress): the concern mixins of :mod:`citewell.store` over
PostgreSQL's dialect pieces.

So far: connections and locks (:mod:`.connection`) and the schema (:mod:`.schema`: the
same SQLAlchemy Core tables and Alembic revisions as SQLite), with the concerns whose SQL
needs nothing more — keys, events, chats and messages. The lexical index (a BM25 ranked
from term statistics like FTS5's) and the vector index (pgvector, HNSW) are not built yet,
so the concerns that index chunks (resources, uploads, search, vectors, mentions) are not
part of this class, and :func:`citewell.store.open_store` does not open PostgreSQL URLs yet.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit, urlunsplit

from ..chats import Chats
from ..events import Events
from ..keys import Keys
from .connection import PostgresConnections
from .schema import migrate


def safe_location(url: str) -> str:
    """``url`` without its password (how errors and logs name a PostgreSQL store)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class PostgresStore(PostgresConnections, Keys, Events, Chats):
    """Keys, events, chats and messages of :class:`~citewell.store.base.Store` in one
    PostgreSQL database (``url``: ``postgresql://user[:password]@host[:port]/database``),
    migrated on open. Raises :class:`~citewell.errors.StoreError` when the database cannot
    be reached, is not a citewell store, or is newer than this citewell."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self.location = safe_location(url)
        self._local = threading.local()
        self._DB_ERRORS = (psycopg.Error,)
        self._INSERTION_ORDER = "created_at, id"
        migrate(url, self.location)


__all__ = ["PostgresStore", "safe_location"]
