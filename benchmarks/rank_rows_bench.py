"""Time :func:`citewell.store.searchcache.rank_rows`'s store-long sums on synthetic terms.

A million rows and 30 terms that each match 5,000 to 500,000 of them (about 5.9 million
parts, as a 20-word question with its expansions matches on the million-chunk store of
``latency_bench.py``). Prints the best of seven runs, in ms, of:

- the sums term after term over the whole array, then per block of ``SUM_BLOCK`` rows for
  several block sizes (the same values, bit for bit: checked);
- ``rank_rows`` itself (limit 200) with no mask and with a mask of a fifth of the rows;
- the two ways of summing several terms (over the matched rows, ``_sparse_totals``, or
  store-long, ``_dense_totals``) by parts matched and mask, where ``SPARSE_SHARE`` chooses.

Run by hand: ``python benchmarks/rank_rows_bench.py`` (no store, no network).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from citewell.store import searchcache
from citewell.store.searchcache import TermScores, rank_rows

ROWS = 1_000_451


def best_ms(run: Callable[[], object], repeat: int = 7) -> float:
    """The fastest of ``repeat`` runs of ``run``, in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def synthetic_terms(seed: int = 0) -> list[TermScores]:
    """30 terms over :data:`ROWS` rows, ascending distinct rowids, positive parts."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([5_000, 30_000, 80_000, 150_000, 300_000, 500_000], size=30)
    return [TermScores(np.sort(rng.choice(ROWS, int(s), replace=False)).astype(np.int64), rng.random(int(s)) + 0.01)
            for s in sizes]


def term_after_term(terms: list[TermScores]) -> np.ndarray:
    """The sums without blocks: each term over the whole array in turn."""
    total = np.zeros(ROWS, dtype=np.float64)
    for t in terms:
        total[t.rowids] += t.parts
    return total


def main() -> None:
    """Print the timings (module docstring)."""
    terms = synthetic_terms()
    print(f"{ROWS:,} rows, {len(terms)} terms, {sum(len(t.rowids) for t in terms):,} parts")
    reference = term_after_term(terms)
    print(f"term after term: {best_ms(lambda: term_after_term(terms)):.1f} ms")
    default = searchcache.SUM_BLOCK
    for block in (1 << 13, 1 << 15, 1 << 17, 1 << 18, 1 << 20):
        searchcache.SUM_BLOCK = block
        assert np.array_equal(searchcache._dense_totals(terms)[:ROWS], reference)
        print(f"blocks of 2^{block.bit_length() - 1} rows: {best_ms(lambda: searchcache._dense_totals(terms)):.1f} ms")
    searchcache.SUM_BLOCK = default
    whole = np.ones(ROWS, dtype=bool)
    fifth = np.random.default_rng(1).random(ROWS) < 0.2
    for name, mask in (("no mask", whole), ("a fifth of the rows", fifth)):
        print(f"rank_rows, limit 200, {name}: {best_ms(lambda: rank_rows(terms, mask, 200)):.1f} ms")
    rng = np.random.default_rng(2)
    for name, mask in (("no mask", whole), ("a fifth of the rows", fifth)):
        for matched in (60_000, 125_000, 250_000, 500_000):
            three = [TermScores(np.sort(rng.choice(ROWS, matched // 3, replace=False)).astype(np.int64),
                                rng.random(matched // 3) + 0.01) for _ in range(3)]
            sparse = best_ms(lambda: searchcache._sparse_totals(three, mask), 5)
            dense = best_ms(lambda: searchcache._best_within(searchcache._dense_totals(three), mask, 100), 5)
            print(f"3 terms, {matched:,} parts, {name}: {sparse:.1f} ms over the matched rows, "
                  f"{dense:.1f} ms store-long")


if __name__ == "__main__":
    main()
