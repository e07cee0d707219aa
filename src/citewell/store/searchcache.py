"""In-process caches of :class:`~citewell.store.sqlite.SQLiteStore` for retrieval, tagged with
the store's generation counters so that no process ever reads a stale entry.

Generations: table ``meta`` holds ``search_generation`` (bumped in the same transaction by
every store write that changes chunks, the full-text index, resources, their files or
their facets, in any workspace) and ``vector_generation`` (bumped by every write of chunk
vectors), and the same two per workspace (``search_generation:<workspace id>`` …, bumped
with them by that workspace's writes); a write transaction that changed no row bumps
nothing. What depends on the whole full-text index (a term's ``bm25``, whose statistics
span every workspace) is tagged with the store-wide counter; what a workspace's own rows
decide is tagged with that workspace's counters, so one workspace's uploads do not empty
another's caches (issue 14). A reader reads them in
the same read transaction (snapshot) as the data it caches, so an entry is tagged with the
generation of the data it was made from; another process's commit moves the counter, and
the next reader drops the entries (see :class:`GenerationCache`). Missing rows (a store no
writer of this version touched yet) read as 0. Writes that bypass
:class:`~citewell.store.sqlite.SQLiteStore` (or come from an older citewell) move no
counter: such writers must not share a store with a long-running reader.

What is cached (all exact: a cached answer equals what SQL would return now):

- per full-text term: the rowids the term matches and their FTS5 ``bm25`` contribution
  (:class:`TermScores`). FTS5's ``bm25`` of an OR query is, bit for bit, the sum over its
  phrases (in query order, from 0.0) of ``idf × tf-part``, and a phrase's part is what
  the one-phrase query returns negated, so a search adds the cached parts in query order
  (:func:`rank_rows`) instead of scoring every matching row in SQLite;
- per workspace: the searchable chunk rows and their resources (:class:`Scope`), so a
  filter on resources becomes a numpy mask (a scope whose rows are the whole full-text
  index, ``fts_covered``, is also tagged with the store-wide counter);
- per workspace and term group: document frequencies;
- per workspace and model: the vector matrix and the embedded flags (:class:`VectorScope`);
- per workspace: the resource rows of whole lists and the resource ids a filter selects;
- per chunk row a search returned as a hit: its id, resource, workspace and text (a
  question's names are looked up again by the next question about the same company).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from functools import cached_property, lru_cache
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from ..errors import StoreError

V = TypeVar("V")

#: ``meta`` keys of the generation counters (see the module docstring)
SEARCH = "search_generation"
VECTORS = "vector_generation"
#: memory budgets of a store's term-score, vector and scope-mask caches, in bytes
TERM_CACHE_BYTES = 256 << 20
VECTOR_CACHE_BYTES = 1 << 30
MASK_CACHE_BYTES = 64 << 20
#: memory budget of a store's cache of searched rows' texts (:meth:`Search._read_hits`), in bytes
HIT_CACHE_BYTES = 64 << 20


def vector_cache_bytes() -> int:
    """The vector cache's budget in bytes: :data:`VECTOR_CACHE_BYTES`, or
    ``CITEWELL_VECTOR_CACHE_MB`` mebibytes when set (a workspace's vectors above it are
    read from the store again for every dense ranking: 384 float32 dimensions take 1.5 KiB
    a chunk, so the default holds about 700k chunks). Raises
    :class:`~citewell.errors.StoreError` when the setting is not a positive integer."""
    value = os.environ.get("CITEWELL_VECTOR_CACHE_MB", "").strip()
    if not value:
        return VECTOR_CACHE_BYTES
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise StoreError(f"CITEWELL_VECTOR_CACHE_MB must be a positive integer, not {value!r}")
    return int(value) << 20


class GenerationCache(Generic[V]):
    """A thread-safe LRU map whose entries belong to a generation (a tuple of ints).

    ``budget``: the most ``cost`` units kept (entries' ``cost(value)`` summed; the least
    recently used go first). With one generation for the whole cache (the default), a
    :meth:`get` with a newer generation empties it; with ``per_key`` each entry has its own
    (a workspace's counters: another workspace's writes leave it alone, issue 14) and a
    newer one replaces only that entry. A :meth:`get` with an older generation than the
    one held (a reader in an older snapshot) computes without storing.
    """

    def __init__(self, budget: int, cost: Callable[[V], int] = lambda _: 1, *, per_key: bool = False) -> None:
        self.budget = budget
        self.cost = cost
        self.per_key = per_key
        self.generation: tuple[int, ...] = ()
        self._items: OrderedDict[Hashable, tuple[tuple[int, ...], V]] = OrderedDict()
        self._used = 0
        self._lock = threading.Lock()

    def get(self, generation: tuple[int, ...], key: Hashable, load: Callable[[], V]) -> V:
        """The value of ``key`` at ``generation``: cached, or ``load()`` (then cached)."""
        found, value = self._held(generation, key)
        if found:
            return value  # type: ignore[return-value]
        value = load()
        self.put(generation, key, value)
        return value

    def peek(self, generation: tuple[int, ...], key: Hashable) -> V | None:
        """The value of ``key`` cached at ``generation``, or None (nothing is loaded)."""
        return self._held(generation, key)[1]

    def _held(self, generation: tuple[int, ...], key: Hashable) -> tuple[bool, V | None]:
        with self._lock:
            if not self.per_key and generation > self.generation:
                self._items.clear()
                self._used = 0
                self.generation = generation
            held = self._items.get(key)
            if held is not None and held[0] == generation:
                self._items.move_to_end(key)
                return True, held[1]
        return False, None

    def put(self, generation: tuple[int, ...], key: Hashable, value: V) -> None:
        """Cache ``value`` as ``key``'s at ``generation`` unless a newer generation is held
        (then a reader of an older snapshot made it: not kept); over budget, the least
        recently used entries go."""
        with self._lock:
            held = self._items.get(key)
            fresh = (held is None or generation >= held[0]) if self.per_key else generation == self.generation
            if fresh:
                if held is not None:
                    del self._items[key]
                    self._used -= self.cost(held[1])
                size = self.cost(value)
                if size <= self.budget:
                    self._items[key] = (generation, value)
                    self._used += size
                    while self._used > self.budget:
                        _, (_, old) = self._items.popitem(last=False)
                        self._used -= self.cost(old)


@dataclass(frozen=True)
class TermScores:
    """What one full-text term matches: ``rowids`` (int64, n, ascending and distinct) and
    ``parts`` (float64, n), the term's share of FTS5 ``bm25`` for each of those rows. Every
    part is positive: FTS5 floors a term's IDF at 1e-6 and :data:`BM25_WEIGHTS
    <citewell.store.sqlite.lexical.BM25_WEIGHTS>` are positive, so a row some term matches
    has a positive sum (:func:`rank_rows` relies on it)."""

    rowids: np.ndarray
    parts: np.ndarray

    def __post_init__(self) -> None:
        """Raises :class:`~citewell.errors.StoreError` unless the rowids ascend (distinct) and
        every part is positive, as both full-text indexes give them: :func:`rank_rows` would
        drop a row whose parts sum to 0.0 and misplace rows out of order."""
        if len(self.rowids) != len(self.parts) or (len(self.rowids) and not (
                bool((self.rowids[1:] > self.rowids[:-1]).all()) and bool((self.parts > 0.0).all()))):
            raise StoreError("the full-text index gave a term's rows out of order or with a score share "
                             "that is not positive: the index is damaged")

    @property
    def nbytes(self) -> int:
        """Memory held, in bytes."""
        return int(self.rowids.nbytes + self.parts.nbytes)


@dataclass(frozen=True)
class Scope:
    """A workspace's chunk rows (of ready resources) in rowid order.

    ``rowids`` (int64, n); ``resource_index`` (int32, n) into ``resource_ids``;
    ``fts_covered``: every row of the full-text index is one of ``rowids`` (so a full-text
    count needs no join to be a count of this workspace's rows).
    """

    rowids: np.ndarray
    resource_index: np.ndarray
    resource_ids: tuple[str, ...]
    fts_covered: bool

    def rows_of(self, resources: set[str] | frozenset[str]) -> np.ndarray:
        """The rowids of this scope whose resource is in ``resources`` (ids of no resource
        of the scope select nothing), grouped by resource: time that grows with those rows,
        after one sort of the scope by resource (:attr:`by_resource`)."""
        rows, starts = self.by_resource
        positions = _positions(self.resource_ids)
        picked = [rows[starts[i]:starts[i + 1]] for i in sorted(positions[r] for r in resources if r in positions)]
        return np.concatenate(picked) if picked else np.zeros(0, dtype=self.rowids.dtype)

    @cached_property
    def by_resource(self) -> tuple[np.ndarray, np.ndarray]:
        """The scope's rowids ordered by resource position (stable: rowid order within one)
        and where each position's run starts (``len(resource_ids) + 1`` offsets)."""
        order = np.argsort(self.resource_index, kind="stable")
        starts = np.searchsorted(self.resource_index[order], np.arange(len(self.resource_ids) + 1))
        return self.rowids[order], starts

    def mask(self, resources: set[str] | None) -> np.ndarray:
        """Boolean mask over rowids ``0..max rowid``: rows of this scope whose resource is in
        ``resources`` (None: every row)."""
        out = np.zeros(int(self.rowids[-1]) + 1 if len(self.rowids) else 0, dtype=bool)
        out[self.rowids[select(self.resource_index, self.resource_ids, resources)]] = True
        return out


@dataclass(frozen=True)
class VectorScope:
    """A workspace's searchable chunks (current version, ready resource) in rowid order,
    for dense retrieval: ``ids`` (chunk ids, n), ``resource_index`` (int32, n) into
    ``resource_ids``, ``embedded`` (bool, n: has a vector of the model). ``matrix``: the
    float32 vectors (n, dim) when every row is embedded and they were loaded, else (0, 0)."""

    ids: tuple[str, ...]
    resource_index: np.ndarray
    resource_ids: tuple[str, ...]
    embedded: np.ndarray
    matrix: np.ndarray

    @property
    def nbytes(self) -> int:
        """Approximate memory held, in bytes."""
        return int(self.matrix.nbytes + 80 * len(self.ids))


def select(resource_index: np.ndarray, resource_ids: tuple[str, ...],
           resources: set[str] | None) -> np.ndarray:
    """Boolean (n,) over rows: whose resource is in ``resources`` (None: all rows)."""
    if resources is None:
        return np.ones(len(resource_index), dtype=bool)
    positions = _positions(resource_ids)
    wanted = np.zeros(len(resource_ids), dtype=bool)  # by resource position: one of ``resources``
    if len(resources) < len(resource_ids):
        wanted[[positions[rid] for rid in resources if rid in positions]] = True
    else:
        wanted[[i for i, rid in enumerate(resource_ids) if rid in resources]] = True
    return wanted[resource_index]


@lru_cache(maxsize=64)
def _positions(resource_ids: tuple[str, ...]) -> dict[str, int]:
    """Each resource id's position in ``resource_ids`` (cached: a scope's ids are asked about
    on every filtered search)."""
    return {rid: i for i, rid in enumerate(resource_ids)}


def rank_rows(terms: list[TermScores], mask: np.ndarray, limit: int, *,
              memo: SumMemo | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The best ``limit`` rows matching any term within ``mask``, by FTS5 ``bm25`` (the sum
    of the terms' parts, added in ``terms`` order from 0.0, negated: lower is better), ties
    by rowid: ``(rowids, bm25 values)``, best first.

    One term needs no sum: its rows within ``mask`` are ranked by their parts. Terms that
    match few rows, next to the size of the mask (:data:`SPARSE_SHARE`), are summed over
    the rows they match within it (:func:`_sparse_totals`), the others into an array as
    long as the store (:func:`_dense_totals`, before the mask, so that ``memo``, when
    given, keeps the sums for another ranking of the same terms under another mask: a
    search and its narrower search of the named documents), whose best rows
    :func:`_best_within` picks. The same sums, added in the same order, so the same values
    bit for bit; only the time differs."""
    if len(terms) == 1:
        rows, totals = _within(terms[0].rowids, 0.0 + terms[0].parts, mask)
    elif sum(len(t.rowids) for t in terms) * SPARSE_SHARE < len(mask):
        rows, totals = _sparse_totals(terms, mask)
    else:
        total = memo.get(terms) if memo is not None else None
        if total is None:
            total = _dense_totals(terms)
            if memo is not None:
                memo.put(terms, total)
        return _best_within(total, mask, limit)
    keys = -1.0 * totals
    if len(rows) > limit:
        cut = np.partition(keys, limit - 1)[limit - 1]
        keep = keys <= cut
        rows, keys = rows[keep], keys[keep]
    order = np.lexsort((rows, keys))[:limit]
    return rows[order], keys[order]


class SumMemo:
    """The store-long sums (:func:`_dense_totals`) of the last term list :func:`rank_rows`
    summed, kept for the rest of one snapshot (:meth:`~citewell.store.sqlbase.SQLBase._snapshot`),
    where term scores cannot change: one entry, so at most one store-long float64 array
    (8 bytes a row) per reader."""

    def __init__(self) -> None:
        self._terms: list[TermScores] | None = None
        self._sums: np.ndarray | None = None

    def get(self, terms: list[TermScores]) -> np.ndarray | None:
        """The sums of ``terms`` (the same term objects in the same order), or None."""
        held = self._terms
        if held is None or len(held) != len(terms) or any(a is not b for a, b in zip(held, terms)):
            return None
        return self._sums

    def put(self, terms: list[TermScores], sums: np.ndarray) -> None:
        """Keep ``sums`` as those of ``terms`` (replacing the entry held)."""
        self._terms, self._sums = list(terms), sums


def _within(rows: np.ndarray, totals: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``rows`` (and their ``totals``) that ``mask`` keeps (rows past its end: none)."""
    keep = rows < len(mask)
    keep[keep] = mask[rows[keep]]
    return rows[keep], totals[keep]


#: :func:`rank_rows` sums several terms over the matched rows when this many times their
#: count (all terms together) is below the mask's length, over a store-long array otherwise:
#: about where the two take the same time on a million rows (``benchmarks/rank_rows_bench.py``:
#: 250,000 parts of 3 terms, 5.3 ms over the matched rows and 4.6 ms store-long with no
#: mask, 2.6 and 4.1 ms under a mask of a fifth of the rows)
SPARSE_SHARE = 4
#: rows per block of :func:`_dense_totals`: every term adds its parts of one block before
#: the next block, so the block's sums (256 KiB of float64) stay in the CPU cache; on a
#: million rows and 30 terms this took 25 ms instead of 34 for term after term over the
#: whole array (2^13: 25 ms, 2^17: 28 ms, 2^18: 31 ms; ``benchmarks/rank_rows_bench.py``)
SUM_BLOCK = 1 << 15
#: rows per block whose maximum :func:`_best_within` takes to bound the ``limit``-th best sum
TOP_BLOCK = 1 << 10


def _dense_totals(terms: list[TermScores]) -> np.ndarray:
    """Each row's summed parts (float64, as long as the highest matched rowid + 1; 0.0 for a
    row no term matches), added in ``terms`` order from 0.0, block by block
    (:data:`SUM_BLOCK`). No mask: :func:`_best_within` applies it."""
    size = max([0] + [int(t.rowids[-1]) + 1 for t in terms if len(t.rowids)])
    total = np.zeros(size, dtype=np.float64)
    edges = np.arange(0, size + SUM_BLOCK, SUM_BLOCK)
    cuts = [np.searchsorted(t.rowids, edges).tolist() for t in terms]
    for block in range(len(edges) - 1):
        for t, cut in zip(terms, cuts):
            a, b = cut[block], cut[block + 1]
            if a < b:
                total[t.rowids[a:b]] += t.parts[a:b]
    return total


def _best_within(total: np.ndarray, mask: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rank_rows`'s answer from store-long sums: the best ``limit`` rows of ``mask``
    with a positive sum (a match: parts are positive, :class:`TermScores`), ties by rowid.

    Only rows at or above a floor are sorted: the ``limit``-th largest of the maxima of
    :data:`TOP_BLOCK`-row blocks. Those ``limit`` maxima are sums of ``limit`` distinct rows,
    so at least ``limit`` rows reach the floor and every row of the best ``limit`` does."""
    n = min(len(total), len(mask))
    # x * True is x, bit for bit; x * False is 0.0 (a mask of every row needs no product)
    within = total[:n] if mask[:n].all() else total[:n] * mask[:n]
    whole = n // TOP_BLOCK * TOP_BLOCK
    maxima = within[:whole].reshape(-1, TOP_BLOCK).max(axis=1)
    if whole < n:
        maxima = np.append(maxima, within[whole:].max())
    floor = float(np.partition(maxima, len(maxima) - limit)[len(maxima) - limit]) \
        if 0 < limit < len(maxima) else 0.0
    rows = np.flatnonzero(within >= floor if floor > 0.0 else within > 0.0)  # a comparison: faster than floats
    keys = -1.0 * within[rows]
    order = np.lexsort((rows, keys))[:limit]
    return rows[order], keys[order]


def _sparse_totals(terms: list[TermScores], mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows some term matches within ``mask`` (ascending) and their summed parts, the
    same values as :func:`_dense_totals` has for them, through the matched rows only: each term's rows
    within ``mask``, put together in ``terms`` order, grouped by rowid (a stable sort keeps
    that order within a row) and summed per row from 0.0 in that order (``np.bincount``
    adds its weights one by one, in input order)."""
    rows_of: list[np.ndarray] = []
    parts_of: list[np.ndarray] = []
    for t in terms:
        rows, parts = t.rowids, t.parts
        inside = rows < len(mask)
        if not inside.all():
            rows, parts = rows[inside], parts[inside]
        keep = mask[rows]
        rows_of.append(rows[keep])
        parts_of.append(parts[keep])
    rows = np.concatenate(rows_of) if rows_of else np.zeros(0, dtype=np.int64)
    parts = np.concatenate(parts_of) if parts_of else np.zeros(0, dtype=np.float64)
    if not len(rows):
        return rows, parts
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group = np.empty(len(rows), dtype=np.intp)
    group[order] = np.cumsum(first) - 1
    distinct = ordered[first]
    return distinct, np.bincount(group, weights=parts, minlength=len(distinct))
