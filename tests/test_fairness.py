"""Fairness between workspaces (issue 14): one workspace flooding the server with uploads
or questions delays another's by at most the jobs already running, never by its queue.
Order is asserted with gates, never with timings."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from citewell import Engine
from citewell.jobs.workers import TurnWorker, UploadWorker


def test_a_fair_pool_serves_the_least_recently_served_workspace_first() -> None:
    from citewell.jobs.fairness import FairPool

    pool = FairPool(1, "t")
    gate, order = threading.Event(), []

    def job(name: str) -> str:
        if name == "a1":
            assert gate.wait(10)
        order.append(name)
        return name

    futures = [pool.submit(name[0], job, name) for name in ("a1", "a2", "a3", "b1", "c1", "b2")]
    gate.set()
    assert [f.result(10) for f in futures] == ["a1", "a2", "a3", "b1", "c1", "b2"]
    # a1 held the only thread: then b and c (never served) before a again, each in turn
    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"]
    pool.shutdown()


def test_one_workspace_never_takes_every_thread() -> None:
    from citewell.jobs.fairness import FairPool

    pool = FairPool(2, "t")  # per workspace: 2 - 1
    gate = threading.Event()
    held = [pool.submit("a", gate.wait, 10) for _ in range(3)]
    other = pool.submit("b", lambda: "b answered")
    assert other.result(10) == "b answered"  # while all of a's jobs are held or queued
    assert pool.waiting("a") == 2 and not held[0].done()
    gate.set()
    assert all(f.result(10) for f in held)
    pool.wait_idle()
    stopping = FairPool(1, "t")
    blocker, started = threading.Event(), threading.Event()
    first = stopping.submit("a", lambda: started.set() or blocker.wait(10))
    assert started.wait(10)
    queued = stopping.submit("a", lambda: 1)
    assert stopping.shutdown(wait=False) == [queued] and queued.cancelled()
    blocker.set()
    assert first.result(10) is True  # the running job finishes
    with pytest.raises(RuntimeError):
        stopping.submit("a", lambda: 1)


def test_a_flood_of_uploads_does_not_queue_another_workspaces_upload(store_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """Six uploads of one workspace, then one of another: the other's is extracted at once,
    beside the flood's first (first come, first served made it wait for all six)."""
    with Engine(store_path, workspace="a", mode="lexical") as a, Engine(store_path, workspace="b",
                                                                        mode="lexical") as b:
        flood = [a.upload(f"a{i}.txt", f"Pump {i} runs at forty bar.\n".encode()).id for i in range(6)]
        single = b.upload("b.txt", b"The valve opens at ten bar.\n").id
        worker = UploadWorker(a.store)
        caplog.set_level(logging.INFO, logger="citewell.jobs")
        try:
            futures = [worker.submit(a.workspace_id, rid) for rid in flood]
            futures.append(worker.submit(b.workspace_id, single))
            for future in futures:
                future.result(120)
        finally:
            worker.shutdown()
        done = [r.getMessage().split()[1] for r in caplog.records if r.getMessage().endswith("(1 chunks)")]
        assert len(done) == 7 and done.index(single) <= 1, done


def test_a_workspace_holding_every_question_thread_does_not_hold_anothers_question(store_path: Path) -> None:
    """Workspace a's turns wait at a gate; workspace b's turn is answered meanwhile."""
    gate = threading.Event()
    held = threading.Semaphore(0)

    class Gated:
        name = "gated"

        def __init__(self, inner):
            self.inner = inner

        def write(self, request):
            held.release()
            assert gate.wait(30), "the gate was never opened"
            yield from self.inner.write(request)

    from citewell.generate import ExtractiveGenerator

    with Engine(store_path, workspace="a", generator=Gated(ExtractiveGenerator())) as a:
        turns = TurnWorker(a.store, threads=2)
        try:
            a.process(a.upload("a.txt", b"Acme revenue was $12.4 million in 2022.\n").id)
            flood = [turns.submit(a, a.begin_turn(f"What was Acme revenue in 2022? ({i})")) for i in range(4)]
            assert held.acquire(timeout=30)  # one of a's turns is running (and held)
            b = Engine.for_workspace_id(a.store, a.store.workspace_id("b"))
            b.process(b.upload("b.txt", b"Globex revenue was $55.0 million in 2022.\n").id)
            answer = turns.submit(b, b.begin_turn("What was Globex revenue in 2022?")).result(30)
            assert answer is not None and answer.status == "settled" and "$55.0 million" in answer.text
            assert not any(f.done() for f in flood)  # a's are all still held or queued
            # a's turns are jobs in the store: one running, the others queued
            states = sorted(j.state for j in a.store.jobs(workspace_id=a.workspace_id, kinds=["turn"]))
            assert states == ["queued", "queued", "queued", "running"]
            gate.set()
            assert all(f.result(30).status == "settled" for f in flood)
        finally:
            gate.set()
            turns.shutdown()


def test_a_session_question_waits_for_no_other_workspace(store_path: Path) -> None:
    """The sessions profile answers while the client waits: on the same fair pool."""
    from citewell.store import open_store

    turns = TurnWorker(open_store(store_path), threads=2, run=False)
    gate = threading.Event()
    try:
        held = [threading.Thread(target=turns.call, args=("a", gate.wait, 30)) for _ in range(3)]  # a's, held
        for thread in held:
            thread.start()
        assert turns.call("b", lambda: "answered") == "answered"
        assert all(thread.is_alive() for thread in held)
    finally:
        gate.set()
        turns.shutdown()
    for thread in held:
        thread.join(30)
    assert turns.call("b", lambda: "after the stop") == "after the stop"  # inline once closed
