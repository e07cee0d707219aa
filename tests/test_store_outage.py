"""The store while its database is down or flaky: ``STORE_UNAVAILABLE``.

On PostgreSQL the database is made unreachable with :class:`~tests.pgserver.Outage` (a
relay in front of the session's server, cut and restored), so these tests see what a
stopped server does to the store: refused connections and connections dropped under a
statement. The store then raises :class:`~citewell.errors.StoreUnavailable` at once
rather than after the pool's timeout, and the HTTP API answers 503 with ``Retry-After``.
No timing is asserted: a call that should end early is given a pool timeout it could
never reach and a generous join.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.requests import Request

from citewell import Engine
from citewell.errors import CitewellError, StoreError, StoreUnavailable
from citewell.store.postgres import PostgresStore
from citewell.web import create_app
from citewell.web.errors import citewell_error_handler

from .pgserver import Outage, PostgresServer

with warnings.catch_warnings():  # starlette nags about httpx2; the client works the same
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TEXT = b"Pumps move water uphill.\n\nThe reservoir holds forty thousand litres of water.\n"


def _until(predicate: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    """Poll ``predicate`` until it returns something true (a bounded loop, not a timing check)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def _raised(call: Callable[[], Any], join_s: float = 60.0) -> BaseException | None:
    """What ``call`` raised, run on a thread given ``join_s`` to end (it should end at once:
    the tests set a pool timeout far beyond it)."""
    caught: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            caught.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            caught.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(join_s)
    assert caught, "the call was still waiting for a connection"
    return caught[0]


def _reachable(call: Callable[[], Any]) -> Any:
    """``call()``'s result once the store reaches its database again (STORE_UNAVAILABLE meanwhile)."""
    def attempt() -> Any:
        try:
            return (call(),)
        except StoreUnavailable:
            return None
    return _until(attempt)[0]


@pytest.fixture
def outage(postgres_server: PostgresServer) -> Iterator[Outage]:
    """A relay to the session's PostgreSQL server that the test cuts and restores."""
    relay = Outage(postgres_server)
    yield relay
    relay.close()


# -- the connection layer (PostgreSQL) ---------------------------------------------------------

def test_an_unreachable_database_is_store_unavailable_at_once_then_works_again(
        postgres_server: PostgresServer, outage: Outage, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database goes away: a read waiting for a connection ends with STORE_UNAVAILABLE as
    soon as the pool's connection attempt fails (not after the pool's timeout, set here far
    beyond the test's patience); the next read fails without asking the pool at all; once
    the database is back the store works again by itself."""
    from citewell.store.postgres import connection

    monkeypatch.setattr(connection, "POOL_TIMEOUT_S", 3600.0)
    monkeypatch.setattr(connection, "FAIL_FAST_S", 3600.0)
    store = PostgresStore(outage.url(postgres_server.new_database()))
    try:
        ws = store.workspace_id("acme")
        outage.cut()
        first = _raised(lambda: store.workspace_name(ws))
        assert isinstance(first, StoreUnavailable), first
        assert first.code == "STORE_UNAVAILABLE" and isinstance(first, StoreError)
        assert "cannot be reached right now" in first.message and store.location in first.message
        assert str(first).count("\n") == 0  # one line, for the CLI

        pool = store._pool()
        asked: list[float | None] = []
        real_getconn = pool.getconn
        monkeypatch.setattr(pool, "getconn", lambda timeout=None: (asked.append(timeout), real_getconn(timeout))[1])
        second = _raised(lambda: store.workspace_name(ws))
        assert isinstance(second, StoreUnavailable) and second.code == "STORE_UNAVAILABLE"
        assert asked == []  # failed at once: the database is known to be down

        monkeypatch.setattr(connection, "FAIL_FAST_S", 0.2)
        outage.restore()
        assert _reachable(lambda: store.workspace_name(ws)) == "acme"
        assert asked  # it asked the pool again, which reconnected
    finally:
        store.close()


def test_a_write_whose_connection_is_lost_is_store_unavailable_and_writes_nothing(
        postgres_server: PostgresServer, outage: Outage) -> None:
    """The connection of an open write transaction is lost: the next statement (which cannot
    run again) fails with STORE_UNAVAILABLE, the transaction is rolled back, and the store
    writes again once the database is back."""
    url = postgres_server.new_database()
    store = PostgresStore(outage.url(url))
    try:
        ws = store.workspace_id("acme")
        with pytest.raises(StoreUnavailable) as info:
            with store._write() as conn:
                conn.execute("INSERT INTO meta VALUES ('probe', '1')")
                outage.cut()
                conn.execute("UPDATE meta SET value = '2' WHERE key = 'probe'")
        assert info.value.code == "STORE_UNAVAILABLE"
        assert "the connection was lost" in info.value.message
        outage.restore()
        assert _reachable(lambda: store.workspace_id("beta")) != ws
        with psycopg.connect(url, autocommit=True) as direct:
            assert direct.execute("SELECT count(*) FROM meta WHERE key = 'probe'").fetchone()[0] == 0
    finally:
        store.close()


def test_opening_a_store_whose_database_is_down_is_store_unavailable(postgres_server: PostgresServer,
                                                                     outage: Outage) -> None:
    """Opening a store whose server refuses connections is STORE_UNAVAILABLE with the reason
    on one line; a database that does not exist stays STORE_ERROR (not something to wait for)."""
    url = outage.url(postgres_server.new_database())
    outage.cut()
    with pytest.raises(StoreUnavailable) as info:
        PostgresStore(url)
    assert info.value.code == "STORE_UNAVAILABLE" and "\n" not in info.value.message
    assert "cannot be reached" in info.value.message
    with pytest.raises(StoreError) as missing:
        PostgresStore(postgres_server.url("no_such_database"))
    assert missing.value.code == "STORE_ERROR"


def test_the_cli_says_store_unavailable_in_one_line(postgres_server: PostgresServer, outage: Outage,
                                                    tmp_path: Path) -> None:
    """A command whose database is down prints one line with the code (no traceback, no
    libpq hint on a second line) and exits 1."""
    url = outage.url(postgres_server.new_store())
    outage.cut()
    env = {**os.environ, "CITEWELL_BLOBS": str(tmp_path / "blobs"), "CITEWELL_CONFIG": "",
           "PYTHONWARNINGS": "ignore"}
    env.pop("CITEWELL_STORE", None)
    listed = subprocess.run([sys.executable, "-m", "citewell", "keys", "list", "--store", url],
                            capture_output=True, text=True, timeout=300, env=env, check=False)
    assert (listed.returncode, listed.stdout) == (1, "")
    assert listed.stderr.startswith("error: STORE_UNAVAILABLE: cannot open the store ")
    assert listed.stderr.count("\n") == 1  # one line: no traceback, no hint of libpq's below it


# -- over HTTP ---------------------------------------------------------------------------------

def _request(path: str) -> Request:
    return Request({"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
                    "headers": [], "scheme": "http", "server": ("testserver", 80), "root_path": ""})


@pytest.mark.parametrize("path, body", [
    ("/v1/resources", {"status": "error", "error": {"code": "STORE_UNAVAILABLE", "message": "M"}}),
    ("/v1/chats", {"error": {"code": "STORE_UNAVAILABLE", "message": "M"}}),
    ("/v1/references", {"error": {"code": "STORE_UNAVAILABLE", "msg": "M", "message": "M"}, "payload": None}),
])
def test_store_unavailable_is_a_503_with_retry_after_in_each_profile(path: str, body: dict[str, Any]) -> None:
    """STORE_UNAVAILABLE answers 503 with its code (not SERVER_ERROR), a fixed message that
    does not name the database, and ``Retry-After`` in whole seconds, in the envelope of the
    route's profile; SERVER_BUSY (every page renderer busy) is a 503 with Retry-After too."""
    error = StoreUnavailable("the database of the store postgresql://db.internal/x cannot be reached right now",
                             retry_after_s=2.5)
    response = asyncio.run(citewell_error_handler(_request(path), error))
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "3"
    sent = json.loads(bytes(response.body))
    message = "The database is unreachable right now; try again in a few seconds."
    assert sent == json.loads(json.dumps(body).replace('"M"', json.dumps(message)))
    busy = asyncio.run(citewell_error_handler(_request(path), CitewellError("every page renderer stayed busy",
                                                                            code="SERVER_BUSY")))
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "5"
    assert "SERVER_BUSY" in bytes(busy.body).decode()


def test_the_api_answers_503_while_the_database_is_down(postgres_server: PostgresServer, outage: Outage,
                                                        tmp_path: Path) -> None:
    """A server whose PostgreSQL goes away answers 503 STORE_UNAVAILABLE with Retry-After
    (sessions and chats envelopes), and 200 again once it is back."""
    url = outage.url(postgres_server.new_store())
    engine = Engine(url)
    key, _ = engine.create_key()
    with TestClient(create_app(engine.store, workers=False)) as client:
        client.headers["X-API-KEY"] = key
        assert client.get("/v1/resources").status_code == 200
        outage.cut()
        for path, envelope in (("/v1/resources", "sessions"), ("/v1/chats", "chats")):
            r = client.get(path)
            assert r.status_code == 503, r.text
            assert r.headers["Retry-After"] == "5"
            error = r.json()["error"]
            assert error["code"] == "STORE_UNAVAILABLE"
            assert "127.0.0.1" not in r.text
            assert (r.json().get("status") == "error") == (envelope == "sessions")
        outage.restore()
        assert _until(lambda: client.get("/v1/resources").status_code == 200)
    engine.close()
