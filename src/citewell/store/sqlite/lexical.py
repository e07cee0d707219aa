"""The lexical index on SQLite (a dialect piece of the store): FTS5 with BM25.

Table ``chunk_fts`` (FTS5, ``porter unicode61 remove_diacritics 2``) holds one row per
searchable chunk, keyed by the chunk's ``rowid``, with two columns: the index title
(:func:`~citewell.store.sqlbase.index_title`) and the chunk text. Every term is quoted
before ``MATCH`` (:func:`fts_query`), so no question can raise a syntax error. Ranking is
FTS5's ``bm25()`` with :data:`BM25_WEIGHTS`; the per-term parts are cached
(:mod:`~citewell.store.searchcache`) and summed in numpy, which gives the same rows,
order and scores.

The concern modules call only the methods of :class:`FTS5Index`: what another database
provides in their place is its lexical index.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Sequence

import numpy as np

from ...models import Passage
from ..filters import filter_sql, under_sql
from ..records import Condition
from ..searchcache import GenerationCache, Scope, TermScores
from ..sqlbase import SQLBase

#: The FTS5 tokenizer of the index (also what the PostgreSQL store's index tokenizes with,
#: :func:`citewell.store.postgres.lexical.tokenize`, so both see the same terms).
TOKENIZER = "porter unicode61 remove_diacritics 2"
#: The index table of a new store (stores of schema v1–v8 got it from the v1 step).
FTS5_TABLE = f"CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts USING fts5(title, text, tokenize = '{TOKENIZER}')"
#: BM25 column weights of the search index: (title and entity names, chunk text).
BM25_WEIGHTS = (0.5, 1.0)
_BM25 = f"bm25(chunk_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]})"


def fts_query(terms: Sequence[str]) -> str:
    """Build an FTS5 query matching any term, each quoted (``"a" OR "b"``).

    Quoting makes every word a literal phrase: operators (AND, NOT, NEAR), ``*``, ``-``,
    ``:``, quotes and parentheses in a question can never be parsed as FTS syntax.
    """
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms if t.strip()]
    return " OR ".join(quoted)


class FTS5Index(SQLBase):
    """The lexical index hooks of the SQLite store (see the module docstring)."""

    _terms: GenerationCache[TermScores]

    # -- writes (inside the caller's write transaction) ---------------------------------
    @staticmethod
    def _index_chunk(conn: sqlite3.Connection, rowid: int, title: str, text: str) -> None:
        """Index chunk row ``rowid`` under ``title`` (the index title) with ``text``."""
        conn.execute("INSERT INTO chunk_fts (rowid, title, text) VALUES (?, ?, ?)", (rowid, title, text))

    @staticmethod
    def _unindex_chunk(conn: sqlite3.Connection, rowid: int) -> None:
        """Remove chunk row ``rowid`` from the index (nothing when it is not indexed)."""
        conn.execute("DELETE FROM chunk_fts WHERE rowid = ?", (rowid,))

    @staticmethod
    def _unindex_resource(conn: sqlite3.Connection, resource_id: str) -> None:
        """Remove every chunk of a resource from the index (its chunks stay readable)."""
        conn.execute("DELETE FROM chunk_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE resource_id = ?)",
                     (resource_id,))

    def _reindex_title(self, conn: sqlite3.Connection, resource_id: str, title: str) -> None:
        """Index every chunk of a resource again under index title ``title``."""
        for chunk in conn.execute("SELECT rowid, text FROM chunks WHERE resource_id = ?", (resource_id,)).fetchall():
            self._unindex_chunk(conn, chunk["rowid"])
            self._index_chunk(conn, chunk["rowid"], title, chunk["text"])

    # -- reads --------------------------------------------------------------------------
    @staticmethod
    def _match_clause(alias: str, terms: Sequence[str]) -> tuple[str, list[Any]] | None:
        """``"<alias>.rowid IN (…)"`` keeping chunk rows (table alias ``alias``) whose index
        row matches any of ``terms``, and its parameters; None for no term."""
        query = fts_query(terms)
        if not query:
            return None
        return f"{alias}.rowid IN (SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?)", [query]

    def _ranked_search(self, workspace_id: str, terms: Sequence[str], limit: int,
                       conditions: Sequence[Condition], under: str | None) -> list[Passage]:
        """BM25 ranking in SQL over the ready resources of the workspace matching
        ``conditions`` (chunk-level ones too) under folder ``under``: best first, ties by
        rowid, ``score`` the negated ``bm25``."""
        query = fts_query(terms)
        if not query or limit <= 0:
            return []
        where, args = filter_sql(conditions)
        folder, folder_params = under_sql(under)
        sql = (f"SELECT c.*, r.title AS r_title, r.kind AS r_kind, r.file_name AS r_file_name, {_BM25} AS rank_score "
               "FROM chunk_fts JOIN chunks c ON c.rowid = chunk_fts.rowid JOIN resources r ON r.id = c.resource_id "
               "WHERE chunk_fts MATCH ? AND c.workspace_id = ? AND r.status = 'ready'" + folder)
        params: list[Any] = [query, workspace_id, *folder_params]
        sql += where + " ORDER BY rank_score, c.rowid LIMIT ?"
        rows = self._conn().execute(sql, params + args + [limit]).fetchall()
        return [self._passage_from_row(row, score=-float(row["rank_score"]), rank=i + 1) for i, row in enumerate(rows)]

    @staticmethod
    def _indexed_within(conn: sqlite3.Connection, rowids: np.ndarray) -> bool:
        """Whether every indexed row is one of ``rowids`` (then a count over the index is a
        count of those rows)."""
        cur = conn.cursor()
        cur.row_factory = None
        indexed = np.fromiter((row[0] for row in cur.execute("SELECT rowid FROM chunk_fts")), dtype=np.int64)
        return bool(np.isin(indexed, rowids).all())

    @staticmethod
    def _count_group(conn: sqlite3.Connection, scope: Scope, group: Sequence[str]) -> int:
        """How many rows of ``scope`` have every word of ``group`` in their text (0 for no word)."""
        quoted = ['"' + w.replace('"', '""') + '"' for w in group if w.strip()]
        if not quoted:
            return 0
        query = "text : (" + " AND ".join(quoted) + ")"
        if scope.fts_covered:  # every indexed row is the workspace's: no join needed
            row = conn.execute("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (query,)).fetchone()
            return int(row[0])
        cur = conn.cursor()
        cur.row_factory = None
        found = np.fromiter((r[0] for r in cur.execute("SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?",
                                                       (query,))), dtype=np.int64)
        return int(np.isin(found, scope.rowids).sum())

    def _term_scores(self, conn: sqlite3.Connection, generation: tuple[int, ...], term: str) -> TermScores:
        """The rows ``term`` matches and its share of their ``bm25`` (cached per search generation)."""
        def load() -> TermScores:
            cur = conn.cursor()
            cur.row_factory = None
            rows = cur.execute(f"SELECT rowid, {_BM25} FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY rowid",
                               (fts_query([term]),)).fetchall()
            return TermScores(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                              -np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)))

        return self._terms.get(generation, term, load)
