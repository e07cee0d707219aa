"""The workers of a process: :class:`UploadWorker` and :class:`TurnWorker` queue jobs in
the store and, unless made with ``run=False`` (``citewell serve --no-workers``), run
:class:`~citewell.jobs.runner.JobRunner` threads for them in this process too.

Extraction runs on ``threads`` threads (one workspace's uploads one at a time), embedding
on one low-priority thread, turns on ``threads`` threads (one workspace at most
``threads - 1`` of them). Claims are fair between workspaces across every process (the
store's rule, issue 14): one workspace's flood of uploads or questions delays another's
by at most the jobs already running. A job queued in this process wakes this process's
workers at once; others find it at their next look (:data:`~citewell.jobs.runner.POLL_S`).

The sessions profile's questions, answered while the client waits, are not jobs: they
run on an in-process :class:`~citewell.jobs.fairness.FairPool` (:meth:`TurnWorker.call`)
under the same fairness.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError, Future
from datetime import datetime, timedelta
from typing import Any, TypeVar

from ..answer.turn import turn_payload
from ..engine import Engine, PendingTurn
from ..ingest.pipeline import stale_resources
from ..models import Message, utcnow
from ..store import Store
from .embedding import EmbedHandler, embeds, lower_priority, queue_embedding
from .extraction import ExtractHandler, ReindexHandler
from .fairness import FairPool
from .kinds import EXTRACT, REINDEX, TURN, UPLOAD_KINDS
from .runner import JobRunner, wait_for_jobs
from .traced import traced
from .turns import (TURN_INTERRUPTED, TURN_INTERRUPTED_MESSAGE, TurnHandler, answer_turn, interrupt_turn, turn_active,
                    turn_key)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds between storing a turn and queueing its job, at most (recovery leaves younger turns alone).
RECENT_S = 5.0


class UploadWorker:
    """Queues the extraction and embedding of uploads as jobs and (``run``) runs workers for
    them in this process (from :meth:`start`; ``start``: at once): extraction on ``threads`` threads, one upload of a workspace at a
    time (each extraction runs in its own child process; with 2 threads another workspace's
    upload never waits for a flood), embedding on one low-priority thread.

    :meth:`recover` queues every upload still ``processing`` without a job (a store of
    before the jobs, an outage between an upload's row and its job; at start and at the
    extraction runner's heartbeat, :data:`~citewell.jobs.runner.HOUSEKEEPING_S`), :meth:`reindex` every ready resource an older extractor made,
    :meth:`backfill` the embedding of workspaces with passages that have no vector.
    """

    def __init__(self, store: Store, *, threads: int = 2, run: bool = True, start: bool = True) -> None:
        self.store = store
        self.closed = False
        self.extraction: JobRunner | None = None
        self.embedding: JobRunner | None = None
        if run:
            # recovering at the heartbeat too: an outage between an upload's row and its job
            # leaves the upload processing without a job
            self.extraction = JobRunner(store, [ExtractHandler(store, self._embed_later),
                                                ReindexHandler(store, self._embed_later)],
                                        threads=threads, name="citewell-ingest", per_workspace=1,
                                        housekeeping=self.recover)
            self.embedding = JobRunner(store, [EmbedHandler(store)], threads=1, name="citewell-embed",
                                       initializer=lower_priority)
        if start:
            self.start()

    def start(self) -> None:
        """Start this process's workers (``run``; a server starts them with its lifespan)."""
        for runner in (self.extraction, self.embedding):
            if runner is not None:
                runner.start()

    def _embed_later(self, workspace_id: str, resource_id: str) -> None:
        if queue_embedding(self.store, workspace_id, resource_id) and self.embedding is not None:
            self.embedding.wake()

    def submit(self, workspace_id: str, resource_id: str) -> Future[None]:
        """Queue the extraction of one upload (once: an upload queued or running already
        keeps its job). Returns a future resolved when this process's workers have
        extracted it (never, when another process's do, or without workers here)."""
        key = f"{EXTRACT}:{resource_id}"
        future: Future[None] = self.extraction.future(key) if self.extraction is not None else Future()
        self.store.enqueue_job(workspace_id, EXTRACT, traced({"resource_id": resource_id}), key=key)
        if self.extraction is not None:
            self.extraction.wake()
        return future

    def _queue_each(self, kind: str, resources: Iterable[tuple[str, str]]) -> int:
        """Queue a ``kind`` job (key ``kind:resource_id``) for each ``(workspace_id,
        resource_id)`` that has none queued or running; returns how many were queued."""
        queued = 0
        for workspace_id, resource_id in resources:
            _, created = self.store.enqueue_job(workspace_id, kind, {"resource_id": resource_id},
                                                key=f"{kind}:{resource_id}")
            queued += created
        return queued

    def recover(self) -> int:
        """Queue every upload still processing that has no job (a store made before the
        jobs, an outage between an upload's row and its job, or a job dead-lettered);
        returns how many were queued (:meth:`~citewell.store.jobs.Jobs.enqueue_pending_uploads`:
        an upload that turns ready meanwhile is not queued again)."""
        queued = self.store.enqueue_pending_uploads(EXTRACT)
        if queued:
            log.info("resuming %d upload(s) left processing", queued)
            if self.extraction is not None:
                self.extraction.wake()
        return queued

    def reindex(self) -> int:
        """Queue the re-extraction, from its stored bytes, of every ready resource an older
        extractor version made (then its embedding); returns how many were queued."""
        queued = self._queue_each(REINDEX, stale_resources(self.store))
        if queued:
            log.info("re-extracting %d resource(s) made by an older extractor", queued)
        return queued

    def backfill(self) -> int:
        """Queue, for every workspace with passages that have no vector yet, the embedding
        of all of them (a store filled by ``citewell ingest`` without ``--wait``); returns
        how many workspaces were queued. Nothing when this process does not embed
        (:func:`embeds`). Every process serving the store does this at start; a job queued
        already is not queued twice."""
        ids = self.store.workspace_ids()
        if not ids or not embeds(self.store, ids[0]):  # the mode and the model are the process's
            return 0
        queued = 0
        for workspace_id in ids:
            embedded, total = Engine.for_workspace_id(self.store, workspace_id).embedding_coverage()
            if embedded < total and queue_embedding(self.store, workspace_id, None):
                queued += 1
        if queued:
            log.info("embedding the passages of %d workspace(s) that lack vectors", queued)
            if self.embedding is not None:
                self.embedding.wake()
        return queued

    def shutdown(self) -> None:
        """Stop this process's workers: the running extraction finishes, the running
        embedding stops after its current batch (about a second) and goes back to the
        queue; queued jobs stay queued for any worker (this server's next start included)."""
        self.closed = True
        for runner in (self.extraction, self.embedding):
            if runner is not None:
                runner.stop(wait=False)
        for runner in (self.extraction, self.embedding):
            if runner is not None:
                runner.stop()

    def wait_embedded(self, timeout_s: float = 300.0) -> bool:
        """Block until no embedding is queued or running, nor an extraction that may queue
        one (for tests and orderly stops); False after ``timeout_s``."""
        return wait_for_jobs(self.store, kinds=UPLOAD_KINDS, timeout_s=timeout_s)

    def wait_idle(self, timeout_s: float = 300.0) -> bool:
        """Block until no extraction or embedding is queued or running."""
        return wait_for_jobs(self.store, kinds=UPLOAD_KINDS, timeout_s=timeout_s)


class TurnWorker:
    """Queues turns begun by :meth:`Engine.begin_turn` as jobs and (``run``) answers them on
    ``threads`` threads of this process, workspaces in turn and at most ``per_workspace``
    (default ``threads - 1``) of one workspace's at once; answers the sessions profile's
    questions (:meth:`call`) on an in-process fair pool of the same size.

    A turn always settles: answered, failed with its code (:meth:`Engine.complete_turn`),
    failed with ``TURN_INTERRUPTED`` when its worker died (its lease expired) or when it is
    submitted after :meth:`shutdown`. ``engine_for(workspace_id)`` makes the engine of a
    turn queued by another process (default: the store's engine with this process's
    configured generator).
    """

    def __init__(self, store: Store, *, threads: int = 2, per_workspace: int | None = None, run: bool = True,
                 start: bool = True, engine_for: Callable[[str], Engine] | None = None,
                 poll_s: float | None = None) -> None:
        self.store = store
        self.closed = False
        self._lock = threading.Lock()
        self._pool = FairPool(threads, "citewell-ask", per_key=per_workspace)
        self.handler = TurnHandler(store, engine_for or (lambda ws: Engine.for_workspace_id(store, ws)))
        self.runner: JobRunner | None = None
        if run:
            options: dict[str, Any] = {} if poll_s is None else {"poll_s": poll_s}
            self.runner = JobRunner(store, [self.handler], threads=threads, name="citewell-turn",
                                    per_workspace=per_workspace if per_workspace is not None else max(1, threads - 1),
                                    **options)
        if start:
            self.start()

    def start(self) -> None:
        """Start this process's workers (``run``; a server starts them with its lifespan)."""
        if self.runner is not None:
            self.runner.start()

    def submit(self, engine: Engine, pending: PendingTurn,
               job: Callable[[Engine, PendingTurn], Message | None] | None = None, *,
               stream: bool = False) -> Future[Message | None]:
        """Queue the answer of one turn as a job; returns a future of the settled message
        (None when answering failed unexpectedly and was logged), resolved when this
        process answers it. ``job(engine, pending)`` answers it here (default
        :meth:`Engine.complete_turn`; the SSE route streams it); ``stream``: a worker of
        another process streams it too (records its events)."""
        key = turn_key(str(pending.message.id))
        with self._lock:
            if self.closed:
                future: Future[Message | None] = Future()
                future.set_result(interrupt_turn(engine, pending))
                return future
            if self.runner is not None:
                future = self.runner.future(key)
                self.handler.remember(key, engine, pending, job)
            else:
                future = Future()
        self.store.enqueue_job(engine.workspace_id, TURN, traced({**turn_payload(pending), "stream": stream}), key=key,
                               max_attempts=1)
        if self.runner is not None:
            self.runner.wake()
        return future

    def call(self, workspace_id: str, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the pool as a job of ``workspace_id`` and wait for its result
        (its exception is raised here): a question answered while the client waits, under
        the same fairness as the turns. Runs in the calling thread once the pool is closed
        (also when the pool stops before it ran): the request still gets its answer."""
        try:
            future = self._pool.submit(workspace_id, fn, *args)
        except RuntimeError:
            return fn(*args)
        try:
            return future.result()
        except CancelledError:
            return fn(*args)

    def active(self, message_id: str) -> bool:
        """Whether the turn answering ``message_id`` has a job queued or running
        (:func:`turn_active`)."""
        return turn_active(self.store, message_id)

    #: Answer one turn and log how it settled (:func:`~citewell.jobs.turns.answer_turn`).
    answer = staticmethod(answer_turn)

    def recover(self, *, before: datetime | None = None) -> int:
        """Settle what stopped workers left: jobs whose lease expired are taken back (a turn
        whose worker died fails with ``TURN_INTERRUPTED``), and every pending answer created
        before ``before`` (default: :data:`RECENT_S` ago) without a queued or running job
        — left by a citewell of before the jobs — fails the same way. Returns how many
        answers were failed."""
        failed = JobRunner(self.store, [self.handler], threads=1, name="citewell-recover").reap()
        # a turn is stored a moment before its job: one begun in the last seconds is left alone
        return failed + self.store.fail_pending(
            before=before or utcnow() - timedelta(seconds=RECENT_S), code=TURN_INTERRUPTED, message=TURN_INTERRUPTED_MESSAGE,
            keep=lambda m: self.active(str(m.id)))

    def shutdown(self) -> None:
        """Stop this process's workers: running turns finish; queued turns stay queued for
        any worker (another replica, or this server's next start); a turn submitted from
        now on settles at once as failed (``TURN_INTERRUPTED``)."""
        with self._lock:
            self.closed = True
        if self.runner is not None:
            self.runner.stop()
        with self.handler._lock:
            self.handler.local.clear()
        self._pool.shutdown()


__all__ = ["RECENT_S", "TurnWorker", "UploadWorker"]
