"""The embedded store: one SQLite file (WAL, 30 s busy timeout) plus a blob folder.

:class:`SQLiteStore` is the concern mixins of :mod:`citewell.store` (keys, events,
resources and sync, uploads, search, vectors, chats and messages, mentions, tracking,
jobs: the SQL every database shares) over this package's three dialect pieces:

- :mod:`.connection`: connections and locks (one connection per thread, WAL, busy
  timeout, ``BEGIN IMMEDIATE`` writes, snapshot reads, the generation counters);
- :mod:`.lexical`: the lexical index (FTS5 with ``bm25``);
- :mod:`.vectors`: the vector index (float32 BLOBs ranked in numpy).

Jobs (:mod:`citewell.store.jobs`) need no piece of their own here: a claim is one
``BEGIN IMMEDIATE`` write like any other, which serialises claimers.

:mod:`.schema` migrates a store on open (citewell's own steps to v10, then Alembic's
revisions, :mod:`citewell.store.migrate`; the tables are :mod:`citewell.store.tables`);
the tracking agents' tables (issue 17) are reached through :meth:`SQLiteStore.tracking`
(:mod:`citewell.store.tracking`, shared SQL).

Retrieval reads go through in-process caches (:mod:`citewell.store.searchcache`) tagged
with the generation counters ``search_generation`` and ``vector_generation`` of table
``meta``: every write that changes what a search sees (chunks, the full-text index,
resources, their files and facets; vectors) bumps its counter in the same transaction
(``_write(bump=…)``), so another process's or thread's write is seen by the next query.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from ...blobs import BlobStore, blob_store
from ...errors import StoreError
from ..chats import Chats
from ..events import Events
from ..jobs import Jobs
from ..keys import Keys
from ..mentions import Mentions
from ..migrate import SCHEMA_VERSION
from ..resources import Resources
from ..search import Search
from ..tracking import Tracking
from ..uploads import Uploads
from ..vectors import Vectors
from .connection import BUSY_TIMEOUT_S, SQLiteConnections
from .lexical import BM25_WEIGHTS, FTS5Index, fts_query
from .schema import migrate
from .vectors import BlobVectorIndex


class SQLiteStore(SQLiteConnections, FTS5Index, BlobVectorIndex, Jobs, Keys, Events, Resources, Uploads, Search,
                  Vectors, Chats, Mentions, Tracking):
    """The embedded :class:`~citewell.store.base.Store` in one SQLite file.

    ``path`` is the database file (created with its folder when missing). ``blobs``: where
    originals and page images go (a :class:`~citewell.blobs.BlobStore`, a folder, or
    ``s3://bucket/prefix``; see :func:`citewell.blobs.open_blobs`), by default the folder
    ``<folder>/<store name>.blobs`` (``citewell.sqlite`` → ``citewell.blobs/``). Raises
    :class:`StoreError` when the file cannot be opened, is not a citewell store, or is
    newer than this version of citewell. The dialect pieces come first in the bases, so
    their methods are the hooks the concern mixins call.
    """

    def __init__(self, path: str | os.PathLike[str], *, blobs: BlobStore | str | os.PathLike[str] | None = None) -> None:
        if re.match(r"(?i)postgres(ql)?:/", os.fspath(path)):
            raise StoreError(f"{path} is a PostgreSQL URL, not a SQLite file: open it with citewell.store.open_store")
        self.path = Path(path).expanduser().resolve()
        self.location = str(self.path)
        self.blobs: BlobStore = blob_store(blobs, self.path.parent / f"{self.path.stem}.blobs")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {self.path.parent}: {exc}") from exc
        self._local = threading.local()
        self._open_caches()
        self._verified = False
        migrate(self.path)
        self._verified = True
        self._conn().execute("PRAGMA journal_mode = WAL")


__all__ = ["BM25_WEIGHTS", "BUSY_TIMEOUT_S", "SCHEMA_VERSION", "SQLiteStore", "fts_query"]
