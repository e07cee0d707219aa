"""Jobs run by ``citewell worker`` processes (issue 18): a server that serves only
(``citewell serve --no-workers``) queues uploads and questions in the store, a worker on
the same store does them, and SIGTERM stops the worker gracefully. Plus the job runner's
own rules (retries, dead letters, released jobs, lost leases) on a real store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from citewell import Engine
from citewell.jobs.runner import RELEASE, Handler, JobFailed, JobRunner
from citewell.store import open_store
from citewell.store.sqlite import SQLiteStore

from .conftest import until
from .servers import free_port, running


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "CITEWELL_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", "CITEWELL_AGENT_TICK_S": "0"}


def test_a_serve_only_server_and_a_worker_process_share_the_jobs(tmp_path: Path) -> None:
    store = tmp_path / "store" / "citewell.sqlite"
    with Engine(store, workspace="acme") as engine:
        key = engine.create_key()[0]
    env = _env(tmp_path)
    port = free_port()
    serve = [sys.executable, "-m", "citewell", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--store", str(store), "--no-workers"]
    headers = {"X-API-KEY": key}
    with running(serve, port, tmp_path / "serve.log", env) as base:
        r = httpx.post(f"{base}/v1/resources", headers=headers, timeout=30,
                       files={"file": ("acme.txt", b"Acme revenue was $12.4 million in 2022.\n", "text/plain")})
        assert r.status_code == 202, r.text
        resource_id = r.json()["data"]["resource"]["id"]
        asked = httpx.post(f"{base}/v1/ask", headers=headers, json={"question": "What was Acme revenue?"},
                           timeout=30).json()
        time.sleep(1.0)  # nobody works in the serving process: both wait in the queue
        assert httpx.get(f"{base}/v1/resources/{resource_id}", headers=headers,
                         timeout=30).json()["data"]["resource"]["status"] == "processing"
        with closing(SQLiteStore(store)) as jobs_store:
            queued = sorted((j.kind, j.state) for j in jobs_store.jobs())
        assert queued == [("extract", "queued"), ("turn", "queued")]
        log_path = tmp_path / "worker.log"
        with log_path.open("w") as log:
            worker = subprocess.Popen([sys.executable, "-m", "citewell", "worker", "--store", str(store),
                                       "--concurrency", "1", "--mode", "lexical"],
                                      stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            ready = until(lambda: httpx.get(f"{base}/v1/resources/{resource_id}", headers=headers,
                                              timeout=30).json()["data"]["resource"]["status"] == "ready")
            assert ready
            message = until(lambda: (m := httpx.get(
                f"{base}/v1/chats/{asked['chat_id']}/messages/{asked['message_id']}", headers=headers,
                timeout=30).json())["status"] != "pending" and m)
            # the turn was queued before the upload was ready: answered by the worker all the same
            assert message["status"] == "settled"
            later = httpx.post(f"{base}/v1/ask", headers=headers, json={"question": "What was Acme revenue?"},
                               timeout=30).json()
            answered = until(lambda: (m := httpx.get(
                f"{base}/v1/chats/{later['chat_id']}/messages/{later['message_id']}", headers=headers,
                timeout=30).json())["status"] != "pending" and m)
            assert answered["status"] == "settled" and "$12.4 million" in answered["text"]
        finally:
            worker.send_signal(signal.SIGTERM)
            code = worker.wait(timeout=60)
        output = log_path.read_text()
        assert code == 0, output
        assert "citewell worker stopped" in output and "Traceback" not in output
        with closing(SQLiteStore(store)) as jobs_store:
            assert {j.state for j in jobs_store.jobs()} == {"done"}


class _Scripted(Handler):
    """Fails, releases or succeeds as the payload says; records each run."""

    kind = "scripted"

    def __init__(self) -> None:
        self.runs: list[tuple[str, int]] = []
        self.gate = threading.Event()

    def run(self, job, lease):
        self.runs.append((job.payload["do"], job.attempts))
        if job.payload["do"] == "fail":
            raise JobFailed("BROKEN", "it always breaks")
        if job.payload["do"] == "bad":
            raise JobFailed("BAD_INPUT", "never worth retrying", retry=False)
        if job.payload["do"] == "crash":
            raise KeyError("unexpected")
        if job.payload["do"] == "hold":
            self.gate.wait(30)
            return RELEASE if lease.stopping.is_set() else "held"
        return "ok"


@pytest.fixture
def job_store(store_location: str | Path):
    """A fresh store of each kind the suite runs on (tests/conftest.py: ``store_location``,
    ``CITEWELL_TEST_STORES``)."""
    opened = open_store(store_location)
    yield opened
    opened.close()


def test_the_runner_retries_dead_letters_and_releases(job_store) -> None:
    store = job_store
    handler = _Scripted()
    runner = JobRunner(store, [handler], threads=2, name="t", poll_s=0.02, backoff_s=0.05)
    ok = runner.future("ok")
    store.enqueue_job("w", "scripted", {"do": "ok"}, key="ok")
    fail = runner.future("fail")
    failing, _ = store.enqueue_job("w", "scripted", {"do": "fail"}, key="fail", max_attempts=3)
    bad, _ = store.enqueue_job("w", "scripted", {"do": "bad"}, max_attempts=3)
    crash, _ = store.enqueue_job("w2", "scripted", {"do": "crash"}, max_attempts=1)
    runner.start()
    try:
        assert ok.result(30) == "ok"
        with pytest.raises(JobFailed) as caught:
            fail.result(30)
        assert caught.value.code == "BROKEN"
        dead = store.job(failing.id)
        assert (dead.state, dead.attempts, dead.error) == ("failed", 3, {"code": "BROKEN", "message": "it always breaks"})
        assert [a for d, a in handler.runs if d == "fail"] == [1, 2, 3]  # retried with backoff, then dead
        until(lambda: store.job(crash.id).state == "failed" and store.job(bad.id).state == "failed", 30)
        assert store.job(bad.id).attempts == 1  # not retried
        assert store.job(crash.id).error["code"] == "SERVER_ERROR"
        # a stop releases what the handler gives back: queued again, the attempt not counted
        held, _ = store.enqueue_job("w", "scripted", {"do": "hold"}, max_attempts=1)
        runner.wake()
        until(lambda: store.job(held.id).state == "running", 30)
        stopper = threading.Thread(target=runner.stop)
        stopper.start()
        until(lambda: runner.stopping, 30)  # the held job is told to stop before it returns
        handler.gate.set()
        stopper.join(30)
        back = store.job(held.id)
        assert (back.state, back.attempts) == ("queued", 0)
    finally:
        handler.gate.set()
        runner.stop()


def test_a_lost_lease_is_not_recorded_and_a_dead_worker_is_taken_over(job_store) -> None:
    store = job_store
    handler = _Scripted()
    job, _ = store.enqueue_job("w", "scripted", {"do": "hold"}, max_attempts=2)
    # a worker claimed it and died: its lease (0.2 s) is never renewed
    assert store.claim_job("dead", kinds=["scripted"], lease_s=0.2) is not None
    runner = JobRunner(store, [handler], threads=1, name="t", poll_s=0.02, lease_s=0.6)
    runner.start()
    try:
        # the heartbeat takes the expired job back (every lease/3 s) and a thread claims it again
        until(lambda: handler.runs, 30)
        assert handler.runs == [("hold", 2)]
        taken = store.job(job.id)
        assert taken.state == "running" and taken.lease_owner == runner.owner
        time.sleep(1.0)  # longer than a lease: renewed meanwhile by the heartbeat
        assert store.job(job.id).state == "running"
        handler.gate.set()
        until(lambda: store.job(job.id).state == "done", 30)
    finally:
        handler.gate.set()
        runner.stop()


def test_postgresql_tells_workers_of_a_job_queued_elsewhere(postgres_server) -> None:
    """A worker that would look again only in a minute claims at once a job another
    process queued: NOTIFY citewell_jobs (delivered at the queueing commit) wakes it."""
    from citewell.store.postgres import PostgresStore

    url = postgres_server.new_database()
    worker_store, other_process = PostgresStore(url), PostgresStore(url)
    handler = _Scripted()
    runner = JobRunner(worker_store, [handler], threads=1, name="t", poll_s=60.0).start()
    try:
        time.sleep(1.5)  # the worker has looked once, found nothing, and listens
        queued_at = time.monotonic()
        job, _ = other_process.enqueue_job("w", "scripted", {"do": "ok"})
        until(lambda: worker_store.job(job.id).state == "done", 20)
        assert time.monotonic() - queued_at < 10  # not the minute of its next look
        assert handler.runs == [("ok", 1)]
    finally:
        runner.stop()
        worker_store.close()
        other_process.close()


def test_the_jobs_command_lists_dead_letters_and_retries_them(tmp_path: Path) -> None:
    import json

    path = tmp_path / "store" / "citewell.sqlite"
    with closing(SQLiteStore(path)) as store:
        ws = store.workspace_id("acme")
        dead, _ = store.enqueue_job(ws, "extract", {"resource_id": "r1"}, max_attempts=1)
        claimed = store.claim_job("w", kinds=["extract"], lease_s=30)
        assert claimed is not None
        store.fail_job(dead.id, claimed.lease_token or "", code="PDF_CORRUPT", message="broken\nfile")
        done, _ = store.enqueue_job(ws, "embed", {"resource_id": None})
    env = _env(tmp_path)

    def citewell(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "citewell", "jobs", *args, "--store", str(path)],
                              capture_output=True, text=True, env=env, timeout=120)

    listed = citewell("list", "--state", "failed", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert (row["id"], row["kind"], row["workspace"], row["state"], row["attempts"], row["max_attempts"]) == (
        dead.id, "extract", "acme", "failed", 1, 1)
    assert row["error"] == {"code": "PDF_CORRUPT", "message": "broken\nfile"}
    plain = citewell("list")
    assert plain.returncode == 0 and len(plain.stdout.splitlines()) == 2
    assert f"{dead.id}  extract  failed   1/1  acme" in plain.stdout and "PDF_CORRUPT: broken" in plain.stdout
    assert citewell("list", "--state", "gone").returncode == 2
    retried = citewell("retry", dead.id)
    assert retried.returncode == 0 and "queued again" in retried.stderr
    with closing(SQLiteStore(path)) as store:
        assert (store.job(dead.id).state, store.job(dead.id).attempts) == ("queued", 0)
        assert store.job(done.id).state == "queued"
    assert citewell("retry", dead.id).returncode == 2  # not a dead letter any more
    missing = citewell("retry", "no-such-job")
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr


def test_the_heartbeat_deletes_done_jobs_older_than_a_day(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    day = 86400.0
    old, _ = store.enqueue_job("w", "scripted", {"do": "ok"}, now=time.time() - 2 * day)
    claimed = store.claim_job("w", kinds=["scripted"], lease_s=30, now=time.time() - 2 * day)
    assert claimed is not None and store.finish_job(old.id, claimed.lease_token or "", now=time.time() - 2 * day)
    recent, _ = store.enqueue_job("w", "scripted", {"do": "ok"})
    dead, _ = store.enqueue_job("w", "scripted", {"do": "bad"}, now=time.time() - 2 * day)
    runner = JobRunner(store, [_Scripted()], threads=1, name="t", poll_s=0.02, lease_s=0.3).start()
    try:
        until(lambda: store.job(recent.id).state == "done" and store.job(dead.id).state == "failed", 30)
        until(lambda: old.id not in {j.id for j in store.jobs()}, 30)
        left = {j.id: j.state for j in store.jobs()}
        assert left == {recent.id: "done", dead.id: "failed"}  # the old done job went; the dead letter stays
    finally:
        runner.stop()
        store.close()
