"""The vector index on SQLite (a dialect piece of the store): BLOB rows and numpy.

Vectors are little-endian float32 BLOBs in ``chunk_vectors``; dense search reads the
workspace's whole matrix once per search and vector generation (cached, see
:mod:`~citewell.store.searchcache`) and ranks it in numpy (exact search). Filters on
resources become a row mask of the cached matrix.
"""

from __future__ import annotations

import sqlite3
from typing import Sequence

import numpy as np

from ..base import Condition
from ..filters import CHUNK_KEYS
from ..searchcache import SEARCH, VECTORS, GenerationCache, VectorScope, select
from ..sqlbase import SQLBase


class BlobVectorIndex(SQLBase):
    """The vector index hooks of the SQLite store (see the module docstring)."""

    _vectors: GenerationCache[VectorScope]

    def _vector_scope(self, conn: sqlite3.Connection, workspace_id: str, model: str,
                      generation: tuple[int, ...], *, matrix: bool) -> VectorScope:
        """The workspace's searchable chunks for ``model`` (cached per search and vector
        generation): all of them with their ``embedded`` flags, or (``matrix``) only the
        embedded ones with their vectors."""
        def load() -> VectorScope:
            # chunks outside (CROSS JOIN): the vectors are looked up by their key, never walked
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
            return VectorScope(tuple(row[0] for row in rows), index, tuple(names), embedded, vectors)

        return self._vectors.get(generation, (workspace_id, model, matrix), load)

    def scope_matrix(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                     under: str | None = None) -> tuple[Sequence[str], np.ndarray]:
        """:meth:`scope_vectors` as ``(chunk ids, float32 matrix (n, dim))``, same rows in the
        same order, from a cached matrix of the workspace (filters on ``created_at`` and
        ``source`` read :meth:`scope_vectors`). The matrix may be the cache's own array:
        read-only."""
        if any(c.key in CHUNK_KEYS for c in conditions):
            rows = self.scope_vectors(workspace_id, model, conditions=conditions, under=under)
            if not rows:
                return [], np.zeros((0, 0), dtype="<f4")
            matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4").reshape(len(rows), -1)
            return [cid for cid, _ in rows], matrix
        with self._snapshot() as conn:
            generation = self._ws_generation(conn, workspace_id, SEARCH, VECTORS)
            scope = self._vector_scope(conn, workspace_id, model, generation, matrix=True)
            resources = self._scope_resources(conn, workspace_id, conditions, under)
        if resources is None:
            return scope.ids, scope.matrix
        rows = np.flatnonzero(select(scope.resource_index, scope.resource_ids, resources))
        return [scope.ids[i] for i in rows], scope.matrix[rows]

