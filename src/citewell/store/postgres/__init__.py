"""The PostgreSQL store (in progress): the concern mixins of :mod:`citewell.store` over
PostgreSQL's dialect pieces.

So far: connections and locks (:mod:`.connection`), the schema (:mod:`.schema`: the same
SQLAlchemy Core tables and Alembic revisions as SQLite) and the lexical index
(:mod:`.lexical`: BM25 ranked from term statistics exactly as FTS5 ranks), with every
concern. The vector index is for now the SQLite store's (vectors as bytes, the
workspace's matrix ranked exactly in numpy): pgvector with an HNSW index is not built
yet, and :func:`citewell.store.open_store` does not open PostgreSQL URLs yet.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit, urlunsplit

from ..chats import Chats
from ..events import Events
from ..keys import Keys
from ..mentions import Mentions
from ..resources import Resources
from ..search import Search
from ..searchcache import GenerationCache, Scope, TermScores, VectorScope
from ..sqlite.vectors import BlobVectorIndex
from ..uploads import Uploads
from ..vectors import Vectors
from .connection import PostgresConnections
from .lexical import PostgresLexicalIndex
from .schema import migrate


def safe_location(url: str) -> str:
    """``url`` without its password (how errors and logs name a PostgreSQL store)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class PostgresStore(PostgresConnections, PostgresLexicalIndex, BlobVectorIndex, Keys, Events, Resources, Uploads,
                    Search, Vectors, Chats, Mentions):
    """The :class:`~citewell.store.base.Store` in one PostgreSQL database (``url``: ``postgresql://user[:password]@host[:port]/database``),
    migrated on open. Raises :class:`~citewell.errors.StoreError` when the database cannot
    be reached, is not a citewell store, or is newer than this citewell."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self.location = safe_location(url)
        self._local = threading.local()
        #: the retrieval caches of the search concern (as on SQLite; see searchcache)
        self._terms: GenerationCache[TermScores] = GenerationCache(256 << 20, lambda t: t.nbytes)
        self._scopes: GenerationCache[Scope] = GenerationCache(64, per_key=True)
        self._alone: GenerationCache[bool] = GenerationCache(1024)
        self._dfs: GenerationCache[int] = GenerationCache(200_000, per_key=True)
        self._ranking_resources: GenerationCache[tuple] = GenerationCache(64, per_key=True)
        self._resource_sets: GenerationCache[set[str]] = GenerationCache(4096, per_key=True)
        self._vectors: GenerationCache[VectorScope] = GenerationCache(1 << 30, lambda v: v.nbytes, per_key=True)
        self._DB_ERRORS = (psycopg.Error,)
        migrate(url, self.location)


__all__ = ["PostgresStore", "safe_location"]
