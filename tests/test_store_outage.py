"""The store while its database is down or flaky: ``STORE_UNAVAILABLE``.

On PostgreSQL the database is made unreachable with :class:`~tests.pgserver.Outage` (a
relay in front of the session's server, cut and restored), so these tests see what a
stopped server does to the store: refused connections and connections dropped under a
statement. The store then raises :class:`~citewell.errors.StoreUnavailable` at once
rather than after the pool's timeout, the HTTP API answers 503 with ``Retry-After``, jobs
whose store failed are retried (and, out of attempts, settle what they were doing
``failed``), and a turn never stays pending. No timing is asserted: a call that should
end early is given a pool timeout it could never reach and a generous join.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.requests import Request

from citewell import Engine
from citewell.errors import CitewellError, StoreError, StoreUnavailable
from citewell.jobs.runner import JobRunner, wait_for_jobs
from citewell.store.jobs import JobRecord
from citewell.store.postgres import PostgresStore
from citewell.web import create_app
from citewell.web.errors import citewell_error_handler
from citewell.jobs.extraction import ExtractHandler
from citewell.jobs.kinds import EXTRACT
from citewell.jobs.workers import TurnWorker, UploadWorker

from .conftest import until
from .pgserver import Outage, PostgresServer

with warnings.catch_warnings():  # starlette nags about httpx2; the client works the same
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TEXT = b"Pumps move water uphill.\n\nThe reservoir holds forty thousand litres of water.\n"


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
    return until(attempt)[0]


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
        assert until(lambda: client.get("/v1/resources").status_code == 200)
    engine.close()


# -- jobs ----------------------------------------------------------------------------------------

@pytest.fixture
def staged(store_location: str | Path) -> Iterator[tuple[Engine, str]]:
    """An engine on a fresh store (each kind) with one upload staged, still processing: (engine, resource id)."""
    with Engine(store_location) as engine:
        resource = engine.upload("pumps.txt", TEXT)
        assert resource.status == "processing"
        yield engine, resource.id


def _extraction(engine: Engine) -> JobRunner:
    return JobRunner(engine.store, [ExtractHandler(engine.store, lambda ws, rid: None)], threads=1, name="t",
                     poll_s=0.02, backoff_s=0.05)


def test_an_upload_left_without_a_job_is_queued_by_the_ingest_runners_housekeeping(
        staged: tuple[Engine, str]) -> None:
    """An outage between an upload's row and its job leaves the upload processing with no
    job (the client got 503): the extraction runner's housekeeping
    (UploadWorker.recover at its heartbeat, not only at a server's start) queues it once,
    and it ends ready."""
    engine, resource_id = staged
    assert engine.store.jobs(workspace_id=engine.workspace_id, kinds=(EXTRACT,)) == []
    uploads = UploadWorker(engine.store, threads=1, start=False)
    runner = uploads.extraction
    assert runner is not None
    runner.lease_s, runner.housekeeping_s, runner._next_housekeeping = 0.3, 0.1, 0.0  # beats often
    uploads.start()
    try:
        until(lambda: engine.store.resource(engine.workspace_id, resource_id).status == "ready")
    finally:
        uploads.shutdown()
    jobs = engine.store.jobs(workspace_id=engine.workspace_id, kinds=(EXTRACT,))
    assert [(j.state, j.payload["resource_id"]) for j in jobs] == [("done", resource_id)]


def test_an_upload_that_turns_ready_after_the_listing_is_not_queued_again(
        staged: tuple[Engine, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The housekeeping's race (seen in CI): it lists the uploads still processing, the
    upload's running job turns it ready and ends, then the housekeeping queues it. The
    insert reads the status itself, so the stale listing queues nothing (each store)."""
    engine, resource_id = staged
    store = engine.store
    assert store.enqueue_pending_uploads(EXTRACT) == 1
    assert store.enqueue_pending_uploads(EXTRACT) == 0  # its job is queued
    job = store.claim_job("t", kinds=(EXTRACT,), lease_s=30)
    assert job is not None and job.payload["resource_id"] == resource_id
    listing = store.pending_uploads()
    assert listing == [(engine.workspace_id, resource_id)]
    assert engine.process(resource_id).status == "ready"
    assert job.lease_token is not None and store.finish_job(job.id, job.lease_token)
    monkeypatch.setattr(store, "pending_uploads", lambda: listing)  # the listing taken before
    assert store.enqueue_pending_uploads(EXTRACT) == 0
    jobs = store.jobs(workspace_id=engine.workspace_id, kinds=(EXTRACT,))
    assert [(j.state, j.payload["resource_id"]) for j in jobs] == [("done", resource_id)]


def _failing_commits(monkeypatch: pytest.MonkeyPatch, engine: Engine, times: int) -> list[str]:
    """Make the store's commit of a *ready* upload raise STORE_UNAVAILABLE ``times`` times
    (a failed upload's row is written as usual); returns the statuses committed, in order."""
    store = engine.store
    real = store.commit_resource
    seen: list[str] = []

    def flaky(workspace_id: str, resource: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(resource.status)
        if resource.status == "ready" and seen.count("ready") <= times:
            raise StoreUnavailable("the connection was lost")
        return real(workspace_id, resource, *args, **kwargs)

    monkeypatch.setattr(store, "commit_resource", flaky)
    return seen


def _extract_until_settled(engine: Engine, resource_id: str, *, max_attempts: int) -> JobRecord:
    """Queue the extraction of upload ``resource_id`` with ``max_attempts``, run extraction
    workers until no extraction job is left queued or running, and return its job."""
    job, _ = engine.store.enqueue_job(engine.workspace_id, EXTRACT, {"resource_id": resource_id},
                                      key=f"{EXTRACT}:{resource_id}", max_attempts=max_attempts)
    runner = _extraction(engine).start()
    try:
        assert wait_for_jobs(engine.store, kinds=[EXTRACT], timeout_s=120)
    finally:
        runner.stop()
    return engine.store.job(job.id)


def test_an_upload_whose_commit_meets_an_unreachable_store_is_retried_and_ends_ready(
        staged: tuple[Engine, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit of an extracted upload fails with STORE_UNAVAILABLE: the upload is not
    stored failed but stays processing, its job is retried with backoff, and the next
    attempt stores it ready with its passages."""
    engine, resource_id = staged
    seen = _failing_commits(monkeypatch, engine, times=1)
    done = _extract_until_settled(engine, resource_id, max_attempts=3)
    assert (done.state, done.attempts) == ("done", 2)
    assert done.error is not None and done.error["code"] == "STORE_UNAVAILABLE"  # the failed attempt's
    assert seen == ["ready", "ready"]  # never stored failed
    resource = engine.store.resource(engine.workspace_id, resource_id)
    assert (resource.status, resource.error) == ("ready", None) and resource.chunk_count >= 1
    assert [p.chunk.resource_id for p in engine.store.search_text(engine.workspace_id, ["reservoir"], limit=3)] \
        == [resource_id]


def test_an_upload_whose_job_runs_out_of_attempts_settles_failed_with_the_code(
        staged: tuple[Engine, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every commit fails with STORE_UNAVAILABLE: once the job is dead-lettered after its
    last attempt, the upload settles failed with STORE_UNAVAILABLE and a message naming the
    file and no internals, and its staged bytes are gone."""
    engine, resource_id = staged
    staged_key = engine._ingestor.staged(engine.store.resource(engine.workspace_id, resource_id))
    assert engine.store.blobs.exists(staged_key)
    seen = _failing_commits(monkeypatch, engine, times=99)
    dead = _extract_until_settled(engine, resource_id, max_attempts=2)
    assert (dead.state, dead.attempts, dead.error["code"]) == ("failed", 2, "STORE_UNAVAILABLE")
    assert seen == ["ready", "ready", "failed"]
    resource = engine.store.resource(engine.workspace_id, resource_id)
    assert resource.status == "failed" and resource.error is not None
    assert resource.error.code == "STORE_UNAVAILABLE"
    assert resource.error.message == ("pumps.txt: could not be stored: the database was unreachable (2 attempts); "
                                      "upload the file again")
    assert not engine.store.blobs.exists(staged_key)


def test_an_upload_whose_worker_died_on_its_last_attempt_settles_failed(staged: tuple[Engine, str]) -> None:
    """The other way to the dead letter: the worker holding the upload's last attempt died
    (its lease expired). Taking the job back hands it to the extract handler, and the
    upload settles failed with LEASE_EXPIRED instead of staying processing."""
    engine, resource_id = staged
    job, _ = engine.store.enqueue_job(engine.workspace_id, EXTRACT, {"resource_id": resource_id},
                                      key=f"{EXTRACT}:{resource_id}", max_attempts=1)
    assert engine.store.claim_job("dead-worker", kinds=[EXTRACT], lease_s=0.001) is not None
    assert until(_extraction(engine).reap) == 1  # the lease (a millisecond) has expired
    assert engine.store.job(job.id).state == "failed"
    resource = engine.store.resource(engine.workspace_id, resource_id)
    assert resource.status == "failed" and resource.error is not None
    assert resource.error.code == "LEASE_EXPIRED"
    assert resource.error.message.startswith("pumps.txt: the worker processing it stopped before it was done")


def test_a_turn_whose_store_fails_while_answering_and_settling_is_failed_not_left_pending(
        store_location: str | Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store fails under a turn's answer and again under settling it failed: the turn's
    job fails with STORE_UNAVAILABLE and, the store answering again, the message settles
    failed with STORE_UNAVAILABLE and a message naming no internals (before, the job ended
    ``done`` with the message pending for good)."""
    with Engine(store_location) as engine:
        pending = engine.begin_turn("How much water does the reservoir hold?")

        def unreachable(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable("the database of the store x cannot be reached right now")

        monkeypatch.setattr(engine, "_retrieve_for", unreachable)
        real_settle = engine.store.settle_message
        settles: list[str] = []

        def settle_once_down(workspace_id: str, message: Any) -> Any:
            settles.append(message.status)
            if len(settles) == 1:
                raise StoreUnavailable("the database of the store x cannot be reached right now")
            return real_settle(workspace_id, message)

        monkeypatch.setattr(engine.store, "settle_message", settle_once_down)
        turns = TurnWorker(engine.store, threads=1, poll_s=0.02)
        try:
            turns.submit(engine, pending)
            assert wait_for_jobs(engine.store, kinds=["turn"], timeout_s=120)
        finally:
            turns.shutdown()
        job = engine.store.jobs(kinds=["turn"])[0]
        assert (job.state, job.error["code"]) == ("failed", "STORE_UNAVAILABLE")
        message = engine.message(pending.message.id)
        assert message.status == "failed"
        error = (message.model_extra or {}).get("error")
        assert error == {"code": "STORE_UNAVAILABLE",
                         "message": "the database could not be reached while the answer was written; ask again"}
        assert settles == ["failed", "failed"]


def test_the_cli_says_store_unavailable_in_one_line_when_the_database_goes_mid_command(
        postgres_server: PostgresServer, tmp_path: Path) -> None:
    """The database goes away after ``citewell ask`` opened the store (here: as retrieval
    starts): the command still prints exactly one line, ``error: STORE_UNAVAILABLE: …``,
    and exits 1. The connection pool's own warnings (several lines each, with libpq's
    hints) must not reach the user's terminal."""
    url = postgres_server.new_store()
    with Engine(PostgresStore(url, blobs=tmp_path / "blobs")) as engine:
        assert engine.process(engine.upload("pumps.txt", TEXT).id).status == "ready"
    root = Path(__file__).resolve().parent.parent
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        "from tests.pgserver import Outage\n"
        "class Server:\n"
        f"    port = {postgres_server.port}\n"
        "relay = Outage(Server())\n"
        "from citewell.engine import Engine\n"
        "real = Engine._retrieve_for\n"
        "def cut(self, *args, **kwargs):\n"
        "    relay.cut()\n"
        "    return real(self, *args, **kwargs)\n"
        "Engine._retrieve_for = cut\n"
        "from citewell.cli.app import main\n"
        "main(['ask', 'How much water does the reservoir hold?', '--store', relay.url(sys.argv[1]),\n"
        "      '--mode', 'lexical'])\n")
    env = {**os.environ, "CITEWELL_BLOBS": str(tmp_path / "blobs"), "CITEWELL_CONFIG": "",
           "PYTHONWARNINGS": "ignore"}
    env.pop("CITEWELL_STORE", None)
    asked = subprocess.run([sys.executable, "-c", script, url], capture_output=True, text=True, timeout=300,
                           env=env, check=False)
    assert (asked.returncode, asked.stdout) == (1, ""), asked.stderr
    assert asked.stderr.startswith("error: STORE_UNAVAILABLE: "), asked.stderr
    assert asked.stderr.count("\n") == 1, asked.stderr


def test_a_stream_whose_reader_meets_an_unreachable_store_waits_and_ends_with_its_terminal_event(
        store_location: str | Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The analytics stream reads its recorded events from the store; the store is
    unreachable for a few of those reads (STORE_UNAVAILABLE). The stream must not break off
    (before: the response ended without its terminal event and the server logged an ASGI
    traceback): it waits for the store and then sends every event, ending with ``done``."""
    engine = Engine(store_location)
    assert engine.process(engine.upload("pumps.txt", TEXT).id).status == "ready"
    key, _ = engine.create_key()
    store = engine.store
    real_events = store.events
    failures = {"left": 3}

    def flaky_events(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name.startswith(("citewell", "TurnWorker")):
            return real_events(*args, **kwargs)  # the producer's reads are not the point here
        if failures["left"] > 0:
            failures["left"] -= 1
            raise StoreUnavailable("the database of the store x cannot be reached right now", retry_after_s=0.01)
        return real_events(*args, **kwargs)

    monkeypatch.setattr(store, "events", flaky_events)
    from citewell.web.routes import analytics
    monkeypatch.setattr(analytics, "POLL_SECONDS", 0.01)
    with TestClient(create_app(store)) as client:
        client.headers["X-API-KEY"] = key
        with client.stream("POST", "/v2/analytics/sse", json={"query": "How much water does the reservoir hold?"}) as r:
            assert r.status_code == 200
            names = [line.split(":", 1)[1].strip() for line in r.iter_lines() if line.startswith("event:")]
    engine.close()
    assert failures["left"] == 0  # the outage was met
    assert names[0] == "conversation" and names[-1] == "done", names
    assert "answer" in names


def test_a_runner_that_cannot_record_a_job_or_prune_while_the_store_is_away_logs_no_traceback(
        store_location: str | Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A job ends while the store is unreachable (recording its end raises
    STORE_UNAVAILABLE), and so does the heartbeat's pruning of old jobs: the runner logs a
    warning for each, without a traceback (an expected outage, as for every other job
    statement), and the job still ends once the store is back (its lease expires and it runs
    again)."""
    from citewell.jobs.runner import Handler

    ran: list[str] = []

    class Note(Handler):
        kind = "note"

        def run(self, job: Any, lease: Any) -> None:
            ran.append(job.id)

    with Engine(store_location) as engine:
        store = engine.store
        real_finish = store.finish_job
        finishes = {"left": 1}

        def finish_once_down(*args: Any, **kwargs: Any) -> Any:
            if finishes["left"] > 0:
                finishes["left"] -= 1
                raise StoreUnavailable("the database of the store x cannot be reached right now")
            return real_finish(*args, **kwargs)

        def prune_down(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable("the database of the store x cannot be reached right now")

        monkeypatch.setattr(store, "finish_job", finish_once_down)
        monkeypatch.setattr(store, "prune_jobs", prune_down)
        job, _ = store.enqueue_job(engine.workspace_id, "note", {}, key="note:1", max_attempts=3)
        caplog.set_level("WARNING", logger="citewell.jobs")
        runner = JobRunner(store, [Note()], threads=1, name="t", poll_s=0.02, backoff_s=0.05, lease_s=0.5)
        runner.start()
        try:
            assert wait_for_jobs(store, kinds=["note"], timeout_s=120)
        finally:
            runner.stop()
        assert store.job(job.id).state == "done" and len(ran) == 2
        jobs_logs = [r for r in caplog.records if r.name == "citewell.jobs"]
        assert any("deleting old done jobs failed" in r.getMessage() for r in jobs_logs)
        assert any(f"recording the end of note job {job.id} failed" in r.getMessage() for r in jobs_logs)
        assert [r.getMessage() for r in jobs_logs if r.exc_info] == []


def test_the_agents_scheduler_says_an_outage_once_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """Ticks that meet an unreachable store log one warning (and one when it is back), no
    traceback; the scheduler keeps ticking and runs the agents once the store answers."""
    from citewell.agents.scheduler import Scheduler

    ticks: list[int] = []

    class Runner:
        def run_due(self) -> list[Any]:
            ticks.append(1)
            if len(ticks) <= 3:
                raise StoreUnavailable("the database of the store x cannot be reached right now (gone)")
            return []

    scheduler = Scheduler(Runner(), tick_s=0.01)  # type: ignore[arg-type]
    with caplog.at_level("INFO", logger="citewell.agents"):
        scheduler.start()
        try:
            until(lambda: len(ticks) >= 5)
        finally:
            scheduler.stop()
    records = [r for r in caplog.records if r.name == "citewell.agents"]
    assert not any(r.exc_info for r in records)
    said = [r.getMessage() for r in records]
    assert sum("cannot be reached" in m for m in said) == 1 and sum("reachable again" in m for m in said) == 1
