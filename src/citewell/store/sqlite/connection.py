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
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

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

    @contextmanager
    def _write(self, *, bump: str | None = None, workspace: str | None = None) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; ``bump``: the generation counter (``SEARCH``,
        ``VECTORS``) this write moves, store-wide and (``workspace``) the workspace's own,
        incremented in the same transaction when it changed a row (a sync that finds
        nothing new keeps the caches)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        changes = conn.total_changes
        try:
            yield conn
            if bump is not None and conn.total_changes != changes:
                self._bump(conn, bump, workspace)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    @staticmethod
    def _bump(conn: sqlite3.Connection, counter: str, workspace: str | None = None) -> None:
        """Move the generation ``counter`` (``SEARCH``, ``VECTORS``) inside the open write:
        store-wide, and the workspace's own when ``workspace`` is given."""
        for key in (counter, *([f"{counter}:{workspace}"] if workspace is not None else [])):
            conn.execute("INSERT INTO meta VALUES (?, '1') ON CONFLICT (key) DO UPDATE "
                         "SET value = CAST(value AS INTEGER) + 1", (key,))

    @classmethod
    def _ws_generation(cls, conn: sqlite3.Connection, workspace_id: str, *keys: str) -> tuple[int, ...]:
        """A workspace's own counters ``keys`` (``SEARCH``, ``VECTORS``), 0 when never bumped."""
        return cls._generation(conn, *(f"{k}:{workspace_id}" for k in keys))

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every read inside sees one state of the store (WAL snapshot),
        the generation counters included. Inside a transaction already open, that one."""
        conn = self._conn()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    @staticmethod
    def _generation(conn: sqlite3.Connection, *keys: str) -> tuple[int, ...]:
        """The counters ``keys`` (``SEARCH``, ``VECTORS``) as stored now (0 when never bumped)."""
        rows = dict(conn.execute(f"SELECT key, value FROM meta WHERE key IN ({','.join('?' * len(keys))})",
                                 keys).fetchall())
        return tuple(int(rows.get(k, 0)) for k in keys)

    def close(self) -> None:
        """Close this thread's connection (other threads' close when they end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

