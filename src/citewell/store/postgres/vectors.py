"""The vector index on PostgreSQL (a dialect piece of the store): pgvector and HNSW.

- **column**: ``chunk_vectors.embedding`` (pgvector's ``vector``, no fixed dimension, so
  models of different dimensions share the table) holds each vector beside its float32
  bytes in ``vector`` (which :meth:`~citewell.store.vectors.Vectors.vectors` and
  ``scope_vectors`` read, as on SQLite); :meth:`~citewell.store.vectors.Vectors.put_vectors`
  fills both in one statement (the bytes sent as pgvector's text form, ``[x, …]``, whose
  shortest round-trip decimals give back the same float32 values).
- **index**: one HNSW index per embedding model and dimension (an HNSW index needs a
  fixed dimension), cosine distance, on the expression ``embedding::vector(dim)`` and
  partial ``WHERE model = … AND dim = …``: the way pgvector indexes a column whose rows
  differ in dimension. :meth:`PgVectorIndex.put_vectors` creates the model's index the
  first time it stores one of its vectors (under an advisory lock: replicas starting
  together create it once).
- **ranking** (:meth:`PgVectorIndex.nearest_chunks`): ``ORDER BY embedding::vector(dim)
  <=> q LIMIT k`` with the workspace, the folder scope and the filters
  (:mod:`~citewell.store.filters`) in the same query, ``hnsw.ef_search`` =
  max(:data:`EF_SEARCH`, k) and pgvector's iterative index scans (``relaxed_order``, 0.8+)
  so that filters do not starve the result: the index is read on until ``k`` rows pass
  them (at most ``hnsw.max_scan_tuples``). The rows are then sorted exactly by distance,
  ties in chunk order. When the index gives fewer than ``k`` rows (a filter that keeps
  few chunks of a large workspace), the same query runs without the index: exact, over
  the rows the filters keep. The planner may rank exactly by itself when it estimates
  that cheaper (a small store or a narrow filter). Cosine = 1 − distance.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..records import Condition
from ..sqlbase import SQLBase

#: candidates the HNSW search keeps (pgvector's ``hnsw.ef_search``; its default is 40); at
#: least the ``k`` asked. Recall@10 against exact search on the FinanceBench dev questions
#: falls as the store grows (``benchmarks/pg_vector_recall.py``, benchmarks/RESULTS.md): at
#: 100k chunks 0.987 at 200, 0.931 at 100; at a million 0.954 at 800, 0.900 at 400, 0.821
#: at 200, for an HNSW p50 of 6.1, 4.0 and 3.0 ms
EF_SEARCH = 800
#: the HNSW graph's links per node and build-time candidates (pgvector's defaults are 16
#: and 64): near-duplicate passages (the same filing ingested twice, or replicas) fill a
#: node's 2 × 16 links with its own copies and cut the graph into islands: recall@10 0.838
#: against 0.931 with 32 and 128, at ef_search 100 (RESULTS)
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128
#: pgvector's ceiling for ``hnsw.ef_search``
EF_SEARCH_MAX = 1000
#: advisory lock key under which a model's index is created (any fixed 64-bit number)
INDEX_LOCK = 0x63697465_76656374  # "citevect"
#: the column and extension the index needs (a fresh store and revision v11)
VECTOR_DDL = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    "ALTER TABLE chunk_vectors ADD COLUMN IF NOT EXISTS embedding vector",
)


def vector_text(blob: bytes) -> str:
    """pgvector's text form (``[x,y,…]``) of little-endian float32 ``blob``: each value's
    shortest round-trip decimal, so PostgreSQL reads back the same float32 values."""
    return "[" + ",".join(map(repr, np.frombuffer(blob, dtype="<f4").tolist())) + "]"


def literal(value: str) -> str:
    """``value`` as a constant SQL expression (quotes doubled; a ``?``, which the
    connection layer reads as a parameter, spelled ``chr(63)``). The partial index's
    predicate must be a constant in the query for the planner to use the index."""
    return "('" + value.replace("'", "''").replace("?", "' || chr(63) || '") + "')"


def index_name(model: str, dim: int) -> str:
    """The HNSW index of ``model`` vectors of ``dim`` floats (a digest: model ids are free text)."""
    return "chunk_vectors_hnsw_" + hashlib.sha256(f"{model}\0{dim}".encode()).hexdigest()[:16]


def index_ddl(model: str, dim: int) -> str:
    """``CREATE INDEX`` of the HNSW index of ``model`` vectors of ``dim`` floats (see the module docstring)."""
    return (f"CREATE INDEX IF NOT EXISTS {index_name(model, dim)} ON chunk_vectors USING hnsw "
            f"((embedding::vector({int(dim)})) vector_cosine_ops) WITH (m = {HNSW_M}, ef_construction = "
            f"{HNSW_EF_CONSTRUCTION}) WHERE model = {literal(model)} AND dim = {int(dim)}")


class PgVectorIndex(SQLBase):
    """The vector index hooks of the PostgreSQL store (see the module docstring)."""

    #: (model, dim) whose HNSW index this process knows exists
    _indexed: set[tuple[str, int]]

    def _index_columns(self, model: str, dim: int) -> tuple[str, str, str]:
        return ", embedding", ", CAST(? AS vector)", ", embedding = excluded.embedding"

    def _index_values(self, blob: bytes) -> tuple[Any, ...]:
        return (vector_text(blob),)

    def _ensure_index(self, model: str, dim: int) -> None:
        """Create the HNSW index of ``model`` vectors of ``dim`` floats unless it exists."""
        if (model, dim) in self._indexed:
            return
        with self._write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (INDEX_LOCK,))
            conn.execute(index_ddl(model, dim))
        self._indexed.add((model, dim))

    def put_vectors(self, workspace_id: str, model: str, dim: int, vectors: Sequence[tuple[str, bytes]]) -> int:
        """:meth:`~citewell.store.vectors.Vectors.put_vectors`, creating the model's HNSW
        index first (once per model and dimension)."""
        if vectors:
            self._ensure_index(model, dim)
        return super().put_vectors(workspace_id, model, dim, vectors)  # type: ignore[misc]

    def _nearest_sql(self, workspace_id: str, model: str, dim: int, conditions: Sequence[Condition],
                     under: str | None, *, indexed: bool) -> tuple[str, list[Any]]:
        """The ranking query (parameters: the query vector's text, then the scope's, then
        the limit); ``indexed``: ordered by the HNSW index's expression, else by one no
        index has (exact)."""
        join = ("JOIN chunk_vectors v ON v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash "
                f"AND v.model = {literal(model)} AND v.dim = {int(dim)}")
        scope, params = self._scope_sql(workspace_id, conditions, under, join)  # type: ignore[attr-defined]
        column = f"(v.embedding::vector({int(dim)}))" if indexed else "v.embedding"
        sql = (f"WITH nearest AS MATERIALIZED (SELECT c.id AS id, c.rowid AS rowid, {column} <=> "
               f"CAST(? AS vector({int(dim)})) AS distance {scope} ORDER BY distance LIMIT ?) "
               "SELECT id, distance FROM nearest ORDER BY distance, rowid")
        return sql, params

    def nearest_chunks(self, workspace_id: str, model: str, query: np.ndarray, *, limit: int,
                       conditions: Sequence[Condition] = (), under: str | None = None) -> list[tuple[str, float]]:
        """``(chunk_id, cosine)`` of the ``limit`` chunks in scope nearest to ``query``
        (float32, the model's dimension) by pgvector's HNSW index, best first, ties in
        chunk order (see the module docstring: approximate, exact when the index gives
        fewer than ``limit``)."""
        if limit <= 0:
            return []
        q = np.asarray(query, dtype="<f4")
        text = vector_text(q.tobytes())
        dim = int(q.shape[0])
        with self._snapshot() as conn:
            conn.execute("SELECT set_config('hnsw.ef_search', ?, true), "  # SET LOCAL of both, one round trip
                         "set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                         (str(min(EF_SEARCH_MAX, max(EF_SEARCH, int(limit)))),))
            rows = []
            for indexed in (True, False):
                sql, params = self._nearest_sql(workspace_id, model, dim, conditions, under, indexed=indexed)
                rows = conn.execute(sql, [text, *params, int(limit)]).fetchall()
                if len(rows) >= limit:
                    break
        return [(row[0], 1.0 - float(row[1])) for row in rows]


__all__ = ["EF_SEARCH", "PgVectorIndex", "VECTOR_DDL", "index_ddl", "index_name", "vector_text"]
