"""A process's work on a store: what it resumes at start (:func:`resume_left_work`, for
``citewell serve`` and ``citewell worker``) and the body of ``citewell worker``
(:func:`run_workers`): the workers of :mod:`citewell.jobs.workers` and the
tracking-agent scheduler (:class:`~citewell.agents.Scheduler`, whose runs are not jobs
in the store: each claims its agent's lease), without any HTTP.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from ..agents import AgentRunner, Scheduler, tick_seconds
from ..engine import Engine
from ..generate import Generator
from ..settings import LLMSettings
from ..store import Store, open_store
from .turns import TURN_INTERRUPTED
from .workers import TurnWorker, UploadWorker

log = logging.getLogger(__name__)


def resume_left_work(uploads: UploadWorker, turns: TurnWorker) -> int:
    """What a server or worker does at start, before its workers run: settle the turns that
    stopped workers left (:meth:`~citewell.jobs.workers.TurnWorker.recover`), queue the uploads left processing
    without a job (:meth:`~citewell.jobs.workers.UploadWorker.recover`), the resources an older extractor made
    (:meth:`~citewell.jobs.workers.UploadWorker.reindex`) and the workspaces with passages that lack vectors
    (:meth:`~citewell.jobs.workers.UploadWorker.backfill`). Returns how many turns were failed as
    ``TURN_INTERRUPTED`` (logged when any)."""
    interrupted = turns.recover()
    if interrupted:
        log.info("%d turn(s) left pending by a stopped worker settled as %s", interrupted, TURN_INTERRUPTED)
    uploads.recover()
    uploads.reindex()
    uploads.backfill()
    return interrupted


def run_workers(store: Store | str | os.PathLike[str], *, threads: int = 2,
                generator: Generator | str | None = None, llm: LLMSettings | None = None,
                stop: threading.Event, agent_tick_s: float | None = None) -> None:
    """``citewell worker``: run this process's workers on ``store`` (a store or its
    location) until ``stop`` is set — :class:`~citewell.jobs.workers.UploadWorker` and :class:`~citewell.jobs.workers.TurnWorker` with
    ``threads`` threads each (answers written by ``generator``, a name or a
    :class:`~citewell.generate.Generator`, with ``llm`` settings) and the tracking-agent
    scheduler (every ``agent_tick_s`` s, default ``CITEWELL_AGENT_TICK_S``) — after
    settling what stopped workers left (:meth:`~citewell.jobs.workers.TurnWorker.recover`,
    :meth:`~citewell.jobs.workers.UploadWorker.recover`, :meth:`~citewell.jobs.workers.UploadWorker.reindex`,
    :meth:`~citewell.jobs.workers.UploadWorker.backfill`). Then stops them: running jobs finish, an embedding
    goes back to the queue after its batch. Raises :class:`~citewell.errors.StoreError`
    when the store cannot be opened."""
    opened = store if not isinstance(store, (str, os.PathLike)) else open_store(store)
    generators: dict[str, Any] = {}

    def engine_for(workspace_id: str) -> Engine:
        """The engine answering ``workspace_id``'s turns and agents in this process."""
        return Engine.for_workspace_id(opened, workspace_id, generator=generator, generators=generators, llm=llm)

    uploads = UploadWorker(opened, threads=threads)
    turns = TurnWorker(opened, threads=threads, engine_for=engine_for)
    scheduler = Scheduler(AgentRunner(opened, engine_for),
                          tick_s=tick_seconds() if agent_tick_s is None else agent_tick_s)
    try:
        resume_left_work(uploads, turns)
        scheduler.start()
        while not stop.wait(1.0):
            pass
    finally:
        log.info("stopping: running jobs finish")
        scheduler.stop()
        turns.shutdown()
        uploads.shutdown()
        if opened is not store:
            opened.close()


__all__ = ["resume_left_work", "run_workers"]
