"""Time ``Store.count_resources`` (what an answer with no passage asks, to say whether
anything in scope is searchable) on a large store: no filter, a document filter that
matches, and one that matches nothing. Best of ``--repeat`` calls, in ms.

Run by hand in each tree to compare versions (the store is only read)::

    python benchmarks/count_resources_bench.py --store postgresql://postgres@127.0.0.1:5433/pg1m
    python benchmarks/count_resources_bench.py --store /work/eval/pg1m/sqlite/citewell.sqlite
"""

from __future__ import annotations

import argparse
import time

from citewell.store import open_store
from citewell.store.base import Condition


def main() -> None:
    """Print each filter's count and best time (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="a SQLite path or a postgresql:// URL")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    store = open_store(args.store)
    try:
        workspace = store.workspace_ids()[0]
        title = store.resources(workspace, statuses=["ready"], limit=1)[0].title.lower()
        cases = {"no filter": [], f"document_name={title}": [Condition("document_name", "eq", (title,))],
                 "document_name=(none)": [Condition("document_name", "eq", ("no-such-document",))]}
        for name, conditions in cases.items():
            best, count = float("inf"), 0
            for _ in range(args.repeat):
                started = time.perf_counter()
                count = store.count_resources(workspace, conditions=conditions)
                best = min(best, time.perf_counter() - started)
            print(f"{name}: {count} resources, best {best * 1000:.1f} ms", flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    main()
