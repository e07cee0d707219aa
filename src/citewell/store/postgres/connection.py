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
(:data:`POOL_TIMEOUT_S` at most, then ``STORE_ERROR`` naming ``CITEWELL_PG_POOL_SIZE``)
when all are in use. Nothing is kept on a connection between transactions (settings are
``SET LOCAL``, locks ``pg_advisory_xact_lock``). A connection that has been idle for a
while is checked before it is lent, and a broken one is dropped and replaced (with every
idle one checked then: a server restart drops them all), so a restart costs the
statements in flight, not the process; a read or a ``BEGIN`` whose connection turns out
broken runs again once.

**When the database is down** the store says so at once, with
:class:`~citewell.errors.StoreUnavailable` (``STORE_UNAVAILABLE``), rather than after the
pool's timeout: every connection attempt of the pool is watched (:class:`Health`). For
:data:`FAIL_FAST_S` after a failed attempt (and none succeeded since) a borrow fails
without waiting; a thread already waiting for a connection stops waiting as soon as an
attempt fails (it looks every :data:`ASK_AGAIN_S`); a pool timeout while the last attempt
had failed is ``STORE_UNAVAILABLE`` too. A statement whose connection was lost and that
cannot run again (a write, or anything inside a transaction, which is then rolled back)
is ``STORE_UNAVAILABLE`` as well. Recovery needs nothing: once the fail-fast time has
passed, the next borrow makes the pool try again, and the first attempt that succeeds
ends the outage for every thread.

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

from ...errors import StoreError, StoreUnavailable
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
#: seconds between a waiting thread's requests to the pool (each may start a new attempt),
#: and so how late a waiting thread learns that a connection attempt failed
ASK_AGAIN_S = 0.5
#: seconds after a failed connection attempt (none having succeeded since) during which a
#: borrow fails at once with ``STORE_UNAVAILABLE`` instead of waiting for the pool; the
#: first borrow after it asks the pool again (so the store notices the database's return)
FAIL_FAST_S = 2.0
#: seconds a connection attempt may take (psycopg's ``connect_timeout``, unless the URL
#: sets one): an unreachable host fails the attempt instead of hanging on TCP's timeout
CONNECT_TIMEOUT_S = 10
#: what ``STORE_UNAVAILABLE`` tells a caller to wait before asking again (HTTP ``Retry-After``)
RETRY_AFTER_S = 5.0
#: the ``application_name`` of the store's connections, unless the URL gives one
APPLICATION_NAME = "citewell"
#: a connection idle for longer is checked (one empty query) before it is lent
IDLE_CHECK_S = 5.0
_PARAM = re.compile(r"\?")
_TRANSACTION = re.compile(r"\s*(BEGIN|COMMIT|ROLLBACK)\b", re.IGNORECASE)
#: statements that may run again after their connection broke outside a transaction (they
#: change nothing: a read, or the start of a transaction)
_RETRYABLE = re.compile(r"\s*(SELECT|WITH|BEGIN)\b", re.IGNORECASE)


def first_line(exc: BaseException) -> str:
    """The first line of an error's text (psycopg's connection errors add hints below),
    or its type's name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Health:
    """What the pool's connection attempts say about the database at ``location`` (its URL
    without a password), shared by the pool's threads, which record the attempts, and the
    borrowing threads, which read them (see the module docstring).

    ``failed_at``: the monotonic time (s) of the last failed attempt when none has
    succeeded since, else None (reachable, as far as the pool knows); ``failures`` and
    ``attempts``: how many attempts failed and were made so far; ``reason``: the last
    failure's first line."""

    def __init__(self, location: str) -> None:
        self.location = location
        self._lock = threading.Lock()
        self.failed_at: float | None = None
        self.failures = 0
        self.attempts = 0
        self.reason = ""

    def attempted(self) -> None:
        """A connection attempt starts."""
        with self._lock:
            self.attempts += 1

    def failed(self, exc: BaseException) -> None:
        """A connection attempt failed with ``exc``."""
        with self._lock:
            self.failed_at = time.monotonic()
            self.failures += 1
            self.reason = first_line(exc)

    def connected(self) -> None:
        """A connection attempt succeeded: the database is reachable."""
        with self._lock:
            self.failed_at = None

    def down(self, within_s: float) -> bool:
        """Whether an attempt failed less than ``within_s`` seconds ago and none succeeded since."""
        failed_at = self.failed_at
        return failed_at is not None and time.monotonic() - failed_at < within_s

    def unavailable(self, what: str | None = None) -> StoreUnavailable:
        """The error of a borrow or statement that met the outage: ``what`` happened (default:
        the last failed attempt's reason)."""
        return StoreUnavailable(f"the database of the store {self.location} cannot be reached right now "
                                f"({what or self.reason or 'connection failed'}); try again in a few seconds",
                                retry_after_s=RETRY_AFTER_S)


def connection_class(health: Health) -> type[Any]:
    """A ``psycopg.Connection`` subclass whose :meth:`connect` (the pool's way of opening a
    connection) records each attempt and its outcome in ``health``."""
    import psycopg

    class WatchedConnection(psycopg.Connection):  # type: ignore[type-arg]
        """A psycopg connection whose opening is reported to the store's :class:`Health`."""

        @classmethod
        def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:  # type: ignore[override]
            """``psycopg.Connection.connect``, recorded: raises what it raises."""
            health.attempted()
            try:
                conn = super().connect(conninfo, **kwargs)
            except Exception as exc:
                health.failed(exc)
                raise
            health.connected()
            return conn

    return WatchedConnection


class Row(tuple):  # noqa: SLOT001 - a tuple with names, like sqlite3.Row
    """A result row read by position (``row[0]``) or by column name (``row["id"]``);
    ``dict(row)`` gives ``{name: value}``."""

    names: tuple[str, ...] = ()
    #: each column name's position (the first, for a name given twice, as ``names.index``)
    positions: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self.positions[key])
            except KeyError:
                raise IndexError(f"no column {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self.names)


@lru_cache(maxsize=1024)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    """The :class:`Row` class of results with columns ``names`` (made once per column list,
    not once per query)."""
    positions: dict[str, int] = {}
    for i, name in enumerate(names):
        positions.setdefault(name, i)
    return type("Row", (Row,), {"names": names, "positions": positions})


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
        rows; again once on another connection when a read or ``BEGIN`` outside a
        transaction met a dropped one. :class:`StoreUnavailable` when the connection was
        lost otherwise (or again), or none could be had; other psycopg errors as raised."""
        import psycopg

        for attempt in (1, 2):
            outside = not self._connection.in_transaction  # a statement of its own (or a BEGIN)
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
            except psycopg.OperationalError as exc:
                # a connection the server closed since its last use (a restart, a failover):
                # what it cannot have done is run again once on another, and only that
                broke = self._connection.broke
                if attempt == 1 and broke and outside and _RETRYABLE.match(sql):
                    continue
                if broke:  # lost, and not to be run again: the database is away (or was, a moment)
                    raise self._connection.health.unavailable(
                        f"the connection was lost: {first_line(exc)}") from exc
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
    """One thread's use of the store's pool (``pool``, whose connection attempts ``health``
    records), in the sqlite3 connection's shape (see the module docstring): :attr:`raw` is
    the psycopg connection held for an open transaction, None between transactions."""

    def __init__(self, pool: Any, health: Health) -> None:
        self.pool = pool
        #: what the pool's connection attempts say about the database
        self.health = health
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
        to report (a write's ``COMMIT`` on a broken connection fails: it may not have happened).
        :attr:`broke` tells afterwards whether the statement's connection was lost.
        :class:`StoreUnavailable` or :class:`StoreError` when no connection can be had
        (:meth:`_borrow`)."""
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
            except BaseException:
                self.broke = bool(raw.broken or raw.closed)
                raise
            finally:
                self.pool.putconn(raw)
            return
        raw = self.raw
        try:
            yield raw
        except BaseException:
            self.broke = bool(raw.broken or raw.closed)
            raise

    def _borrow(self) -> Any:
        """A connection from the pool. :class:`StoreUnavailable` at once while the database
        is known to be unreachable (a connection attempt failed less than
        :data:`FAIL_FAST_S` ago and none succeeded since), as soon as an attempt fails while
        this thread waits, or when the pool's timeout (:data:`POOL_TIMEOUT_S`) passes after
        a failed attempt; :class:`StoreError` (``STORE_ERROR``, naming
        ``CITEWELL_PG_POOL_SIZE``) when the timeout passes with every connection in use."""
        from psycopg_pool import PoolTimeout

        health = self.health
        if health.down(FAIL_FAST_S):
            raise health.unavailable()
        failures = health.failures
        deadline = time.monotonic() + self.pool.timeout
        while True:  # asking again every moment makes a pool that gave up reconnecting try again
            try:
                return self.pool.getconn(timeout=max(0.01, min(ASK_AGAIN_S, deadline - time.monotonic())))
            except PoolTimeout as exc:
                if health.failed_at is not None and health.failures != failures:
                    raise health.unavailable() from exc  # an attempt failed while this thread waited
                if time.monotonic() < deadline:
                    continue
                error = exc
                break
        if health.failed_at is not None:
            raise health.unavailable() from error
        raise StoreError(f"no connection to the store was free within {self.pool.timeout:g} s "
                         f"({self.pool.max_size} at most, CITEWELL_PG_POOL_SIZE): every one stayed in use "
                         f"({self.pool.name})") from error

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
    """psycopg's connection arguments for the store at ``url``: autocommit,
    :data:`APPLICATION_NAME` unless the URL names the application (how ``pg_stat_activity``
    shows the store's connections) and :data:`CONNECT_TIMEOUT_S` unless it sets
    ``connect_timeout``."""
    from psycopg.conninfo import conninfo_to_dict

    kwargs: dict[str, Any] = {"autocommit": True}
    given = conninfo_to_dict(url)
    if "application_name" not in given:
        kwargs["application_name"] = APPLICATION_NAME
    if "connect_timeout" not in given:
        kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
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
    #: what the pool's connection attempts say about the database (made with the pool)
    _health: Health
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

                self._health = Health(self.location)
                self._pool_object = ConnectionPool(
                    self.url, min_size=1, max_size=pool_size(), timeout=POOL_TIMEOUT_S,
                    kwargs=connect_kwargs(self.url), connection_class=connection_class(self._health),
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
            conn = Connection(pool, self._health)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close the store's connections (a later call opens the pool again)."""
        with self._pool_lock:
            pool, self._pool_object = self._pool_object, None
        if pool is not None:
            pool.close()
        self._local.conn = None
