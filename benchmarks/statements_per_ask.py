"""The SQL statements one warm ``Engine.ask`` runs, by statement, on a store.

Run by hand (not part of the test suite)::

    python benchmarks/statements_per_ask.py --store postgresql://postgres@127.0.0.1:5433/pg1m \
        --mode hybrid --questions 10

Opens the store (a SQLite path or a PostgreSQL URL; its first workspace), asks the first
``--questions`` FinanceBench dev questions (``../shared/corpus/eval/financebench_dev.jsonl``)
once untimed (caches warm), then again while counting every statement the store runs
(SQLite: the connection's trace hook; PostgreSQL: the store's cursor), and prints the
statements per question, most frequent first, with their first 90 characters and, on
PostgreSQL, their mean wall time per question (ms): each is a round trip to the server.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

from retrieve_repeat import ROOT, dev_questions  # noqa: E402 - beside this script

sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    """Parse arguments, count the statements, print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="a SQLite store path or a postgresql:// URL")
    parser.add_argument("--mode", default="hybrid", help="lexical, dense or hybrid")
    parser.add_argument("--questions", type=int, default=10)
    args = parser.parse_args()
    from citewell import Engine
    from citewell.store import open_store

    questions = dev_questions(args.questions)
    store = open_store(args.store)
    counts: collections.Counter[str] = collections.Counter()
    spent: collections.Counter[str] = collections.Counter()
    with Engine(store, workspace=store.workspace_name(store.workspace_ids()[0]), mode=args.mode) as engine:
        for q in questions:
            engine.ask(q, k=5, sync=False)
        if args.store.startswith(("postgresql://", "postgres://")):
            from citewell.store.postgres import connection

            run = connection.Cursor._run

            def counted(self, sql, params, *, many):  # noqa: ANN001, ANN202 - Cursor._run's own
                started = time.perf_counter()
                try:
                    return run(self, sql, params, many=many)
                finally:
                    counts[sql[:90]] += 1
                    spent[sql[:90]] += time.perf_counter() - started

            connection.Cursor._run = counted
        else:
            store._conn().set_trace_callback(lambda sql: counts.update([sql[:90]]))
        for q in questions:
            engine.ask(q, k=5, sync=False)
    n = len(questions)
    print(f"{sum(counts.values()) / n:.1f} statements a question ({args.mode}, {n} questions)")
    for sql, count in counts.most_common():
        timing = f" {spent[sql] / n * 1000:6.1f} ms" if spent else ""
        print(f"{count / n:6.1f}{timing}  {sql}")


if __name__ == "__main__":
    main()
