"""The work of a citewell server or worker: jobs in the store (:mod:`citewell.store.jobs`),
run by :class:`~citewell.jobrunner.JobRunner` threads of any process sharing the store.

Kinds of jobs (payload in brackets):

- ``extract`` ``{resource_id}``: extract an upload (:meth:`Engine.process`); then, when
  the process's retrieval mode uses embeddings (hybrid, the default, or dense), queue
  its ``embed``;
- ``reindex`` ``{resource_id}``: re-extract a ready resource an older extractor made,
  from its stored bytes (:meth:`Engine.reindex_stored`), then queue its ``embed``;
- ``embed`` ``{resource_id}`` (null: the whole workspace): embed the passages that
  have no vector yet (:meth:`Engine.embed`), at a lower CPU priority, on one thread;
- ``turn`` (:func:`~citewell.answer.turn.turn_payload`, and ``stream``): answer a turn
  begun by :meth:`Engine.begin_turn` — ``POST /v1/ask`` and the analytics stream, whose
  events are recorded in the store so that any replica can serve them. A turn is tried
  once: its lease is the turn's ownership (no process ids), and a turn whose worker died
  (its lease expired) settles as failed with ``TURN_INTERRUPTED``; one whose database
  could not be reached while it was answered (and then settled) settles as failed with
  ``STORE_UNAVAILABLE`` once the database is back (its job is dead-lettered, and
  :meth:`TurnHandler.dead` settles it). It is not answered again: it may have streamed
  events and spent a model's tokens already, and the client may ask again.

An upload's ``extract`` whose database could not be reached is retried with backoff
(nothing of it was written); when its job is dead-lettered (out of attempts, or its
workers died) the upload settles ``failed`` with the job's code (:meth:`ExtractHandler.dead`).
``reindex`` and ``embed`` are retried the same way and leave nothing to settle (the old
passages stay; passages without a vector are embedded by the next backfill).

:class:`UploadWorker` and :class:`TurnWorker` queue these jobs and, unless made with
``run=False`` (``citewell serve --no-workers``), run workers in this process too:
extraction on ``threads`` threads (one workspace's uploads one at a time), embedding on
one low-priority thread, turns on ``threads`` threads (one workspace at most
``threads - 1`` of them). Claims are fair between workspaces across every process (the
store's rule, issue 14): one workspace's flood of uploads or questions delays another's
by at most the jobs already running. ``citewell worker`` runs the same workers and
serves nothing. A job queued in this process wakes this process's workers at once;
others find it at their next look (:data:`~citewell.jobrunner.POLL_S`).

The sessions profile's questions, answered while the client waits, are not jobs: they
run on an in-process :class:`~citewell.web.fairness.FairPool` (:meth:`TurnWorker.call`)
under the same fairness.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError, Future
from datetime import datetime, timedelta
from typing import Any, TypeVar

from ..answer.turn import pending_from_payload, turn_payload
from ..embed import Embedder
from ..engine import Engine, PendingTurn
from ..errors import NotFoundError, StoreUnavailable, UsageError
from ..generate import Generator
from ..ingest.pipeline import BACKGROUND_NICE, stale_resources
from ..jobrunner import FUTURE_TTL_S, RELEASE, Handler, JobFailed, JobRunner, Lease, wait_for_jobs
from ..models import Message, utcnow
from ..settings import LLMSettings
from ..store import Store
from ..store.jobs import LEASE_EXPIRED, JobRecord, JobStore
from .fairness import FairPool
from .requestid import REQUEST_ID

log = logging.getLogger("citewell.web.worker")

T = TypeVar("T")

#: The code and message of a turn the server stopped before answering.
TURN_INTERRUPTED = "TURN_INTERRUPTED"
TURN_INTERRUPTED_MESSAGE = "the server stopped before the answer was finished; ask again"
#: The message of a turn that failed because the database could not be reached.
STORE_UNAVAILABLE_MESSAGE = "the database could not be reached while the answer was written; ask again"
#: Kinds of jobs (module docstring).
EXTRACT, REINDEX, EMBED, TURN = "extract", "reindex", "embed", "turn"
#: Seconds between storing a turn and queueing its job, at most (recovery leaves younger turns alone).
RECENT_S = 5.0
#: Everything an upload may still be waiting for.
UPLOAD_KINDS = (EXTRACT, REINDEX, EMBED)


def upload_failure(job: JobRecord) -> tuple[str, str]:
    """``(code, message)`` of an upload whose ``extract`` job was dead-lettered: the job's
    error code, and a message for the user that names no internals (the database's
    address stays in the job's own error and the logs)."""
    code = (job.error or {}).get("code") or "SERVER_ERROR"
    tries = f"{job.attempts} attempt{'s' if job.attempts != 1 else ''}"
    if code == "STORE_UNAVAILABLE":
        return code, f"could not be stored: the database was unreachable ({tries}); upload the file again"
    if code == LEASE_EXPIRED:
        return code, f"the worker processing it stopped before it was done ({tries}); upload the file again"
    return code, f"could not be processed ({tries}; {(job.error or {}).get('message') or code})"


def lower_priority() -> None:
    """Lower the calling thread's CPU priority by :data:`BACKGROUND_NICE` (Linux: a thread's
    nice value is its own, and threads it starts inherit it); nothing where unsupported."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except (AttributeError, OSError):
        pass


def turn_key(message_id: str) -> str:
    """The job key of the turn answering message ``message_id``."""
    return f"{TURN}:{message_id}"


def turn_active(store: JobStore, message_id: str) -> bool:
    """Whether the turn answering ``message_id`` has a job queued or running (a worker of
    some process will settle it, and may still record its stream's events)."""
    return bool(store.jobs(key=turn_key(message_id), states=("queued", "running"), limit=1))


def embeds(store: Store, workspace_id: str) -> bool:
    """Whether this process embeds passages: its retrieval mode uses them (not lexical)
    and the embedding model is installed (or an endpoint is configured)."""
    engine = Engine.for_workspace_id(store, workspace_id)
    return engine.mode != "lexical" and engine.dense_available()


def queue_embedding(store: Store, workspace_id: str, resource_id: str | None) -> bool:
    """Queue the embedding of one resource's passages (None: the workspace's) unless one
    is queued already; False when this process does not embed (:func:`embeds`)."""
    if not embeds(store, workspace_id):
        return False
    store.enqueue_job(workspace_id, EMBED, traced({"resource_id": resource_id}),
                      key=f"{EMBED}:{workspace_id}:{resource_id or '*'}")
    return True


def traced(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with the current request's id (``request_id``), so that the job's log
    lines carry it whichever process runs it."""
    request_id = REQUEST_ID.get()
    return {**payload, "request_id": request_id} if request_id != "-" else payload


class WebHandler(Handler):
    """A handler whose job runs under the request id it was queued with (:func:`traced`)."""

    def run_in_context(self, job: JobRecord, lease: Lease) -> Any:
        """:meth:`run` with ``REQUEST_ID`` set to the payload's ``request_id``."""
        request_id = job.payload.get("request_id")
        if isinstance(request_id, str):
            REQUEST_ID.set(request_id)
        return self.run(job, lease)


class ExtractHandler(WebHandler):
    """``extract``: extract one upload; a coded failure is the resource's (``failed``
    with its code), not the job's. An unreachable database is the job's: it is retried
    with backoff (the upload stays ``processing``), and an upload whose job is
    dead-lettered settles ``failed`` (:meth:`dead`)."""

    kind = EXTRACT

    def __init__(self, store: Store, after: Callable[[str, str], None]) -> None:
        self.store, self.after = store, after

    def run(self, job: JobRecord, lease: Lease) -> None:
        """Extract the upload ``payload["resource_id"]`` (:meth:`Engine.process`, at
        :data:`BACKGROUND_NICE` while more of its workspace's uploads wait) and, ready with
        passages, hand it to ``after``. A deleted upload is logged, not raised; anything
        unexpected propagates (the runner's ``SERVER_ERROR``, retried), and so does
        :class:`~citewell.errors.StoreUnavailable` (``STORE_UNAVAILABLE``, retried: the
        upload's commit is one transaction, so nothing of it was written)."""
        workspace_id, resource_id = job.workspace_id, job.payload["resource_id"]
        # a workspace with more uploads waiting is flooding: its backlog yields the CPU to
        # the answers and to other workspaces' single uploads
        backlog = self.store.jobs(workspace_id=workspace_id, states=("queued",), kinds=(EXTRACT,), limit=1)
        try:
            resource = Engine.for_workspace_id(self.store, workspace_id).process(
                resource_id, nice=BACKGROUND_NICE if backlog else 0)
        except NotFoundError:
            resource = None
        if resource is None:
            log.info("upload %s was deleted before it was processed", resource_id)
        elif resource.status == "failed" and resource.error is not None:
            log.info("upload %s failed: %s: %s", resource_id, resource.error.code, resource.error.message)
        else:
            log.info("upload %s is %s (%d chunks)", resource_id, resource.status, resource.chunk_count)
            if resource.status == "ready" and resource.chunk_count:
                self.after(workspace_id, resource_id)

    def dead(self, job: JobRecord) -> None:
        """The upload's extraction was dead-lettered (out of attempts, or its workers died):
        an upload still ``processing`` settles ``failed`` with the job's code
        (``STORE_UNAVAILABLE``, ``LEASE_EXPIRED``, ``SERVER_ERROR`` …) and a message saying
        what happened (:func:`upload_failure`), its staged bytes dropped; it is uploaded
        again like any failed file. Raises what the store raises (the runner logs it; the
        upload then stays processing until a server's start queues it again)."""
        code, message = upload_failure(job)
        resource = Engine.for_workspace_id(self.store, job.workspace_id).fail_upload(
            job.payload["resource_id"], code, message)
        if resource is not None and resource.status == "failed":
            log.warning("upload %s failed: %s: %s", resource.id, code, message)


class ReindexHandler(WebHandler):
    """``reindex``: re-extract a resource an older extractor made, then embed it."""

    kind = REINDEX

    def __init__(self, store: Store, after: Callable[[str, str], None]) -> None:
        self.store, self.after = store, after

    def run(self, job: JobRecord, lease: Lease) -> None:
        """Re-extract ``payload["resource_id"]`` from its stored bytes
        (:meth:`Engine.reindex_stored`) and hand it to ``after``; nothing when it is gone
        or needs no re-extraction."""
        resource_id = job.payload["resource_id"]
        try:
            resource = Engine.for_workspace_id(self.store, job.workspace_id).reindex_stored(resource_id)
        except NotFoundError:
            return
        if resource is not None:
            log.info("%s re-extracted by %s (%d chunks)", resource_id, resource.extractor_version,
                     resource.chunk_count)
            self.after(job.workspace_id, resource_id)


class EmbedHandler(WebHandler):
    """``embed``: the passages of one resource (or the workspace) that have no vector, with
    the background embedder (the local MiniLM on one onnxruntime thread, so the questions
    keep the other cores; an embeddings endpoint as configured). A stopping worker stops
    after the current batch and gives the job back."""

    kind = EMBED

    def __init__(self, store: Store) -> None:
        self.store = store
        self._embedder: Embedder | None = None

    def _background_embedder(self) -> Embedder | None:
        if self._embedder is None:
            from ..embed.endpoint import configured_embedder
            from ..retrieve.embedder import MiniLMEmbedder

            configured = configured_embedder()
            self._embedder = MiniLMEmbedder(threads=1) if isinstance(configured, MiniLMEmbedder) else configured
        return self._embedder

    def run(self, job: JobRecord, lease: Lease) -> str | None:
        """Embed the passages without a vector of ``payload["resource_id"]`` (None: the
        whole workspace), stopping between batches when ``lease`` says so. Returns
        :data:`RELEASE` when stopped by a stopping worker (the rest goes back to the
        queue), else None; nothing to do when the process does not embed (:func:`embeds`)
        or the workspace or resource is gone."""
        resource_id = job.payload.get("resource_id")
        what = f"upload {resource_id}" if resource_id else f"workspace {job.workspace_id}"
        try:
            if not embeds(self.store, job.workspace_id):
                return None
            engine = Engine.for_workspace_id(self.store, job.workspace_id, embedder=self._background_embedder())
            embedded, total = engine.embed(filters={"resource_id": resource_id} if resource_id else None,
                                           stop=lease.should_stop)
        except NotFoundError:  # deleted meanwhile: nothing to embed
            return None
        if embedded < total:
            log.info("%s: %d of %d passages embedded, stopped before the rest", what, embedded, total)
            return RELEASE if lease.stopping.is_set() else None
        log.info("%s embedded (%d passages)", what, total)
        return None


class TurnHandler(WebHandler):
    """``turn``: answer a turn. A turn queued by this process runs with the request's
    engine (its generator) and job; one queued elsewhere with an engine of this process
    (``engine_for``), streamed when the payload says so. A turn that has settled
    meanwhile is left alone; one whose worker died is failed (:meth:`dead`)."""

    kind = TURN

    def __init__(self, store: Store, engine_for: Callable[[str], Engine]) -> None:
        self.store, self.engine_for = store, engine_for
        self._lock = threading.Lock()
        #: job key -> (engine, pending turn, job, when queued) of turns queued in this process
        self.local: dict[str, tuple[Engine, PendingTurn, Callable[[Engine, PendingTurn], Message | None] | None,
                                    float]] = {}

    def remember(self, key: str, engine: Engine, pending: PendingTurn,
                 job: Callable[[Engine, PendingTurn], Message | None] | None) -> None:
        """Keep the engine and job of a turn queued here, for this process's workers (an
        entry whose turn another process answered is dropped after
        :data:`~citewell.jobrunner.FUTURE_TTL_S`, as the runner drops its future)."""
        now = time.monotonic()
        with self._lock:
            for stale in [k for k, entry in self.local.items() if now - entry[3] > FUTURE_TTL_S]:
                del self.local[stale]
            self.local[key] = (engine, pending, job, now)

    def run(self, job: JobRecord, lease: Lease) -> Message | None:
        """Answer the turn of a :func:`~citewell.answer.turn.turn_payload` (:meth:`TurnWorker.answer`):
        the settled message, or None when it was deleted, had settled already, or
        answering failed unexpectedly (logged). Raises
        :class:`~citewell.errors.StoreUnavailable` when the store failed under the turn and
        under its settling, :class:`~citewell.jobrunner.JobFailed` (``TURN_INTERRUPTED``)
        when the message is still pending after answering: the job is dead-lettered and
        :meth:`dead` settles the turn."""
        with self._lock:
            local = self.local.pop(job.key or "", None)
        if local is not None:
            engine, pending, fn, _ = local
        else:
            engine = self.engine_for(job.workspace_id)
            try:
                pending = pending_from_payload(self.store, job.workspace_id, job.payload, engine.message)
            except NotFoundError:
                log.info("turn %s was deleted before it was answered", job.payload.get("message_id"))
                return None
            fn = None
            if job.payload.get("stream"):
                from .routes.analytics import stream_job

                fn = stream_job
        if pending.message.status != "pending":
            return None
        message = TurnWorker.answer(engine, pending, fn)
        if message is not None and message.status == "pending":  # the store failed under it and its end
            raise JobFailed(TURN_INTERRUPTED, "the answer could not be settled", retry=False)
        return message

    def dead(self, job: JobRecord) -> None:
        """The turn's job was dead-lettered with its message still pending: it settles as
        failed (the analytics stream then ends with that ``error``) — ``TURN_INTERRUPTED``
        when its worker died (``LEASE_EXPIRED``) or the answer could not be settled,
        ``STORE_UNAVAILABLE`` when the database could not be reached while answering (a
        fixed message: the job's names the database), else the job's own code and message.
        Raises what the store raises (the runner logs it: a turn whose job is out of
        attempts then stays pending until a server's start fails it)."""
        error = job.error or {}
        code, message = TURN_INTERRUPTED, TURN_INTERRUPTED_MESSAGE
        if error.get("code") == "STORE_UNAVAILABLE":
            code, message = "STORE_UNAVAILABLE", STORE_UNAVAILABLE_MESSAGE
        elif error.get("code") not in (None, LEASE_EXPIRED, TURN_INTERRUPTED):
            code, message = error["code"], error.get("message") or error["code"]
        engine = self.engine_for(job.workspace_id)
        try:
            pending = pending_from_payload(self.store, job.workspace_id, job.payload, engine.message)
            if pending.message.status == "pending":
                engine.fail_turn(pending, code, message)
                log.info("turn %s failed: %s", pending.message.id, code)
        except (NotFoundError, UsageError):  # gone, or settled meanwhile
            pass


class UploadWorker:
    """Queues the extraction and embedding of uploads as jobs and (``run``) runs workers for
    them in this process (from :meth:`start`; ``start``: at once): extraction on ``threads`` threads, one upload of a workspace at a
    time (each extraction runs in its own child process; with 2 threads another workspace's
    upload never waits for a flood), embedding on one low-priority thread.

    :meth:`recover` queues every upload still ``processing`` without a job (a store of
    before the jobs, an outage between an upload's row and its job; at start and at the
    extraction runner's heartbeat, :data:`~citewell.jobrunner.HOUSEKEEPING_S`), :meth:`reindex` every ready resource an older extractor made,
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
        jobs, or a job dead-lettered); returns how many were queued."""
        queued = self._queue_each(EXTRACT, self.store.pending_uploads())
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
                future.set_result(self._interrupt(engine, pending))
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

    @staticmethod
    def answer(engine: Engine, pending: PendingTurn,
               job: Callable[[Engine, PendingTurn], Message | None] | None = None) -> Message | None:
        """Answer one turn with ``job`` (default :meth:`Engine.complete_turn`) and log how it
        settled; an unexpected failure is logged, never raised (None), except
        :class:`~citewell.errors.StoreUnavailable`: the answer failed on the store and so did
        settling it failed, so it is raised for the job to fail (:meth:`TurnHandler.dead`
        settles the turn once the database is back)."""
        try:
            message = (job or Engine.complete_turn)(engine, pending)
        except StoreUnavailable:
            raise
        except Exception:  # a worker never dies of one turn
            log.exception("answering turn %s failed unexpectedly", pending.message.id)
            return None
        if message is None:
            return None
        if message.status == "failed":
            error = (message.model_extra or {}).get("error") or {}
            log.info("turn %s failed: %s: %s", message.id, error.get("code"), error.get("message"))
        else:
            log.info("turn %s settled (%d references)", message.id, len(message.references))
        return message

    @staticmethod
    def _interrupt(engine: Engine, pending: PendingTurn) -> Message | None:
        try:
            return engine.fail_turn(pending, TURN_INTERRUPTED, TURN_INTERRUPTED_MESSAGE)
        except Exception:
            log.exception("turn %s could not be marked interrupted", pending.message.id)
            return None

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


def resume_left_work(uploads: UploadWorker, turns: TurnWorker) -> int:
    """What a server or worker does at start, before its workers run: settle the turns that
    stopped workers left (:meth:`TurnWorker.recover`), queue the uploads left processing
    without a job (:meth:`UploadWorker.recover`), the resources an older extractor made
    (:meth:`~UploadWorker.reindex`) and the workspaces with passages that lack vectors
    (:meth:`~UploadWorker.backfill`). Returns how many turns were failed as
    ``TURN_INTERRUPTED`` (logged when any)."""
    interrupted = turns.recover()
    if interrupted:
        log.info("%d turn(s) left pending by a stopped worker settled as %s", interrupted, TURN_INTERRUPTED)
    uploads.recover()
    uploads.reindex()
    uploads.backfill()
    return interrupted


def run_workers(store: Store | str | os.PathLike[str], *, threads: int = 2, generator: Generator | str | None = None,
                llm: LLMSettings | None = None, stop: threading.Event, agent_tick_s: float | None = None) -> None:
    """``citewell worker``: run this process's workers on ``store`` (a store or its
    location) until ``stop`` is set — :class:`UploadWorker` and :class:`TurnWorker` with
    ``threads`` threads each (answers written by ``generator``, a name or a
    :class:`~citewell.generate.Generator`, with ``llm`` settings) and the tracking-agent
    scheduler (every ``agent_tick_s`` s, default ``CITEWELL_AGENT_TICK_S``) — after
    settling what stopped workers left (:meth:`TurnWorker.recover`,
    :meth:`UploadWorker.recover`, :meth:`~UploadWorker.reindex`,
    :meth:`~UploadWorker.backfill`). Then stops them: running jobs finish, an embedding
    goes back to the queue after its batch. Raises :class:`~citewell.errors.StoreError`
    when the store cannot be opened."""
    from ..agents import AgentRunner, Scheduler, tick_seconds
    from ..store import open_store

    opened = store if not isinstance(store, (str, os.PathLike)) else open_store(store)
    generators: dict[str, Any] = {}

    def engine_for(workspace_id: str) -> Engine:
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


__all__ = ["EMBED", "EXTRACT", "REINDEX", "TURN", "TURN_INTERRUPTED", "TURN_INTERRUPTED_MESSAGE", "TurnWorker",
           "UploadWorker", "embeds", "queue_embedding", "resume_left_work", "run_workers", "turn_active",
           "turn_key"]
