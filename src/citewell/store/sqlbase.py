"""What every concern of the SQL store shares: rows to records, and the connection hooks.

The concern mixins (:mod:`~citewell.store.keys`, :mod:`~citewell.store.events`,
:mod:`~citewell.store.resources`, :mod:`~citewell.store.uploads`,
:mod:`~citewell.store.search`, :mod:`~citewell.store.vectors`,
:mod:`~citewell.store.chats`, :mod:`~citewell.store.mentions`) hold the SQL that is the
same for every database; they reach the database only through the hooks declared here,
which a dialect implements (:mod:`citewell.store.sqlite.connection` for SQLite):
``_conn`` (this thread's connection), ``_write`` (one write transaction, bumping a
generation counter of :mod:`~citewell.store.searchcache` when it changed a row),
``_snapshot`` (one read transaction), ``_generation`` and ``_bump``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..models import Chunk, Passage, Resource, utcnow
from .searchcache import (HIT_CACHE_BYTES, MASK_CACHE_BYTES, SEARCH, TERM_CACHE_BYTES, VECTORS, GenerationCache, Scope,
                          SumMemo, TermScores, VectorScope, vector_cache_bytes)

#: Every column of ``resources`` but ``extracted_text`` (megabytes for a long filing): rows
#: are read on every question, the text only by ``resource_text``.
RESOURCE_COLUMNS = ("id, workspace_id, sha256, title, file_name, kind, media_type, size_bytes, blob_key, status, "
                    "error_code, error_message, warnings, metadata, custom_metadata, extractor_version, "
                    "chunk_count, created_at, updated_at")


def now() -> str:
    """The current UTC time as stored (ISO 8601 with offset)."""
    return utcnow().isoformat()


def parse_time(value: str | None) -> datetime:
    """A stored time as an aware datetime (UTC when stored without offset; now for none)."""
    if not value:
        return utcnow()
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def index_title(title: str, metadata: dict[str, Any]) -> str:
    """What the lexical index holds as a chunk's title: the resource's title, company names
    and tickers, space-separated."""
    names = [title, *[str(v) for v in metadata.get("company_names") or []],
             *[str(v) for v in metadata.get("tickers") or []]]
    return " ".join(names)


class SQLBase:
    """Row conversion, transactions and generation counters every concern mixin uses (see
    the module docstring); a dialect's connection class provides ``_conn`` (and
    ``_local``, the thread-local holding it) and its spellings below."""

    if TYPE_CHECKING:
        import threading

        _local: threading.local

    #: the errors of the database driver (a write refused, a read-only file …)
    _DB_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error,)
    #: ``ORDER BY`` of a table's rows in insertion order (SQLite's rowid)
    _INSERTION_ORDER = "rowid"
    #: what follows a text column in ``ORDER BY`` so that text orders by code point on every
    #: database (SQLite's default BINARY collation; PostgreSQL's ``"C"``, whatever the
    #: database's own collation): file paths list the same way on both stores
    _BYTE_ORDER = ""
    #: null-safe equality (SQLite's ``IS``; ``IS NOT DISTINCT FROM`` elsewhere)
    _IS = "IS"
    #: the ``LIMIT`` parameter that means no limit
    _NO_LIMIT: int | None = -1
    #: an inner join whose left table drives the plan (SQLite's ``CROSS JOIN``: the vectors
    #: are looked up by their key, never walked)
    _LOOKUP_JOIN = "CROSS JOIN"

    @staticmethod
    def _json_int(column: str, key: str) -> str:
        """SQL of the value of ``key`` of the JSON object in text ``column`` (an integer
        where it is one; NULL when missing)."""
        return f"json_extract({column}, '$.{key}')"

    @staticmethod
    def _insert_rowid(conn: sqlite3.Connection, sql: str, values: Sequence[Any]) -> int:
        """Run ``INSERT`` ``sql`` of one row and return the row's ``rowid``."""
        rowid = conn.execute(sql, values).lastrowid
        assert rowid is not None
        return rowid

    #: what begins a write transaction (SQLite's ``BEGIN IMMEDIATE`` takes the write lock at once)
    _BEGIN_WRITE = "BEGIN IMMEDIATE"
    #: what begins a read transaction on one snapshot (SQLite's WAL snapshot)
    _BEGIN_READ = "BEGIN"
    #: the upsert that moves a generation counter (parameter: its ``meta`` key)
    _BUMP_SQL = ("INSERT INTO meta VALUES (?, '1') ON CONFLICT (key) DO UPDATE "
                 "SET value = CAST(value AS INTEGER) + 1")

    def _open_caches(self) -> None:
        """Make the store's in-process retrieval caches (:mod:`~citewell.store.searchcache`),
        the same on every database: full-text term -> :class:`TermScores`
        (:data:`TERM_CACHE_BYTES`); workspace -> :class:`Scope`; workspace -> no other
        workspace has a chunk; (workspace, words) -> document frequency; (workspace, under)
        -> ready resources; (workspace, conditions, under) -> resource ids; (workspace,
        model, matrix?) -> :class:`VectorScope` (:func:`vector_cache_bytes`); (workspace,
        resource ids) -> the scope's row mask (:data:`MASK_CACHE_BYTES`); chunk row of a
        ready resource -> ``(workspace id, chunk id, resource id, text)``
        (:data:`HIT_CACHE_BYTES`). The term scores and rows span every workspace (the
        store-wide generation); the rest are a workspace's own (its generations, so
        another workspace's writes keep them)."""
        self._terms: GenerationCache[TermScores] = GenerationCache(TERM_CACHE_BYTES, lambda t: t.nbytes)
        self._scopes: GenerationCache[Scope] = GenerationCache(64, per_key=True)
        self._alone: GenerationCache[bool] = GenerationCache(1024)
        self._dfs: GenerationCache[int] = GenerationCache(200_000, per_key=True)
        self._ranking_resources: GenerationCache[tuple[Resource, ...]] = GenerationCache(64, per_key=True)
        self._resource_sets: GenerationCache[set[str]] = GenerationCache(4096, per_key=True)
        self._vectors: GenerationCache[VectorScope] = GenerationCache(vector_cache_bytes(), lambda v: v.nbytes,
                                                                       per_key=True)
        self._masks: GenerationCache[np.ndarray] = GenerationCache(MASK_CACHE_BYTES, lambda m: m.nbytes,
                                                                   per_key=True)
        self._uncached: set[tuple[str, str]] = set()
        self._hit_rows: GenerationCache[tuple[str, str, str, str]] = GenerationCache(
            HIT_CACHE_BYTES, lambda row: 400 + 4 * len(row[3]))

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (dialect)."""
        raise NotImplementedError

    @contextmanager
    def _write(self, *, bump: str | None = None, workspace: str | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction (:attr:`_BEGIN_WRITE`); ``bump``: the generation counter
        (``SEARCH``, ``VECTORS``) this write moves, store-wide and (``workspace``) the
        workspace's own, incremented in the same transaction when it changed a row (a sync
        that finds nothing new keeps the caches)."""
        conn = self._conn()
        conn.execute(self._BEGIN_WRITE)
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

    def _bump(self, conn: sqlite3.Connection, counter: str, workspace: str | None = None) -> None:
        """Move the generation ``counter`` (``SEARCH``, ``VECTORS``) inside the open write:
        store-wide, and the workspace's own when ``workspace`` is given."""
        for key in (counter, *([f"{counter}:{workspace}"] if workspace is not None else [])):
            conn.execute(self._BUMP_SQL, (key,))

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction (:attr:`_BEGIN_READ`): every read inside sees one state of the
        store, the generation counters included (so :meth:`_generation` reads each counter
        once per snapshot). Inside a transaction already open, that one."""
        conn = self._conn()
        if conn.in_transaction:
            yield conn
            return
        conn.execute(self._BEGIN_READ)
        self._local.counters = {}
        self._local.sums = SumMemo()  # term sums a later ranking of the snapshot may reuse
        self._local.masks = {}  # the snapshot's masks of listed resources (Search._cached_ranking)
        try:
            yield conn
        finally:
            self._local.counters = self._local.sums = self._local.masks = None
            conn.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One :meth:`_snapshot` for a block of reads (see :meth:`Store.reading`)."""
        with self._snapshot():
            yield

    def _generation(self, conn: sqlite3.Connection, *keys: str) -> tuple[int, ...]:
        """The counters ``keys`` (``SEARCH``, ``VECTORS``) as stored now (0 when never bumped).
        Inside a :meth:`_snapshot` they cannot change: each is read once, and the first read
        brings the store-wide counters along (the reads of a search need both its
        workspace's and the store's), one round trip instead of one per call."""
        counters: dict[str, int] | None = getattr(self._local, "counters", None)
        if counters is None:
            return self._read_counters(conn, keys)
        missing = [k for k in keys if k not in counters]
        if missing:
            wanted = tuple(dict.fromkeys([*missing, *([SEARCH, VECTORS] if not counters else [])]))
            counters.update(zip(wanted, self._read_counters(conn, wanted)))
        return tuple(counters[k] for k in keys)

    @staticmethod
    def _read_counters(conn: sqlite3.Connection, keys: Sequence[str]) -> tuple[int, ...]:
        """The counters ``keys`` read from table ``meta`` (0 when never bumped)."""
        rows = dict((row[0], row[1]) for row in conn.execute(
            f"SELECT key, value FROM meta WHERE key IN ({','.join('?' * len(keys))})", tuple(keys)).fetchall())
        return tuple(int(rows.get(k, 0)) for k in keys)

    def _ws_generation(self, conn: sqlite3.Connection, workspace_id: str, *keys: str) -> tuple[int, ...]:
        """A workspace's own counters ``keys`` (``SEARCH``, ``VECTORS``), 0 when never bumped."""
        return self._generation(conn, *(f"{k}:{workspace_id}" for k in keys))

    def close(self) -> None:
        """Close this thread's connection (other threads' close when they end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    _PASSAGE_SELECT = ("SELECT c.*, r.title AS r_title, r.kind AS r_kind, r.file_name AS r_file_name "
                       "FROM chunks c JOIN resources r ON r.id = c.resource_id ")

    def _resource_from_row(self, row: sqlite3.Row, paths: list[str] | None = None) -> Resource:
        error = {"code": row["error_code"], "message": row["error_message"]} if row["error_code"] else None
        return Resource(
            id=row["id"], workspace_id=row["workspace_id"], title=row["title"], file_name=row["file_name"],
            kind=row["kind"], media_type=row["media_type"], sha256=row["sha256"], size_bytes=row["size_bytes"],
            blob_key=row["blob_key"], status=row["status"], error=error, warnings=json.loads(row["warnings"]),
            metadata=json.loads(row["metadata"]),
            custom_metadata=json.loads(row["custom_metadata"]) if row["custom_metadata"] else None,
            extractor_version=row["extractor_version"], chunk_count=row["chunk_count"],
            paths=paths or [], created_at=parse_time(row["created_at"]), updated_at=parse_time(row["updated_at"]))

    @staticmethod
    def _chunk_from_row(row: sqlite3.Row) -> Chunk:
        return Chunk(id=row["id"], resource_id=row["resource_id"], chunk_index=row["chunk_index"],
                     text=row["text"], text_type=row["text_type"], char_start=row["char_start"],
                     char_end=row["char_end"], metadata=json.loads(row["metadata"]))

    def _passage_from_row(self, row: sqlite3.Row, score: float = 0.0, rank: int = 0) -> Passage:
        return Passage(chunk=self._chunk_from_row(row), resource_title=row["r_title"],
                       resource_kind=row["r_kind"], file_name=row["r_file_name"], score=score, rank=rank)

    def _paths(self, conn: sqlite3.Connection, resource_ids: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for i in range(0, len(resource_ids), 500):
            batch = list(resource_ids[i:i + 500])
            marks = ",".join("?" * len(batch))
            # a UNION orders by its output columns only: the collation goes on the outer query
            for row in conn.execute(f"SELECT resource_id, last_resource_id, path FROM (SELECT resource_id, "
                                    f"last_resource_id, path FROM files WHERE present = 1 AND resource_id IN ({marks}) "
                                    f"UNION SELECT resource_id, last_resource_id, path FROM files WHERE present = 1 "
                                    f"AND last_resource_id IN ({marks})) AS u ORDER BY path{self._BYTE_ORDER}",
                                    batch + batch):
                for rid in {row["resource_id"], row["last_resource_id"]}:
                    if rid in batch:
                        out.setdefault(rid, []).append(row["path"])
        return out

    def _chunk_rows(self, conn: sqlite3.Connection, workspace_id: str, column: str,
                    keys: Sequence[Any]) -> tuple[dict[Any, sqlite3.Row], dict[str, Mapping[str, Any]]]:
        """The workspace's chunk rows whose ``column`` (``id`` or ``rowid``) is one of ``keys``, by
        key, and the ``(id, title, kind, file_name, status)`` rows of their resources, by id
        (:meth:`_resource_rows`). Two lookups: a join reading both tables row by row is
        several times slower."""
        rows: dict[Any, sqlite3.Row] = {}
        for i in range(0, len(keys), 500):
            batch = list(keys[i:i + 500])
            rows.update((row[column], row) for row in conn.execute(
                f"SELECT c.* FROM chunks c WHERE c.{column} IN ({','.join('?' * len(batch))}) "
                "AND c.workspace_id = ?", [*batch, workspace_id]))
        return rows, self._resource_rows(conn, workspace_id, list({row["resource_id"] for row in rows.values()}))

    def _resource_rows(self, conn: sqlite3.Connection, workspace_id: str,
                       ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        """The ``(id, title, kind, file_name, status)`` rows of resources ``ids``, by id (ids of
        no resource are absent), read from the table, 500 at a time."""
        resources: dict[str, Mapping[str, Any]] = {}
        for i in range(0, len(ids), 500):
            batch = ids[i:i + 500]
            marks = ",".join("?" * len(batch))
            resources.update((row["id"], row) for row in conn.execute(
                f"SELECT id, title, kind, file_name, status FROM resources WHERE id IN ({marks})", batch))
        return resources

    def _passage(self, row: sqlite3.Row, resource: sqlite3.Row, score: float = 0.0, rank: int = 0) -> Passage:
        """A passage from a chunk row and its resource's row (see :meth:`_chunk_rows`)."""
        return Passage(chunk=self._chunk_from_row(row), resource_title=resource["title"],
                       resource_kind=resource["kind"], file_name=resource["file_name"], score=score,
                       rank=rank)

