"""PostgreSQL connections and locks (a dialect piece of the store).

One psycopg connection per thread, in autocommit mode with transactions begun here:
every write is one ``BEGIN … COMMIT`` (rows are locked by the statements themselves;
uniqueness constraints make concurrent writers of the same content converge, as on
SQLite), every consistent read one ``REPEATABLE READ READ ONLY`` transaction (a snapshot,
like SQLite's WAL read). The generation counters of :mod:`~citewell.store.searchcache`
live in table ``meta`` as on SQLite.

The concern modules speak the SQL both databases share, with ``?`` parameters and rows
read by name or position; :class:`Connection` is the thin layer that gives a psycopg
connection that shape (``?`` becomes ``%s``; :class:`Row` is read by name or position like
``sqlite3.Row``; ``total_changes`` counts the rows the statements changed, which is how a
write knows whether to bump a generation).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from ...errors import StoreError
from ..sqlbase import SQLBase

#: seconds a statement waits for a row lock before failing (SQLite's busy timeout)
LOCK_TIMEOUT_S = 30.0
_PARAM = re.compile(r"\?")


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
    """A psycopg cursor in the sqlite3 cursor's shape: ``execute``, ``fetchone``,
    ``fetchall``, iteration, ``rowcount``; ``row_factory = None`` reads plain tuples."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._cursor = connection.raw.cursor()
        self.row_factory: Any = _row_factory

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement (``?`` parameters)."""
        self._cursor.row_factory = self.row_factory or (lambda cursor: tuple)
        self._cursor.execute(_translate(sql), tuple(params))
        self._connection.count(self._cursor)
        return self

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> Cursor:
        """Run one statement for every parameter tuple of ``seq``."""
        self._cursor.executemany(_translate(sql), [tuple(p) for p in seq])
        self._connection.count(self._cursor)
        return self

    @property
    def rowcount(self) -> int:
        """Rows the last statement changed (or returned)."""
        return int(self._cursor.rowcount)

    def fetchone(self) -> Any:
        """The next row, or None."""
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        return self._cursor.fetchall() if self._cursor.description else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class Connection:
    """One psycopg connection in the sqlite3 connection's shape (see the module docstring)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        #: rows changed by the statements run so far (INSERT, UPDATE, DELETE)
        self.total_changes = 0

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
        from psycopg.pq import TransactionStatus

        return bool(self.raw.info.transaction_status != TransactionStatus.IDLE)

    def close(self) -> None:
        """Close the connection."""
        self.raw.close()


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

    def _conn(self) -> Connection:  # type: ignore[override]
        conn = getattr(self._local, "conn", None)
        if conn is None:
            import psycopg

            try:
                raw = psycopg.connect(self.url, autocommit=True)
                raw.execute(f"SET lock_timeout = '{int(LOCK_TIMEOUT_S * 1000)}ms'")
            except psycopg.Error as exc:
                raise StoreError(f"cannot open the store {self.location}: {exc}") from exc
            conn = Connection(raw)
            self._local.conn = conn
        return conn
