"""Chunk vectors (schema v8): keyed by workspace and the sha256 of a chunk's text.

Identical text is embedded once per workspace, and no workspace can learn from its
coverage what text another holds. This concern finds what still needs a vector, stores
vectors and reads them by chunk. Ranking is the vector index's (a dialect piece that
provides ``nearest_chunks``): exact ranking of a cached numpy matrix on SQLite
(:mod:`citewell.store.sqlite.vectors`), pgvector's HNSW index on PostgreSQL
(:mod:`citewell.store.postgres.vectors`). A dialect whose index keeps a copy of each
vector in a column of its own names it in :meth:`Vectors._index_columns`, and
:meth:`Vectors.put_vectors` fills it in the same statement.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any, Protocol, Sequence

import numpy as np

from ..errors import StoreError
from .filters import CHUNK_KEYS, filter_sql, under_sql
from .records import Condition
from .searchcache import SEARCH, VECTORS, GenerationCache, VectorScope, select
from .sqlbase import SQLBase

log = logging.getLogger("citewell.store")


class VectorStore(Protocol):
    """Chunk vectors by workspace and text hash: what still needs one, storing them,
    reading them and the dense ranking (the vectors concern of
    :class:`~citewell.store.base.Store`). Vectors are float32 bytes of a model's dimension;
    scopes (``conditions``, ``under``) are those of
    :meth:`~citewell.store.search.SearchStore.search_text`."""

    # -- chunk vectors (schema v8) -----------------------------------------------------
    # Vectors are keyed by workspace and the sha256 of a chunk's text: identical text is
    # embedded once per workspace, and no workspace can learn from its coverage what text
    # another holds.
    def texts_without_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                              under: str | None = None, limit: int | None = None,
                              shortest_first: bool = False) -> list[tuple[str, str]]:
        """``(text_hash, text)`` of the distinct texts of searchable chunks in scope (as
        :meth:`search_text`) that have no ``model`` vector yet, in chunk order (shortest
        first with ``shortest_first``); at most ``limit``."""
        ...

    def missing_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> int:
        """How many distinct texts :meth:`texts_without_vectors` would give (none is read)."""
        ...

    def vector_coverage(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> tuple[int, int]:
        """``(embedded, total)`` searchable chunks in scope: with a ``model`` vector, and all."""
        ...

    def put_vectors(self, workspace_id: str, model: str, dim: int, vectors: Sequence[tuple[str, bytes]]) -> int:
        """Store the workspace's ``(text_hash, float32 bytes)`` vectors of ``model`` (``dim``
        floats each), only for texts some chunk of the workspace still has; returns how many
        were stored. Vectors are the workspace's own (schema v8): another workspace with the
        same text embeds it again, so no workspace can learn what another holds."""
        ...

    def scope_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                      under: str | None = None) -> list[tuple[str, bytes]]:
        """``(chunk_id, vector bytes)`` of the searchable chunks in scope that have a ``model`` vector."""
        ...

    def nearest_chunks(self, workspace_id: str, model: str, query: np.ndarray, *, limit: int,
                       conditions: Sequence[Condition] = (), under: str | None = None) -> list[tuple[str, float]]:
        """Dense search: ``(chunk_id, cosine)`` of the ``limit`` searchable chunks in scope
        (``conditions``, ``under``: as :meth:`search_text`) whose ``model`` vectors are
        nearest to ``query`` (a float32 unit vector of the model's dimension), best first,
        ties in chunk order; fewer when fewer in scope have a vector, ``[]`` for
        ``limit`` ≤ 0. The vector index decides how: exact on SQLite (numpy over the
        scope), approximate on PostgreSQL (pgvector's HNSW index; the workspace and the
        filters applied in SQL, see ``docs/architecture.md``, "The store")."""
        ...

    def vectors(self, workspace_id: str, model: str, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        """Vector bytes of ``model`` for the given chunk ids of this workspace that have one."""
        ...


class Vectors(SQLBase):
    """Chunk vectors of a workspace (see the module docstring)."""

    _vectors: GenerationCache[VectorScope]
    #: (workspace, model) whose vectors were too many for the cache (warned once)
    _uncached: set[tuple[str, str]]

    # -- vector index hooks (dialect) ---------------------------------------------------
    def _index_columns(self, model: str, dim: int) -> tuple[str, str, str]:
        """The vector index's own columns of ``chunk_vectors`` that :meth:`put_vectors`
        fills: ``(", col …", ", <value SQL> …", ", col = excluded.col …")`` for the column
        list, the values (one ``?`` per column, bound by :meth:`_index_values`) and the
        upsert; none here (SQLite ranks the ``vector`` bytes)."""
        return "", "", ""

    def _index_values(self, blob: bytes) -> tuple[Any, ...]:
        """The parameters of :meth:`_index_columns`'s values for one vector's bytes."""
        return ()

    def _vector_scope(self, conn: sqlite3.Connection, workspace_id: str, model: str,
                      generation: tuple[int, ...], *, matrix: bool) -> VectorScope:
        """The workspace's searchable chunks for ``model`` (cached per search and vector
        generation): all of them with their ``embedded`` flags, or (``matrix``) only the
        embedded ones with their vectors."""
        def load() -> VectorScope:
            # chunks outside (CROSS JOIN on SQLite): the vectors are looked up by their key, never walked
            join = (self._LOOKUP_JOIN if matrix else "LEFT JOIN") + (" chunk_vectors v ON v.workspace_id = "
                                                                "c.workspace_id AND v.text_hash = c.text_hash "
                                                                "AND v.model = ?")
            scope, params = self._scope_sql(workspace_id, (), None, join)
            column = "v.vector" if matrix else "v.text_hash IS NOT NULL"
            cur = conn.cursor()
            cur.row_factory = None
            rows = cur.execute(f"SELECT c.id, c.resource_id, {column} {scope} ORDER BY c.rowid",
                               [model, *params]).fetchall()
            names: dict[str, int] = {}
            index = np.fromiter((names.setdefault(row[1], len(names)) for row in rows), dtype=np.int32,
                                count=len(rows))
            vectors = np.zeros((0, 0), dtype="<f4")
            if matrix:
                embedded = np.ones(len(rows), dtype=bool)
                if rows:
                    blobs = b"".join(row[2] for row in rows)
                    vectors = np.frombuffer(blobs, dtype="<f4").reshape(len(rows), -1)
            else:
                embedded = np.fromiter((bool(row[2]) for row in rows), dtype=bool, count=len(rows))
            found = VectorScope(tuple(row[0] for row in rows), index, tuple(names), embedded, vectors)
            if matrix and found.nbytes > self._vectors.budget and (workspace_id, model) not in self._uncached:
                self._uncached.add((workspace_id, model))
                log.warning("the %d vectors of workspace %s (%d MiB) exceed the vector cache (%d MiB): each "
                            "dense or hybrid question reads them from the store again; set "
                            "CITEWELL_VECTOR_CACHE_MB above that, or use a PostgreSQL store", len(rows),
                            workspace_id, found.nbytes >> 20, self._vectors.budget >> 20)
            return found

        return self._vectors.get(generation, (workspace_id, model, matrix), load)

    def nearest_chunks(self, workspace_id: str, model: str, query: np.ndarray, *, limit: int,
                       conditions: Sequence[Condition] = (), under: str | None = None) -> list[tuple[str, float]]:
        """The vector index's ranking (dialect; see :class:`~citewell.store.base.Store`)."""
        raise NotImplementedError

    # -- the Store methods --------------------------------------------------------------
    def _scope_sql(self, workspace_id: str, conditions: Sequence[Condition], under: str | None,
                   join: str = "") -> tuple[str, list[Any]]:
        """``FROM … WHERE …`` over the searchable chunks ``c`` (current version, ready
        resource ``r``) of the workspace matching ``conditions`` and folder ``under``:
        the chunks :meth:`search_text` can return. ``join`` goes before ``WHERE``."""
        folder, folder_params = under_sql(under)
        sql = (f"FROM chunks c JOIN resources r ON r.id = c.resource_id {join} WHERE c.workspace_id = ? "
               f"AND r.status = 'ready' AND c.version {self._IS} r.extractor_version" + folder)
        where, args = filter_sql(conditions)
        return sql + where, [workspace_id, *folder_params, *args]

    def texts_without_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                              under: str | None = None, limit: int | None = None,
                              shortest_first: bool = False) -> list[tuple[str, str]]:
        """``(text_hash, text)`` of the distinct texts of searchable chunks in scope (as
        :meth:`search_text`: ``conditions``, ``under``) without a ``model`` vector yet, in
        chunk order (a resource's chunks together), or shortest first (``shortest_first``,
        then chunk order); at most ``limit``."""
        scope, params = self._scope_sql(workspace_id, conditions, under)
        order = "length(min(c.text)), first" if shortest_first else "first"
        sql = (f"SELECT c.text_hash AS h, min(c.rowid) AS first, min(c.text) AS text {scope} AND NOT EXISTS "
               "(SELECT 1 FROM chunk_vectors v WHERE v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash "
               f"AND v.model = ?) GROUP BY c.text_hash ORDER BY {order}")
        params.append(model)
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [(row["h"], row["text"]) for row in self._conn().execute(sql, params)]

    def missing_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> int:
        """How many distinct texts :meth:`texts_without_vectors` would give (none is read)."""
        scope, params = self._scope_sql(workspace_id, conditions, under)
        sql = (f"SELECT count(DISTINCT c.text_hash) {scope} AND NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE "
               "v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash AND v.model = ?)")
        return int(self._conn().execute(sql, [*params, model]).fetchone()[0])

    def vector_coverage(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> tuple[int, int]:
        """``(embedded, total)``: searchable chunks in scope with a ``model`` vector, and all of them."""
        if not any(c.key in CHUNK_KEYS for c in conditions):
            with self._snapshot() as conn:
                generation = self._ws_generation(conn, workspace_id, SEARCH, VECTORS)
                scope = self._vector_scope(conn, workspace_id, model, generation, matrix=False)
                rows = select(scope.resource_index, scope.resource_ids,
                              self._scope_resources(conn, workspace_id, conditions, under))
            return int((rows & scope.embedded).sum()), int(rows.sum())
        join = "LEFT JOIN chunk_vectors v ON v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash " \
               "AND v.model = ?"
        scope, params = self._scope_sql(workspace_id, conditions, under, join)
        row = self._conn().execute(f"SELECT count(*) AS total, count(v.text_hash) AS embedded {scope}",
                                   [model, *params]).fetchone()
        return int(row["embedded"]), int(row["total"])

    def put_vectors(self, workspace_id: str, model: str, dim: int, vectors: Sequence[tuple[str, bytes]]) -> int:
        """Store the workspace's vectors ``(text_hash, float32 bytes, 4 × dim of them)`` of
        ``model`` in one transaction; a text's vector of another model is replaced. Only
        texts some chunk of the workspace still has are stored (a resource deleted while it
        was being embedded leaves no vector behind); returns how many were. ``StoreError``
        for a wrong byte length."""
        if not vectors:
            return 0
        for key, blob in vectors:
            if len(blob) != 4 * dim:
                raise StoreError(f"the vector of {key} has {len(blob)} bytes, expected {4 * dim}")
        columns, values, updates = self._index_columns(model, dim)
        with self._write(bump=VECTORS, workspace=workspace_id) as conn:
            return conn.executemany(  # rowcount: the rows inserted or updated, over every vector
                f"INSERT INTO chunk_vectors (workspace_id, text_hash, model, dim, vector{columns}) "
                f"SELECT ?, ?, ?, ?, ?{values} WHERE EXISTS (SELECT 1 FROM chunks WHERE "
                "workspace_id = ? AND text_hash = ?) ON CONFLICT (workspace_id, text_hash) DO UPDATE "
                f"SET model = excluded.model, dim = excluded.dim, vector = excluded.vector{updates}",
                [(workspace_id, key, model, dim, blob, *self._index_values(blob), workspace_id, key)
                 for key, blob in vectors]).rowcount

    def scope_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                      under: str | None = None) -> list[tuple[str, bytes]]:
        """``(chunk_id, vector bytes)`` of every searchable chunk in scope that has a
        ``model`` vector, in chunk order: what dense search ranks."""
        join = (f"{self._LOOKUP_JOIN} chunk_vectors v ON v.workspace_id = c.workspace_id "
                "AND v.text_hash = c.text_hash AND v.model = ?")
        scope, params = self._scope_sql(workspace_id, conditions, under, join)
        rows = self._conn().execute(f"SELECT c.id AS id, v.vector AS vector {scope} ORDER BY c.rowid",
                                    [model, *params])
        return [(row["id"], row["vector"]) for row in rows]


    def vectors(self, workspace_id: str, model: str, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        """Vector bytes of ``model`` for those of ``chunk_ids`` that are chunks of this
        workspace and have one (ids of other workspaces are absent)."""
        out: dict[str, bytes] = {}
        ids = list(dict.fromkeys(chunk_ids))
        for i in range(0, len(ids), 500):
            batch = ids[i:i + 500]
            rows = self._conn().execute(
                # CROSS JOIN keeps chunks (found by id) outside: else SQLite may walk every vector
                # of the workspace by the (workspace_id, text_hash) key (0.3 s at 100k, not 0.4 ms)
                f"SELECT c.id AS id, v.vector AS vector FROM chunks c {self._LOOKUP_JOIN} chunk_vectors v ON v.workspace_id = "
                "c.workspace_id AND v.text_hash = c.text_hash AND v.model = ? WHERE c.workspace_id = ? AND c.id IN "
                f"({','.join('?' * len(batch))})",
                [model, workspace_id, *batch])
            out.update({row["id"]: row["vector"] for row in rows})
        return out
