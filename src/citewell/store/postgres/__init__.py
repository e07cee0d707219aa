"""The PostgreSQL store: the concern mixins of :mod:`citewell.store` over PostgreSQL's
dialect pieces, opened by :func:`citewell.store.open_store` for a ``postgresql://`` (or
``postgres://``) URL.

The pieces: connections and locks (:mod:`.connection`), the schema (:mod:`.schema`: the
same SQLAlchemy Core tables and Alembic revisions as SQLite) and the lexical index
(:mod:`.lexical`: BM25 ranked from term statistics exactly as FTS5 ranks), with every
concern, and the vector index (:mod:`.vectors`: pgvector, one HNSW index per embedding
model, the workspace and filters applied in SQL). Originals and page images live in a local
blob folder by default (:attr:`PostgresStore.blobs`, see :func:`default_blob_dir`).
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import platformdirs

from ...blobs import BlobStore, blob_store
from ..chats import Chats
from ..events import Events
from ..keys import Keys
from ..mentions import Mentions
from ..resources import Resources
from ..search import Search
from ..searchcache import GenerationCache
from ..tracking import Tracking
from ..uploads import Uploads
from ..vectors import Vectors
from .connection import PostgresConnections
from .jobs import PostgresJobs
from .lexical import PostgresLexicalIndex
from .schema import migrate
from .vectors import PgVectorIndex


def safe_location(url: str) -> str:
    """``url`` without its password (how errors and logs name a PostgreSQL store)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def normal_url(url: str) -> str:
    """``url`` with the scheme ``postgresql://`` (libpq also accepts ``postgres://``;
    SQLAlchemy, which runs the migrations, does not)."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql://{rest}" if sep and scheme.lower() in ("postgres", "postgresql") else url


def default_blob_dir(url: str) -> Path:
    """The blob folder of the database at ``url`` when no blob location is given (no
    ``blobs`` argument or setting, see :func:`citewell.store.open_store`):
    ``<user data dir>/citewell/blobs/<host>-<port>-<database>`` (one folder per database:
    blobs are shared by content within a store, and a store removes a blob only when none
    of its own rows refers to it; several machines share a bucket instead, see
    :mod:`citewell.blobs`). Host, port and database are libpq's reading of the URL (its
    query parameters too): a Unix-socket directory (``?host=/var/run/postgresql``) names
    the folder by that path, no host is ``localhost``, no port 5432, no database the
    user's name; characters other than ``A-Za-z0-9._-`` become ``_``."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    except Exception:  # noqa: BLE001 - not libpq's: the URL's own parts (connecting will say what is wrong)
        parts = urlsplit(url)
        params = {"host": parts.hostname or "", "port": str(parts.port or ""), "dbname": parts.path.lstrip("/"),
                  "user": parts.username or ""}
    host = params.get("host") or "localhost"
    name = f"{host}-{params.get('port') or 5432}-{params.get('dbname') or params.get('user') or 'postgres'}"
    return Path(platformdirs.user_data_dir("citewell")) / "blobs" / re.sub(r"[^A-Za-z0-9._-]", "_", name)


class PostgresStore(PostgresConnections, PostgresLexicalIndex, PgVectorIndex, PostgresJobs, Keys, Events, Resources,
                    Uploads, Search, Vectors, Chats, Mentions, Tracking):
    """The :class:`~citewell.store.base.Store` in one PostgreSQL database (``url``:
    ``postgresql://user[:password]@host[:port]/database``, or ``postgres://…``), migrated
    on open. ``blobs``: where originals and page images go (a
    :class:`~citewell.blobs.BlobStore`, a folder or ``s3://bucket/prefix``; default the
    folder :func:`default_blob_dir`). Raises :class:`~citewell.errors.StoreUnavailable` when
    the database cannot be reached (and, later, whenever a statement meets it unreachable:
    :mod:`.connection`), :class:`~citewell.errors.StoreError` when it refuses the login or
    database, is not a citewell store, or is newer than this citewell."""

    def __init__(self, url: str, *, blobs: BlobStore | str | os.PathLike[str] | None = None) -> None:
        import psycopg

        self.url = normal_url(url)
        self.location = safe_location(self.url)
        self.blobs: BlobStore = blob_store(blobs, default_blob_dir(self.url))
        self._local = threading.local()
        self._pool_lock = threading.Lock()
        self._pool_object = None
        self._open_caches()  # the retrieval caches, as on SQLite
        self._doc_stats: GenerationCache[tuple[int, int]] = GenerationCache(1)  # the lexical index's N and tokens
        self._indexed: set[tuple[str, int]] = set()  # (model, dim) with an HNSW index (the vector index)
        self._DB_ERRORS = (psycopg.Error,)
        migrate(self.url, self.location)


__all__ = ["PostgresStore", "default_blob_dir", "normal_url", "safe_location"]
