"""Search: lexical ranking, document frequencies and the resources a search reads.

The ranking itself is the lexical index's (a dialect piece: FTS5 + bm25 on SQLite, see
:mod:`citewell.store.sqlite.lexical`); this concern scopes it to a workspace, its filters
and folder, and keeps the retrieval caches (:mod:`~citewell.store.searchcache`) exact by
tagging every entry with the search generation it was read at.

Hooks the lexical index provides (see :class:`Search`): ``_ranked_search`` (the ranking in
SQL, any filter), ``_term_scores`` (one term's rows and score parts, cached),
``_count_group`` (document frequency of a word group within a scope) and
``_indexed_within`` (whether the index holds only a scope's rows).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Callable, Protocol, Sequence, TypeVar

import numpy as np

from ..models import Passage, Resource
from ..tuplecache import TupleCache
from .filters import CHUNK_KEYS, filter_sql, under_sql
from .records import Condition, TextHit
from .searchcache import SEARCH, GenerationCache, Scope, TermScores, rank_rows
from .sqlbase import SQLBase

#: what a search gives: passages (:meth:`Search.search_text`) or hits (:meth:`Search.search_hits`)
R = TypeVar("R")


#: the resource rows :meth:`Search._resource_rows` gives for a store tuple of ready resources
_ready_rows: TupleCache[dict[str, Mapping[str, Any]]] = TupleCache(lambda resources: {
    r.id: {"id": r.id, "title": r.title, "kind": r.kind, "file_name": r.file_name, "status": r.status}
    for r in resources})

#: masks of listed resources one snapshot keeps (:meth:`Search._cached_ranking`): a question's
#: scope check and retrieval narrow to a few lists (its named documents, the ones it is about)
SNAPSHOT_MASKS = 8


class SearchStore(Protocol):
    """Lexical search over a workspace's ready resources, its document frequencies, the
    resources a search reads and read snapshots (the search concern of
    :class:`~citewell.store.base.Store`).

    ``conditions`` are :class:`Condition` filters and ``under`` a folder, as everywhere;
    passages come best first with ``score`` higher is better (the negated BM25). An
    unknown workspace has nothing to find (empty results, counts 0)."""

    def search_text(self, workspace_id: str, terms: Sequence[str], *, limit: int,
                    conditions: Sequence[Condition] = (), under: str | None = None) -> list[Passage]:
        """BM25 full-text search over ready resources; best first, ``score`` higher is better.

        ``terms`` are plain words (the store quotes them); any term may match.
        ``under`` restricts to resources with a present file under that folder.
        """
        ...

    def search_hits(self, workspace_id: str, terms: Sequence[str], *, limit: int,
                    conditions: Sequence[Condition] = (), under: str | None = None) -> list[TextHit]:
        """:meth:`search_text`'s matches, the same chunks in the same order with the same
        scores, as :class:`TextHit` (no metadata, no passage objects): for checks that read
        only where a match is and what it says (the scope check reads about a thousand per
        question)."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """One read snapshot for the reads of this thread inside the ``with`` block: they see
        one state of the store and share its round trips (one transaction, the generation
        counters read once) instead of each opening its own. Reads only: no write may
        run inside it."""
        ...

    def ranking_resources(self, workspace_id: str, *, under: str | None = None) -> Sequence[Resource]:
        """The workspace's ready resources (with a present file under folder ``under`` when
        given), oldest first, ``paths`` empty: what ranking reads per question. The objects
        may be shared between calls (a store may cache them until a write changes what a
        search sees, in any process): read-only."""
        ...

    def scope_resources(self, workspace_id: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> Sequence[Resource]:
        """The ready resources a search with ``conditions`` (resource-level keys; the
        chunk-level ``created_at`` and ``source`` are not applied) under folder ``under``
        reads, as :meth:`ranking_resources` gives them (shared, read-only)."""
        ...

    def term_counts(self, workspace_id: str, groups: Sequence[Sequence[str]]) -> tuple[int, list[int]]:
        """Document frequencies for ranking: ``(n, counts)``.

        ``n`` is the number of searchable chunks (of ready resources) in the workspace;
        ``counts[i]`` is how many of them have every word of ``groups[i]`` in their text
        (the title is not counted). Words are plain words, matched as the full-text
        index matches them (stemmed the same way); an empty group counts 0.
        """
        ...

    def count_resources(self, workspace_id: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> int:
        """How many ready resources with at least one chunk match ``conditions`` (and lie
        under folder ``under``): tells "nothing matched the question" from "nothing
        matched the filters"."""
        ...


class Search(SQLBase):
    """Search over the ready resources of a workspace (see the module docstring)."""

    _scopes: GenerationCache[Scope]
    _alone: GenerationCache[bool]
    _dfs: GenerationCache[int]
    _ranking_resources: GenerationCache[tuple[Resource, ...]]
    _resource_sets: GenerationCache[set[str]]

    # -- lexical index hooks (dialect) --------------------------------------------------
    def _ranked_search(self, workspace_id: str, terms: Sequence[str], limit: int,
                       conditions: Sequence[Condition], under: str | None) -> list[Passage]:
        raise NotImplementedError

    def _term_scores(self, conn: sqlite3.Connection, generation: tuple[int, ...], term: str) -> TermScores:
        raise NotImplementedError

    @staticmethod
    def _count_group(conn: sqlite3.Connection, scope: Scope, group: Sequence[str]) -> int:
        raise NotImplementedError

    @staticmethod
    def _indexed_within(conn: sqlite3.Connection, rowids: np.ndarray) -> bool:
        raise NotImplementedError

    # -- the Store methods --------------------------------------------------------------
    def search_text(self, workspace_id: str, terms: Sequence[str], *, limit: int,
                    conditions: Sequence[Condition] = (), under: str | None = None) -> list[Passage]:
        """BM25 over ready resources of the workspace (see :class:`Store.search_text`).

        Filters on resources (all but ``created_at`` and ``source``) and the folder scope
        rank from the cached per-term scores (:func:`~citewell.store.searchcache.rank_rows`):
        the same rows, order and scores as the SQL ranking, which the others still use.
        """
        return self._search(workspace_id, terms, limit, conditions, under, self._read_passages, list)

    def search_hits(self, workspace_id: str, terms: Sequence[str], *, limit: int,
                    conditions: Sequence[Condition] = (), under: str | None = None) -> list[TextHit]:
        """:meth:`search_text` as :class:`TextHit` (see :meth:`Store.search_hits`): ranked
        the same way, then only four columns of each row are read (a passage's metadata and
        model cost about three times as much)."""
        return self._search(workspace_id, terms, limit, conditions, under, self._read_hits,
                            lambda passages: [TextHit(p.chunk.id, p.chunk.resource_id, p.chunk.text, p.score)
                                              for p in passages])

    def term_counts(self, workspace_id: str, groups: Sequence[Sequence[str]]) -> tuple[int, list[int]]:
        """Chunk count and per-group document frequencies (see :class:`Store.term_counts`).

        Each group is one FTS5 query on the text column, ``text : ("a" AND "b")``, every
        word quoted as in :func:`fts_query`; counts are cached per workspace and group
        until the next write that changes what a search sees.
        """
        with self._snapshot() as conn:
            scope, generation = self._scope(conn, workspace_id)
            counts = [self._dfs.get(generation, (workspace_id, tuple(group)),
                                    lambda group=group: self._count_group(conn, scope, group))
                      for group in groups]
        return len(scope.rowids), counts

    def ranking_resources(self, workspace_id: str, *, under: str | None = None) -> tuple[Resource, ...]:
        """The ready resources of :meth:`resources` (``statuses=["ready"]``, no paths), shared
        read-only objects cached per search generation (see :meth:`Store.ranking_resources`):
        reading the rows skips over each resource's extracted text, and building hundreds of
        resources costs about ten milliseconds, per question otherwise."""
        with self._snapshot() as conn:
            generation = self._ws_generation(conn, workspace_id, SEARCH)
            return self._ranking_resources.get(generation, (workspace_id, under), lambda: tuple(
                self._resource_from_row(row) for row in self._list_resources(conn, workspace_id, ["ready"],
                                                                              under, None, 0)))

    def _resource_rows(self, conn: sqlite3.Connection, workspace_id: str,
                       ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        """:meth:`SQLBase._resource_rows`; inside a read snapshot (:meth:`reading`, whose
        generation counters are read already) the workspace's ready resources are taken from
        :meth:`ranking_resources` (cached per search generation, which any change of a
        resource's status, title or name moves) and only the others read from the table.
        Outside one, the table alone: the cache's own snapshot would cost more statements
        than the one query."""
        if not ids or getattr(self._local, "counters", None) is None:
            return super()._resource_rows(conn, workspace_id, ids)
        ready = _ready_rows.get(self.ranking_resources(workspace_id))
        found = {rid: ready[rid] for rid in ids if rid in ready}
        if len(found) < len(ids):
            found.update(super()._resource_rows(conn, workspace_id, [rid for rid in ids if rid not in found]))
        return found

    def scope_resources(self, workspace_id: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> tuple[Resource, ...]:
        """The resources of :meth:`ranking_resources` that match the resource-level
        ``conditions`` (see :meth:`Store.scope_resources`); cached sets as searches use."""
        resource_conditions = [c for c in conditions if c.key not in CHUNK_KEYS]
        everything = self.ranking_resources(workspace_id, under=under)
        if not resource_conditions:
            return everything
        with self._snapshot() as conn:
            ids = self._scope_resources(conn, workspace_id, resource_conditions, under)
        return everything if ids is None else tuple(r for r in everything if r.id in ids)


    # -- retrieval caches (see searchcache) ---------------------------------------------
    def _scope(self, conn: sqlite3.Connection, workspace_id: str) -> tuple[Scope, tuple[int, ...]]:
        """The workspace's chunk rows of ready resources, and the generation it is cached
        under (and what is computed from it: document frequencies): the workspace's own
        search generation, and the store-wide one too while the workspace is the store's only
        one (then its rows may be the whole full-text index, ``fts_covered``, which another
        workspace's first chunk changes)."""
        own = self._ws_generation(conn, workspace_id, SEARCH)
        whole = self._generation(conn, SEARCH)
        alone = self._alone.get(whole, workspace_id, lambda: conn.execute(
            "SELECT 1 FROM chunks WHERE workspace_id != ? LIMIT 1", (workspace_id,)).fetchone() is None)
        generation = (*own, *(whole if alone else (0,)))

        def load() -> Scope:
            cur = conn.cursor()
            cur.row_factory = None
            rows = cur.execute("SELECT c.rowid, c.resource_id FROM chunks c JOIN resources r "
                               "ON r.id = c.resource_id WHERE c.workspace_id = ? AND r.status = 'ready' "
                               "ORDER BY c.rowid", (workspace_id,)).fetchall()
            names: dict[str, int] = {}
            rowids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            index = np.fromiter((names.setdefault(row[1], len(names)) for row in rows), dtype=np.int32,
                                count=len(rows))
            # with another workspace's chunks in the store, the index is not all this one's
            covered = self._indexed_within(conn, rowids) if alone else False
            return Scope(rowids, index, tuple(names), covered)

        return self._scopes.get(generation, workspace_id, load), generation

    def _scope_resources(self, conn: sqlite3.Connection, workspace_id: str, conditions: Sequence[Condition],
                         under: str | None) -> set[str] | None:
        """Ids of the workspace's ready resources matching ``conditions`` (resource keys only)
        under folder ``under`` (cached per search generation); None when neither is given
        (every resource)."""
        if not conditions and under is None:
            return None
        generation = self._ws_generation(conn, workspace_id, SEARCH)
        return self._resource_sets.get(generation, (workspace_id, tuple(conditions), under),
                                       lambda: self._find_resources(conn, workspace_id, conditions, under))

    def _find_resources(self, conn: sqlite3.Connection, workspace_id: str, conditions: Sequence[Condition],
                        under: str | None) -> set[str]:
        """What :meth:`_scope_resources` caches, read from the store."""
        folder, folder_params = under_sql(under)
        sql = "SELECT r.id FROM resources r WHERE r.workspace_id = ? AND r.status = 'ready'" + folder
        where, args = filter_sql(conditions)
        return {row[0] for row in conn.execute(sql + where, [workspace_id, *folder_params, *args])}


    def _search(self, workspace_id: str, terms: Sequence[str], limit: int, conditions: Sequence[Condition],
                under: str | None, read: Callable[[sqlite3.Connection, str, list[int], np.ndarray], list[R] | None],
                from_passages: Callable[[list[Passage]], list[R]]) -> list[R]:
        """The search of :meth:`search_text` and :meth:`search_hits`: ranked from the caches
        when every condition is resource-level (:meth:`_cached_ranking`) and the ranked rows
        are ``read(conn, workspace_id, rowids, bm25 values)``; by the SQL ranking, turned
        into the same results by ``from_passages``, when a condition is chunk-level or
        ``read`` gives None (a ranked row that cannot be read back)."""
        words = [t for t in terms if t.strip()]
        if not words or limit <= 0:
            return []
        if not any(c.key in CHUNK_KEYS for c in conditions):
            with self._snapshot() as conn:
                rowids, keys = self._cached_ranking(conn, workspace_id, words, limit, conditions, under)
                found = read(conn, workspace_id, [int(r) for r in rowids], keys) if len(rowids) else []
            if found is not None:
                return found
        return from_passages(self._ranked_search(workspace_id, terms, limit, conditions, under))

    def _read_passages(self, conn: sqlite3.Connection, workspace_id: str, wanted: list[int],
                       keys: np.ndarray) -> list[Passage] | None:
        """The passages of the ranked rows ``wanted`` (``keys``: their bm25 values), ranks
        from 1; None when a row cannot be read back or its resource is no longer ready."""
        rows, resources = self._chunk_rows(conn, workspace_id, "rowid", wanted)
        if len(rows) != len(wanted) or any(r["status"] != "ready" for r in resources.values()) \
                or any(row["resource_id"] not in resources for row in rows.values()):
            return None
        return [self._passage(rows[rid], resources[rows[rid]["resource_id"]], score=-float(key), rank=i + 1)
                for i, (rid, key) in enumerate(zip(wanted, keys))]

    def _cached_ranking(self, conn: sqlite3.Connection, workspace_id: str, terms: Sequence[str], limit: int,
                        conditions: Sequence[Condition], under: str | None) -> tuple[np.ndarray, np.ndarray]:
        """The best ``limit`` rows of the workspace's scope for ``terms`` from the cached
        term scores (resource-level ``conditions`` only): ``(rowids, bm25 values)``, best
        first (:func:`~citewell.store.searchcache.rank_rows`)."""
        scope, scope_generation = self._scope(conn, workspace_id)  # first: it reads every counter needed
        generation = self._generation(conn, SEARCH)
        # a list of resources (``eq``) or of exceptions (``ne``) narrows the cached mask of the other
        # conditions: the scope's rows are its ready resources' already, so no query, and no set or
        # mask cached beyond the snapshot for every list a question makes
        by_id = [c for c in conditions if c.key == "resource_id"]
        rest = [c for c in conditions if c.key != "resource_id"]
        resources = self._scope_resources(conn, workspace_id, rest, under)
        key = (workspace_id, None if resources is None else frozenset(resources))
        mask = self._masks.get(scope_generation, key, lambda: scope.mask(resources))
        if by_id:
            # the lookups of one question share their lists: kept for the rest of the snapshot
            listed = getattr(self._local, "masks", None)
            narrow_key = (*key, scope_generation, tuple((c.op, frozenset(c.values)) for c in by_id))
            narrowed = listed.get(narrow_key) if listed is not None else None
            if narrowed is None:
                narrowed = self._narrowed(scope, mask, by_id)
                if listed is not None and len(listed) < SNAPSHOT_MASKS:
                    listed[narrow_key] = narrowed
            mask = narrowed
        return rank_rows([self._term_scores(conn, generation, t) for t in terms], mask, limit,
                         memo=getattr(self._local, "sums", None))

    @staticmethod
    def _narrowed(scope: Scope, mask: np.ndarray, by_id: Sequence[Condition]) -> np.ndarray:
        """``mask`` (not changed) narrowed by ``resource_id`` conditions: kept to the listed
        resources (``eq``), or without them (``ne``)."""
        for c in by_id:
            rows = scope.rows_of(frozenset(c.values))
            if c.op == "ne":
                mask = mask.copy()
                mask[rows] = False
            else:
                kept = np.zeros_like(mask)
                kept[rows] = mask[rows]
                mask = kept
        return mask

    def _read_hits(self, conn: sqlite3.Connection, workspace_id: str, wanted: list[int],
                   keys: np.ndarray) -> list[TextHit] | None:
        """The :class:`TextHit` of each ranked row ``wanted`` (``keys``: their bm25 values);
        None when a row cannot be read back or its resource is no longer ready. Rows of
        ready resources read once are kept for the store-wide search generation (a write
        anywhere that changes what a search sees moves it); the others are read with
        their resources' status, one query per 500 rows."""
        generation = self._generation(conn, SEARCH)
        rows: dict[int, tuple[str, str, str]] = {}
        missing: list[int] = []
        for rowid in wanted:
            held = self._hit_rows.peek(generation, rowid)
            if held is not None and held[0] == workspace_id:
                rows[rowid] = held[1:]
            else:
                missing.append(rowid)
        cur = conn.cursor()
        cur.row_factory = None
        ready = True
        for i in range(0, len(missing), 500):
            batch = missing[i:i + 500]
            # the status by the resource's key per row: a join would read every resource of the store
            for r in cur.execute("SELECT c.rowid, c.id, c.resource_id, c.text, (SELECT r.status FROM resources r "
                                 f"WHERE r.id = c.resource_id) FROM chunks c WHERE c.rowid IN ({','.join('?' * len(batch))}) "
                                 "AND c.workspace_id = ?", [*batch, workspace_id]):
                rows[r[0]] = (r[1], r[2], r[3])
                if r[4] == "ready":
                    self._hit_rows.put(generation, r[0], (workspace_id, r[1], r[2], r[3]))
                else:
                    ready = False
        if len(rows) != len(wanted) or not ready:
            return None
        return [TextHit(*rows[rid], -float(key)) for rid, key in zip(wanted, keys)]

    def count_resources(self, workspace_id: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> int:
        """Ready resources with chunks matching ``conditions`` (see the Store protocol).

        Resource by resource, each looking for one matching chunk by the index of its chunks,
        so the time grows with the resources, not the chunks (a join counting distinct
        resources over every chunk took 0.8–1.0 s on a million chunks without a filter,
        this 40–60 ms: ``benchmarks/count_resources_bench.py``)."""
        # conditions on the resource test each resource once, outside the search for its chunk
        outer, outer_args = filter_sql([c for c in conditions if c.key not in CHUNK_KEYS])
        inner, inner_args = filter_sql([c for c in conditions if c.key in CHUNK_KEYS])
        sql = ("SELECT count(*) FROM resources r WHERE r.workspace_id = ? AND r.status = 'ready'" + outer +
               " AND EXISTS (SELECT 1 FROM chunks c WHERE c.resource_id = r.id AND c.workspace_id = ?" + inner + ")")
        params: list[Any] = [workspace_id, *outer_args, workspace_id, *inner_args]
        if under is not None:
            prefix = under.rstrip("/") + "/"
            sql += (" AND EXISTS (SELECT 1 FROM files f WHERE f.present = 1 AND f.resource_id = r.id "
                    "AND substr(f.path, 1, ?) = ?)")
            params += [len(prefix), prefix]
        return int(self._conn().execute(sql, params).fetchone()[0])

