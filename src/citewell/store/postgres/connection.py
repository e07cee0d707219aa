"""PostgreSQL connections and locks (a dialect piece of the store).

Connections come from one pool per store object (psycopg's ``ConnectionPool``: at most
:data:`POOL_SIZE` connections, ``CITEWELL_PG_POOL_SIZE`` to change it), in autocommit mode
with transactions begun here: every write is one ``BEGIN … COMMIT`` (rows are locked by
the statements themselves; uniqueness constraints make concurrent writers of the same
content converge, as on SQLite), every consistent read one ``REPEATABLE READ READ ONLY``
transaction (a snapshot, like SQLite's WAL read). The generation counters of
:mod:`~citewell.store.searchcache` live in table ``meta`` as on SQLite.

A thread holds a pooled connection only as long as it needs one: a statement outside a
transaction borrows one for that statement (its rows are read before it goes back), and
``BEGIN`` keeps one until ``COMMIT`` or ``ROLLBACK``. So many threads (an API process's
request threads, its workers) share a few database connections, and a thread waits
(:data:`POOL_TIMEOUT_S` at most, then ``STORE_ERROR``) when all are in use. Nothing is
kept on a connection between transactions (settings are ``SET LOCAL``, locks
``pg_advisory_xact_lock``). A connection that has been idle for a while is checked before
it is lent, and a broken one is dropped and replaced (with every idle one checked then:
a server restart drops them all), so a restart costs the statements in flight, not the
process; a read or a ``BEGIN`` whose connection turns out broken runs again once.

The concern modules speak the SQL both databases share, with ``?`` parameters and rows
read by name or position; :class:`Connection` is the thin layer that gives the pool that
shape (``?`` becomes ``%s``; :class:`Row` is read by name or position like
``sqlite3.Row``; ``total_changes`` counts the rows the statements changed, which is how a
write knows whether to bump a generation).
"""

from __future__ import annotations

import os
import re
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from ...errors import StoreError
from ..sqlbase import SQLBase

#: seconds a statement waits for a row lock before failing (SQLite's busy timeout)
LOCK_TIMEOUT_S = 30.0
#: connections a store object keeps at most (``CITEWELL_PG_POOL_SIZE`` overrides): each
#: API or worker process has one store, so a deployment opens about processes × this
POOL_SIZE = 10
#: seconds a thread waits for a free connection before the statement fails
POOL_TIMEOUT_S = 30.0
#: seconds the pool keeps retrying (1, 2, 4 … s apart) to open a connection the database
#: refused before it stops; a thread waiting for a connection then makes it try again
#: (:data:`ASK_AGAIN_S`). Kept short so that after an outage a request connects within
#: seconds of the database's return, not at the pool's next doubled retry (psycopg_pool's
#: default keeps doubling for 5 minutes: 64 s, 128 s apart)
RECONNECT_S = 8.0
#: seconds between a waiting thread's requests to the pool (each may start a new attempt)
ASK_AGAIN_S = 2.0
#: the ``application_name`` of the store's connections, unless the URL gives one
APPLICATION_NAME = "citewell"
#: a connection idle for longer is checked (one empty query) before it is lent
IDLE_CHECK_S = 5.0
_PARAM = re.compile(r"\?")
_TRANSACTION = re.compile(r"\s*(BEGIN|COMMIT|ROLLBACK)\b", re.IGNORECASE)
#: statements that may run again after their connection broke outside a transaction (they
#: change nothing: a read, or the start of a transaction)
_RETRYABLE = re.compile(r"\s*(SELECT|WITH|BEGIN)\b", re.IGNORECASE)


class Row(tuple):  # noqa: SLOT001 - a tuple with names, like sqlite3.Row
    """A result row read by position (``row[0]``) or by column name (``row["id"]``);
    ``dict(row)`` gives ``{name: value}``."""

    names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self.names.index(key))
            except ValueError:
                raise IndexError(f"no column {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self.names)


@lru_cache(maxsize=1024)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    """The :class:`Row` class of results with columns ``names`` (made once per column list,
    not once per query)."""
    return type("Row", (Row,), {"names": names})


def _row_factory(cursor: Any) -> Any:
    return _row_class(tuple(column.name for column in cursor.description or ()))


@lru_cache(maxsize=4096)
def _translate(sql: str) -> str:
    """``?`` parameters as psycopg's ``%s`` (a literal ``%`` doubled); the concerns' SQL is
    mostly constant text, so each statement is translated once."""
    return _PARAM.sub("%s", sql.replace("%", "%%"))


class Cursor:
    """A cursor in the sqlite3 cursor's shape: ``execute``, ``fetchone``, ``fetchall``,
    iteration, ``rowcount``; ``row_factory = None`` reads plain tuples. Each statement
    runs on its :class:`Connection`'s connection of the moment (see the module docstring),
    and its rows are read before that connection goes back to the pool."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.row_factory: Any = _row_factory
        self._rows: list[Any] = []
        self._next = 0  # the index of the row fetchone gives next
        self._rowcount = -1

    def _run(self, sql: str, params: Any, *, many: bool) -> Cursor:
        """Run ``sql`` once (``many``: for each parameter tuple of ``params``) and keep its
        rows; again once on another connection when a read or ``BEGIN`` met a dropped one."""
        import psycopg

        for attempt in (1, 2):
            try:
                with self._connection.statement(sql) as raw:
                    if raw is None:
                        self._rows, self._next, self._rowcount = [], 0, -1
                        return self
                    cursor = raw.cursor()
                    cursor.row_factory = self.row_factory or (lambda cursor: tuple)
                    if many:
                        cursor.executemany(_translate(sql), [tuple(p) for p in params])
                    else:
                        cursor.execute(_translate(sql), tuple(params))
                    self._rows, self._next = (cursor.fetchall() if cursor.description else []), 0
                    self._rowcount = int(cursor.rowcount)
                    self._connection.count(cursor)
                return self
            except psycopg.OperationalError:
                # a connection the server closed since its last use (a restart, a failover):
                # what it cannot have done is run again once on another, and only that
                if attempt == 2 or not (self._connection.broke and _RETRYABLE.match(sql)):
                    raise
        raise AssertionError("unreachable")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement (``?`` parameters)."""
        return self._run(sql, params, many=False)

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> Cursor:
        """Run one statement for every parameter tuple of ``seq``."""
        return self._run(sql, seq, many=True)

    @property
    def rowcount(self) -> int:
        """Rows the last statement changed (or returned)."""
        return self._rowcount

    def fetchone(self) -> Any:
        """The next row, or None."""
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        rows = self._rows[self._next:] if self._next else self._rows
        self._rows, self._next = [], 0
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class Connection:
    """One thread's use of the store's pool, in the sqlite3 connection's shape (see the
    module docstring): :attr:`raw` is the psycopg connection held for an open transaction,
    None between transactions."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.raw: Any = None
        #: whether the last statement's connection broke under it
        self.broke = False
        #: whether the open transaction is read-only (a snapshot)
        self.read_only = False
        #: rows changed by the statements run so far (INSERT, UPDATE, DELETE)
        self.total_changes = 0

    @contextmanager
    def statement(self, sql: str) -> Iterator[Any | None]:
        """The psycopg connection to run ``sql`` on: the transaction's, else one borrowed
        for this statement; ``BEGIN`` keeps it, ``COMMIT`` and ``ROLLBACK`` give it back.
        None for a ``ROLLBACK``, or the ``COMMIT`` of a read-only transaction, on a broken
        connection: its transaction is gone already, and the error that broke it is the one
        to report (a write's ``COMMIT`` on a broken connection fails: it may not have happened)."""
        word = (m.group(1).upper() if (m := _TRANSACTION.match(sql)) else "")
        self.broke = False
        if self.raw is None:
            raw = self._borrow()
            try:
                yield raw
            except BaseException:
                self.broke = bool(raw.broken)
                self.pool.putconn(raw)
                if self.broke:  # the server dropped it: likely the others too (a restart)
                    self.pool.check()
                raise
            if word == "BEGIN":
                self.raw = raw
                self.read_only = "READ ONLY" in sql.upper()
            else:
                self.pool.putconn(raw)
            return
        if word in ("COMMIT", "ROLLBACK"):
            raw, self.raw = self.raw, None
            try:
                gone = raw.broken or raw.closed
                yield None if gone and (word == "ROLLBACK" or self.read_only) else raw
            finally:
                self.pool.putconn(raw)
            return
        yield self.raw

    def _borrow(self) -> Any:
        """A connection from the pool; :class:`StoreError` when none is free within the
        pool's timeout (:data:`POOL_TIMEOUT_S`) or the database cannot be reached."""
        from psycopg_pool import PoolTimeout

        deadline = time.monotonic() + self.pool.timeout
        while True:  # asking again every few seconds makes a pool that gave up reconnecting try again
            try:
                return self.pool.getconn(timeout=max(0.01, min(ASK_AGAIN_S, deadline - time.monotonic())))
            except PoolTimeout as exc:
                if time.monotonic() < deadline:
                    continue
                error = exc
                break
        raise StoreError(f"no connection to the store was free within {self.pool.timeout:g} s "
                             f"({self.pool.max_size} at most, CITEWELL_PG_POOL_SIZE) or the database cannot be "
                             f"reached ({self.pool.name})") from error

    def count(self, cursor: Any) -> None:
        """Add the rows a statement changed to :attr:`total_changes`."""
        status = (cursor.statusmessage or "").split(" ", 1)[0]
        if status in ("INSERT", "UPDATE", "DELETE", "MERGE") and cursor.rowcount > 0:
            self.total_changes += cursor.rowcount

    def cursor(self) -> Cursor:
        """A new cursor."""
        return Cursor(self)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement on a new cursor."""
        return self.cursor().execute(sql, params)

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> Cursor:
        """Run one statement for every parameter tuple, on a new cursor."""
        return self.cursor().executemany(sql, seq)

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open."""
        return self.raw is not None


def _configure(raw: Any) -> None:
    """Settings of a new pooled connection: :data:`LOCK_TIMEOUT_S`."""
    raw.execute(f"SET lock_timeout = '{int(LOCK_TIMEOUT_S * 1000)}ms'")


def _check(raw: Any) -> None:
    """Before a connection is lent: drop a broken one; ping one idle for :data:`IDLE_CHECK_S`
    (raising makes the pool replace it)."""
    if raw.broken or raw.closed:
        raise OSError("connection broken")
    last = getattr(raw, "_citewell_used", 0.0)
    now = time.monotonic()
    if now - last > IDLE_CHECK_S:
        raw.execute("")
    raw._citewell_used = now


def connect_kwargs(url: str) -> dict[str, Any]:
    """psycopg's connection arguments for the store at ``url``: autocommit, and
    :data:`APPLICATION_NAME` unless the URL names the application (how ``pg_stat_activity``
    shows the store's connections)."""
    from psycopg.conninfo import conninfo_to_dict

    kwargs: dict[str, Any] = {"autocommit": True}
    if "application_name" not in conninfo_to_dict(url):
        kwargs["application_name"] = APPLICATION_NAME
    return kwargs


def pool_size() -> int:
    """:data:`POOL_SIZE`, or ``CITEWELL_PG_POOL_SIZE`` when set (raises :class:`StoreError`
    when it is not a positive integer)."""
    value = os.environ.get("CITEWELL_PG_POOL_SIZE", "").strip()
    if not value:
        return POOL_SIZE
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise StoreError(f"CITEWELL_PG_POOL_SIZE must be a positive integer, not {value!r}")
    return int(value)


class PostgresConnections(SQLBase):
    """The connection hooks of :class:`~citewell.store.sqlbase.SQLBase` on one PostgreSQL
    database (``url``, a ``postgresql://`` URL), and PostgreSQL's spelling of the few SQL
    forms the databases spell differently."""

    url: str
    location: str
    _local: threading.local
    _INSERTION_ORDER = "created_at, id"
    _BYTE_ORDER = ' COLLATE "C"'
    _IS = "IS NOT DISTINCT FROM"
    _NO_LIMIT = None
    _LOOKUP_JOIN = "JOIN"
    _BEGIN_WRITE = "BEGIN"
    _BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    _BUMP_SQL = ("INSERT INTO meta VALUES (?, '1') ON CONFLICT (key) DO UPDATE "
                 "SET value = (CAST(meta.value AS BIGINT) + 1)::text")

    @staticmethod
    def _json_int(column: str, key: str) -> str:
        return (f"(CASE jsonb_typeof(({column})::jsonb -> '{key}') WHEN 'number' "
                f"THEN (({column})::jsonb ->> '{key}')::bigint END)")

    @staticmethod
    def _insert_rowid(conn: Any, sql: str, values: Sequence[Any]) -> int:
        return int(conn.execute(sql + " RETURNING rowid", values).fetchone()[0])

    def _pool(self) -> Any:
        """The store's connection pool, opened on first use (again after :meth:`close`)."""
        with self._pool_lock:
            if self._pool_object is None:
                from psycopg_pool import ConnectionPool

                self._pool_object = ConnectionPool(
                    self.url, min_size=1, max_size=pool_size(), timeout=POOL_TIMEOUT_S,
                    kwargs=connect_kwargs(self.url),
                    configure=_configure, check=_check, name=f"citewell {self.location}", open=True,
                    reconnect_timeout=RECONNECT_S)
                # a store dropped without close() closes its pool then, on the thread that
                # dropped it (left to the garbage collector, the pool may be collected on one
                # of its own threads, which cannot stop themselves)
                weakref.finalize(self, self._pool_object.close)
            return self._pool_object

    def _conn(self) -> Connection:  # type: ignore[override]
        pool = self._pool()
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.pool is not pool:
            conn = Connection(pool)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close the store's connections (a later call opens the pool again)."""
        with self._pool_lock:
            pool, self._pool_object = self._pool_object, None
        if pool is not None:
            pool.close()
        self._local.conn = None
