"""SQLite connections and locks (a dialect piece of the store).

One connection per thread (so a server may share the store between threads), WAL
journal, a 30 s busy timeout, ``synchronous = NORMAL``; every write is one
``BEGIN IMMEDIATE`` transaction (SQLite's database-wide write lock), every consistent read
one ``BEGIN`` (a WAL snapshot). The generation counters of
:mod:`~citewell.store.searchcache` live in table ``meta``.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ...errors import StoreError
from ..ids import text_hash
from ..sqlbase import SQLBase

BUSY_TIMEOUT_S = 30.0


class SQLiteConnections(SQLBase):
    """The connection hooks of :class:`~citewell.store.sqlbase.SQLBase` on one SQLite file
    (``path``); ``_verified`` is set once the file is known to be a citewell store (before
    that no connection switches the journal to WAL)."""

    path: Path
    _local: threading.local
    _verified: bool

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                if self._verified:  # never touch a file before knowing it is a citewell store
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                conn.create_function("citewell_sha256", 1, text_hash, deterministic=True)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open the store {self.path}: {exc}") from exc
            self._local.conn = conn
        return conn
