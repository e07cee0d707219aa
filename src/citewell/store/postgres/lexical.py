"""The lexical index on PostgreSQL (a dialect piece of the store): BM25 as FTS5 ranks.

PostgreSQL's own ``ts_rank`` is not BM25, so this index keeps the term statistics BM25
needs and ranks exactly as SQLite's FTS5 ``bm25()`` does, so that a question gets the
same passages in the same order from either store:

- **tokens**: a text is tokenized by SQLite's own FTS5 tokenizer (``porter unicode61
  remove_diacritics 2``, the SQLite store's, run on an in-memory table with ``fts5vocab``),
  so both stores see the same stemmed terms at the same positions;
- **postings** (``lexical_postings``): per chunk row, column (0 the index title, 1 the
  text) and term, the term's positions, their number (``freq``) and the row's number of
  tokens over both columns (``doclen``); **documents** (``lexical_docs``): per chunk row,
  that number of tokens again (BM25's ``N`` and ``avgdl`` are read from it);
- **reads**: the primary key ``(term, rowid, col)`` carries ``freq`` and ``doclen``
  (``INCLUDE``), so a term's statistics are one contiguous range of that index (an
  index-only scan: no table page per posting), returned as one packed ``bytea``
  (:data:`POSTING`) and scored with numpy; positions are read only to check a phrase of
  several tokens, and only in the rows that hold all of them;
- **ranking** follows FTS5's ``bm25()`` step by step in the same floating-point order:
  for a phrase (a quoted term; several tokens must be consecutive), ``idf = log((N - n +
  0.5) / (n + 0.5))`` (1e-6 when not positive) over the ``N`` indexed rows of the whole
  store, ``n`` of which hold the phrase; its frequency in a row sums the column weights
  :data:`BM25_WEIGHTS` of its occurrences; its part of the score is ``idf × f × (k1 + 1) /
  (f + k1 × (1 − b + b × D / avgdl))`` with ``D`` the row's tokens and ``avgdl`` the mean;
  a row's score is the sum of its phrases' parts in query order — which is how the
  search concern adds cached parts (:func:`~citewell.store.searchcache.rank_rows`).
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...models import Passage
from ..filters import filter_sql, under_sql
from ..records import Condition
from ..searchcache import SEARCH, GenerationCache, Scope, TermScores
from ..sqlbase import SQLBase
from ..sqlite.lexical import BM25_WEIGHTS, TOKENIZER

#: FTS5's BM25 constants
K1 = 1.2
B = 0.75
#: the index's own tables (a new store gets them with the shared tables)
LEXICAL_TABLES = (
    "CREATE TABLE IF NOT EXISTS lexical_postings (rowid BIGINT NOT NULL, col SMALLINT NOT NULL, term TEXT NOT NULL, "
    "positions INTEGER[] NOT NULL, freq INTEGER NOT NULL, doclen INTEGER NOT NULL, "
    "PRIMARY KEY (term, rowid, col) INCLUDE (freq, doclen))",
    "CREATE INDEX IF NOT EXISTS lexical_postings_by_row ON lexical_postings (rowid)",
    "CREATE TABLE IF NOT EXISTS lexical_docs (rowid BIGINT PRIMARY KEY, tokens INTEGER NOT NULL)",
)
#: one posting as :meth:`PostgresLexicalIndex._postings` reads it: the row, the column, the
#: term's occurrences there and the row's tokens (big-endian, as ``int8send`` … write them)
POSTING = np.dtype([("rowid", ">i8"), ("col", ">i2"), ("freq", ">i4"), ("doclen", ">i4")])
_POSTINGS_SQL = ("SELECT string_agg(int8send(rowid) || int2send(col) || int4send(freq) || int4send(doclen), "
                 "''::bytea) FROM lexical_postings WHERE term = ?")

_tokenizers = threading.local()


def _no_rows() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What :meth:`PostgresLexicalIndex._phrase` gives for a phrase no row holds."""
    return np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.int64)


#: UTF-8 bytes of a term above which the index keys it by :func:`term_key`'s digest form:
#: a btree entry holds at most 2,704 bytes on PostgreSQL, and FTS5 indexes a token of any
#: length (a run of about 900 CJK characters with no separator is one token)
MAX_TERM_BYTES = 512


def term_key(term: str) -> str:
    """How the index keys ``term``: itself, or, when longer than :data:`MAX_TERM_BYTES` in
    UTF-8, its first 64 characters, a space and the SHA-256 of the whole (hex). A token of
    the tokenizer never holds a space, so no key of a long term equals a short term."""
    if len(term) * 4 <= MAX_TERM_BYTES or len(term.encode("utf-8")) <= MAX_TERM_BYTES:
        return term
    return f"{term[:64]} {hashlib.sha256(term.encode('utf-8')).hexdigest()}"


def tokenize(text: str) -> list[tuple[str, int]]:
    """``(term, position)`` of ``text`` as the SQLite store's FTS5 index tokenizes it
    (:data:`~citewell.store.sqlite.lexical.TOKENIZER`, through ``fts5vocab`` on an
    in-memory table of this thread), in position order."""
    conn = getattr(_tokenizers, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _tokenizers.conn = conn
    conn.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (text,))
    try:
        return [(term, offset) for term, offset in conn.execute("SELECT term, offset FROM v ORDER BY offset")]
    finally:
        conn.execute("DELETE FROM t")


def chunk_postings(title: str, text: str) -> tuple[dict[tuple[int, str], list[int]], int]:
    """The postings of one chunk: ``{(column, term): [position, …]}`` (column 0 the title,
    1 the text; terms as :func:`term_key` keys them; positions as :func:`tokenize` gives
    them) and the chunk's token count (both columns), what ``lexical_postings`` and
    ``lexical_docs`` hold for it."""
    positions: dict[tuple[int, str], list[int]] = defaultdict(list)
    size = 0
    for col, value in ((0, title), (1, text)):
        tokens = tokenize(value)
        size += len(tokens)
        for term, position in tokens:
            positions[(col, term_key(term))].append(position)
    return positions, size


def _phrase_rows(rows: Sequence[Any], tokens: Sequence[str]) -> dict[tuple[int, int], int]:
    """Occurrences of the phrase ``tokens`` (two or more) per ``(rowid, col)`` from the
    postings ``rows`` ``(rowid, col, term, positions)`` of its tokens: places where they
    stand consecutively."""
    places: dict[tuple[int, int], dict[str, set[int]]] = defaultdict(dict)
    for rowid, col, term, positions in rows:
        places[(rowid, col)][term] = set(positions)
    found: dict[tuple[int, int], int] = {}
    for key, by_term in places.items():
        if any(t not in by_term for t in tokens):
            continue
        count = sum(1 for start in by_term[tokens[0]]
                    if all(start + i in by_term[t] for i, t in enumerate(tokens[1:], 1)))
        if count:
            found[key] = count
    return found


class PostgresLexicalIndex(SQLBase):
    """The lexical index hooks of the PostgreSQL store (see the module docstring)."""

    _terms: GenerationCache[TermScores]
    #: ``(indexed rows, their tokens)`` of the whole store (BM25's ``N`` and ``avgdl``),
    #: read once per search generation rather than once per term
    _doc_stats: GenerationCache[tuple[int, int]]

    # -- writes (inside the caller's write transaction) ---------------------------------
    @staticmethod
    def _index_chunk(conn: Any, rowid: int, title: str, text: str) -> None:
        """Index chunk row ``rowid``: its postings and its token count."""
        positions, size = chunk_postings(title, text)
        conn.executemany("INSERT INTO lexical_postings (rowid, col, term, positions, freq, doclen) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         [(rowid, col, term, places, len(places), size)
                          for (col, term), places in positions.items()])
        conn.execute("INSERT INTO lexical_docs VALUES (?, ?)", (rowid, size))

    @staticmethod
    def _unindex_chunk(conn: Any, rowid: int) -> None:
        """Remove chunk row ``rowid`` from the index (nothing when it is not indexed)."""
        conn.execute("DELETE FROM lexical_postings WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM lexical_docs WHERE rowid = ?", (rowid,))

    @staticmethod
    def _unindex_resource(conn: Any, resource_id: str) -> None:
        """Remove every chunk of a resource from the index (its chunks stay readable)."""
        for table in ("lexical_postings", "lexical_docs"):
            conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM chunks WHERE resource_id = ?)",
                         (resource_id,))

    def _reindex_title(self, conn: Any, resource_id: str, title: str) -> None:
        """Index every chunk of a resource again under index title ``title``."""
        for chunk in conn.execute("SELECT rowid, text FROM chunks WHERE resource_id = ? AND rowid IN "
                                  "(SELECT rowid FROM lexical_docs)", (resource_id,)).fetchall():
            self._unindex_chunk(conn, chunk["rowid"])
            self._index_chunk(conn, chunk["rowid"], title, chunk["text"])

    # -- reads --------------------------------------------------------------------------
    @staticmethod
    def _postings(conn: Any, token: str, column: int | None) -> dict[str, np.ndarray]:
        """The postings of one token (of ``column`` only, when given), read from the primary
        key alone: ``rowid``, ``col``, ``freq`` and ``doclen`` (int64 arrays of
        :data:`POSTING`'s fields), sorted by row then column."""
        sql, params = _POSTINGS_SQL, [token]
        if column is not None:
            sql += " AND col = ?"
            params.append(column)
        cur = conn.cursor()
        cur.row_factory = None
        packed = cur.execute(sql, params).fetchone()[0]
        found = np.frombuffer(packed or b"", dtype=POSTING)
        out = {name: found[name].astype(np.int64) for name in POSTING.names}
        key = out["rowid"] * 2 + out["col"]
        if len(key) > 1 and not bool((key[1:] > key[:-1]).all()):  # parallel workers' parts come in any order
            order = np.argsort(key, kind="stable")
            out = {name: values[order] for name, values in out.items()}
        return out

    @classmethod
    def _phrase(cls, conn: Any, term: str, *,
                column: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows holding the phrase of ``term`` (in ``column`` only, when given): their rowids
        (int64, ascending), the phrase's weighted frequency in each (float64: the sum of the
        column weights :data:`BM25_WEIGHTS` of its occurrences) and each row's tokens (int64)."""
        tokens = [term_key(t) for t, _ in tokenize(term)]
        if not tokens:
            return _no_rows()
        weights = np.array(BM25_WEIGHTS, dtype=np.float64)
        found = {t: cls._postings(conn, t, column) for t in dict.fromkeys(tokens)}
        first = found[tokens[0]]
        if len(found) == 1 and len(tokens) == 1:
            rowids, cols, counts, sizes = first["rowid"], first["col"], first["freq"], first["doclen"]
        else:  # several tokens: count consecutive occurrences where every token is present
            keys = [p["rowid"] * 2 + p["col"] for p in found.values()]
            both = keys[0]
            for other in keys[1:]:
                both = np.intersect1d(both, other, assume_unique=True)
            if not len(both):
                return _no_rows()
            cur = conn.cursor()
            cur.row_factory = None
            rows = cur.execute("SELECT rowid, col, term, positions FROM lexical_postings WHERE term = ANY(?) "
                               "AND rowid = ANY(?)", [sorted(found), np.unique(both // 2).tolist()]
                               ).fetchall()
            wanted = set(both.tolist())
            occurrences = _phrase_rows([r for r in rows if r[0] * 2 + r[1] in wanted], tokens)
            if not occurrences:
                return _no_rows()
            places = sorted(occurrences)
            rowids = np.array([k[0] for k in places], dtype=np.int64)
            cols = np.array([k[1] for k in places], dtype=np.int64)
            counts = np.array([occurrences[k] for k in places], dtype=np.int64)
            at = np.searchsorted(first["rowid"], rowids)
            sizes = first["doclen"][at]
        unique, starts = np.unique(rowids, return_index=True)
        # the weights are multiples of 0.5: these sums are exact whatever their order
        freq = np.add.reduceat(weights[cols] * counts, starts) if len(rowids) else np.zeros(0, np.float64)
        return unique, freq, sizes[starts]

    def _term_scores(self, conn: Any, generation: tuple[int, ...], term: str) -> TermScores:
        """The rows ``term`` matches and its share of their BM25 (cached per search generation)."""
        def load() -> TermScores:
            rowids, f, d = self._phrase(conn, term)
            if not len(rowids):
                return TermScores(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
            total, tokens = self._doc_stats.get(generation, None, lambda: tuple(conn.execute(
                "SELECT count(*), COALESCE(sum(tokens), 0) FROM lexical_docs").fetchone()))
            avgdl = float(tokens) / float(total)
            hits = len(rowids)
            idf = math.log((total - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            # FTS5's bm25() for one phrase, element by element in its order of operations
            d = d.astype(np.float64)
            parts = 0.0 + idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
            return TermScores(rowids, parts)

        return self._terms.get(generation, term, load)

    def _match_clause(self, alias: str, terms: Sequence[str]) -> tuple[str, list[Any]] | None:
        """``"<alias>.rowid = ANY(?)"`` keeping chunk rows (table alias ``alias``) whose index
        row holds any of ``terms``, and its parameter; None for no term."""
        words = [t for t in terms if t.strip()]
        if not words:
            return None
        conn = self._conn()
        rows = np.unique(np.concatenate([self._phrase(conn, word)[0] for word in words]))
        return f"{alias}.rowid = ANY(?)", [rows.tolist()]

    def _ranked_search(self, workspace_id: str, terms: Sequence[str], limit: int,
                       conditions: Sequence[Condition], under: str | None) -> list[Passage]:
        """BM25 over the ready resources of the workspace matching ``conditions`` (chunk-level
        ones too) under folder ``under``: best first, ties by rowid, ``score`` the negated
        ``bm25`` (see the module docstring)."""
        words = [t for t in terms if t.strip()]
        if not words or limit <= 0:
            return []
        with self._snapshot() as conn:
            generation = self._generation(conn, SEARCH)
            scores = [self._term_scores(conn, generation, t) for t in words]
            candidates = sorted({int(r) for s in scores for r in s.rowids})
            if not candidates:
                return []
            where, args = filter_sql(conditions)
            folder, folder_params = under_sql(under)
            cur = conn.cursor()
            cur.row_factory = None
            allowed = {row[0] for row in cur.execute(
                "SELECT c.rowid FROM chunks c JOIN resources r ON r.id = c.resource_id WHERE c.workspace_id = ? "
                "AND r.status = 'ready' AND c.rowid = ANY(?)" + folder + where,
                [workspace_id, candidates, *folder_params, *args]).fetchall()}
            total: dict[int, float] = {}
            for s in scores:  # in query order, from 0.0: FTS5's order of addition
                for rowid, part in zip(s.rowids.tolist(), s.parts.tolist()):
                    if rowid in allowed:
                        total[rowid] = total.get(rowid, 0.0) + part
            ranked = sorted(total.items(), key=lambda item: (-1.0 * item[1], item[0]))[:limit]
            rows, resources = self._chunk_rows(conn, workspace_id, "rowid", [rowid for rowid, _ in ranked])
        return [self._passage(rows[rowid], resources[rows[rowid]["resource_id"]], score=score, rank=i + 1)
                for i, (rowid, score) in enumerate(ranked)]

    @staticmethod
    def _indexed_within(conn: Any, rowids: np.ndarray) -> bool:
        """Whether every indexed row is one of ``rowids``."""
        cur = conn.cursor()
        cur.row_factory = None
        indexed = np.fromiter((row[0] for row in cur.execute("SELECT rowid FROM lexical_docs").fetchall()),
                              dtype=np.int64)
        return bool(np.isin(indexed, rowids).all())

    def _count_group(self, conn: Any, scope: Scope, group: Sequence[str]) -> int:  # type: ignore[override]
        """How many rows of ``scope`` have every word of ``group`` in their text (0 for no word)."""
        words = [w for w in group if w.strip()]
        if not words:
            return 0
        rows: np.ndarray | None = None
        for word in words:
            found = self._phrase(conn, word, column=1)[0]
            rows = found if rows is None else np.intersect1d(rows, found, assume_unique=True)
        if rows is None or not len(rows):
            return 0
        if scope.fts_covered:
            return len(rows)
        return int(np.isin(rows, scope.rowids).sum())
