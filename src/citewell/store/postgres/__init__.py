"""The PostgreSQL store: the concern mixins of :mod:`citewell.store` over PostgreSQL's
dialect pieces, opened by :func:`citewell.store.open_store` for a ``postgresql://`` (or
``postgres://``) URL.

The pieces: connections and locks (:mod:`.connection`), the schema (:mod:`.schema`: the
same SQLAlchemy Core tables and Alembic revisions as SQLite) and the lexical index
(:mod:`.lexical`: BM25 ranked from term statistics exactly as FTS5 ranks), with every
concern, and the vector index (:mod:`.vectors`: pgvector, one HNSW index per embedding
model, the workspace and filters applied in SQL). Originals and page images live in a local
blob folder by default (:attr:`PostgresStore.blobs`, see :meth:`PostgresStore.blob_dir`).
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

from ...blobs import BlobStore, blob_store
from ...locations import safe_location
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


def normal_url(url: str) -> str:
    """``url`` with the scheme ``postgresql://`` (libpq also accepts ``postgres://``;
    SQLAlchemy, which runs the migrations, does not)."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql://{rest}" if sep and scheme.lower() in ("postgres", "postgresql") else url


#: ``meta`` key of the name of the store's default blob folder, fixed when the store first
#: opened with it, so that a later citewell naming folders otherwise never moves the
#: originals of a store away from it
BLOB_FOLDER = "blob_folder"


def blob_root() -> Path:
    """``<user data dir>/citewell/blobs``: where the default blob folders of PostgreSQL
    stores are (one per database, see :func:`blob_folder_name`)."""
    return Path(platformdirs.user_data_dir("citewell")) / "blobs"


def blob_folder_name(host: str, port: int | str, dbname: str) -> str:
    """``<host>-<port>-<database>`` of a connection as libpq made it (its URL, query
    parameters and ``PG…`` environment defaults applied): a Unix-socket directory names
    the host by its path; characters other than ``A-Za-z0-9._-`` become ``_``. One folder
    per database: blobs are shared by content within a store, and a store removes a blob
    only when none of its own rows refers to it (several machines share a bucket instead,
    see :mod:`citewell.blobs`)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{host or 'localhost'}-{port or 5432}-{dbname}")


def legacy_blob_folder_name(url: str) -> str:
    """The folder name citewell gave a store before 2026-12-02: the URL's own host, port
    and path (no query parameters, no environment defaults; so two databases could share
    it). A store that has originals there keeps it (:data:`BLOB_FOLDER`)."""
    parts = urlsplit(url)
    name = f"{parts.hostname or 'localhost'}-{parts.port or 5432}-{parts.path.lstrip('/') or parts.username or 'postgres'}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


class PostgresStore(PostgresConnections, PostgresLexicalIndex, PgVectorIndex, PostgresJobs, Keys, Events, Resources,
                    Uploads, Search, Vectors, Chats, Mentions, Tracking):
    """The :class:`~citewell.store.base.Store` in one PostgreSQL database (``url``:
    ``postgresql://user[:password]@host[:port]/database``, or ``postgres://…``), migrated
    on open. ``blobs``: where originals and page images go (a
    :class:`~citewell.blobs.BlobStore`, a folder or ``s3://bucket/prefix``; default the
    folder :meth:`blob_dir`). Raises :class:`~citewell.errors.StoreUnavailable` when
    the database cannot be reached (and, later, whenever a statement meets it unreachable:
    :mod:`.connection`), :class:`~citewell.errors.StoreError` when it refuses the login or
    database, is not a citewell store, or is newer than this citewell."""

    def __init__(self, url: str, *, blobs: BlobStore | str | os.PathLike[str] | None = None) -> None:
        import psycopg

        self.url = normal_url(url)
        self.location = safe_location(self.url)
        self._local = threading.local()
        self._pool_lock = threading.Lock()
        self._pool_object = None
        self._open_caches()  # the retrieval caches, as on SQLite
        self._doc_stats: GenerationCache[tuple[int, int]] = GenerationCache(1)  # the lexical index's N and tokens
        self._indexed: set[tuple[str, int]] = set()  # (model, dim) with an HNSW index (the vector index)
        self._DB_ERRORS = (psycopg.Error,)
        migrate(self.url, self.location)
        self.blobs: BlobStore = blob_store(blobs, "") if blobs is not None else blob_store(None, self.blob_dir())

    def blob_dir(self) -> Path:
        """The store's default blob folder, ``blob_root() / <name>``: the name in ``meta``
        (:data:`BLOB_FOLDER`), else fixed now: :func:`blob_folder_name` of the database as
        the pool's connection reached it, or, for a store with originals in the folder
        :func:`legacy_blob_folder_name` names, that one. Raises what the store raises."""
        conn = self._conn()
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (BLOB_FOLDER,)).fetchone()
        if row is None:
            with self._pool().connection() as raw:
                name = blob_folder_name(raw.info.host, raw.info.port, raw.info.dbname)
            legacy = legacy_blob_folder_name(self.url)
            if legacy != name and (blob_root() / legacy).is_dir() and conn.execute(
                    "SELECT 1 FROM resources WHERE blob_key IS NOT NULL LIMIT 1").fetchone() is not None:
                name = legacy  # its originals are there
            conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT DO NOTHING", (BLOB_FOLDER, name))
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (BLOB_FOLDER,)).fetchone()
        return blob_root() / row[0]


__all__ = ["PostgresStore", "blob_folder_name", "blob_root", "normal_url", "safe_location"]
