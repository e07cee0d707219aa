"""The vector index on SQLite (a dialect piece of the store): BLOB rows and numpy.

Vectors are little-endian float32 BLOBs in ``chunk_vectors``; dense search reads the
workspace's whole matrix once per search and vector generation (cached, see
:mod:`~citewell.store.searchcache`) and ranks it in numpy (exact search). Filters on
resources become a row mask of the cached matrix.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..filters import CHUNK_KEYS
from ..records import Condition
from ..searchcache import SEARCH, VECTORS, select
from ..sqlbase import SQLBase


def top_k(ids: Sequence[str], scores: np.ndarray, limit: int) -> list[tuple[str, float]]:
    """The best ``limit`` of ``ids`` by ``scores`` (one per id, higher is better), best first;
    ties in the order of ``ids``. ``scores``: float array of ``len(ids)``."""
    if limit <= 0 or not len(ids):
        return []
    if limit < len(ids):  # the best ``limit`` (ties at the cut may go either way), then sorted
        best = np.argpartition(-scores, limit - 1)[:limit]
        order = best[np.lexsort((best, -scores[best]))]
    else:
        order = np.argsort(-scores, kind="stable")
    return [(ids[i], float(scores[i])) for i in order]


class BlobVectorIndex(SQLBase):
    """The vector index of the SQLite store (see the module docstring)."""

    def scope_matrix(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                     under: str | None = None) -> tuple[Sequence[str], np.ndarray]:
        """:meth:`scope_vectors` as ``(chunk ids, float32 matrix (n, dim))``, same rows in the
        same order (a ``(0, 0)`` matrix for none), from a cached matrix of the workspace
        (filters on ``created_at`` and ``source`` read :meth:`scope_vectors`). The matrix
        may be the cache's own array: read-only."""
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

    def nearest_chunks(self, workspace_id: str, model: str, query: np.ndarray, *, limit: int,
                       conditions: Sequence[Condition] = (), under: str | None = None) -> list[tuple[str, float]]:
        """Exact search: ``(chunk_id, cosine)`` of the best ``limit`` chunks of
        :meth:`scope_matrix` by the dot product with ``query`` (stored vectors are unit
        vectors: the cosine), best first, ties in chunk order."""
        if limit <= 0:
            return []
        ids, matrix = self.scope_matrix(workspace_id, model, conditions=conditions, under=under)
        if not len(ids):
            return []
        return top_k(ids, matrix @ np.asarray(query, dtype="<f4"), limit)
