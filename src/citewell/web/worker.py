"""Background work off the request path, on bounded pools that are fair between workspaces.

- :class:`UploadWorker` extracts uploads (:meth:`Engine.process`), then, when the
  server's retrieval mode uses embeddings (hybrid, the default, or dense), embeds the new
  resource's passages on its own thread (:meth:`Engine.embed`), so that questions do
  not spend their embedding budget on it; at start it also re-extracts what an older
  extractor made (:meth:`Engine.reindex_stored`);
- :class:`TurnWorker` answers the turns of ``POST /v1/ask`` and the analytics stream, and
  the questions of the sessions profile (:meth:`TurnWorker.call`).

Every pool is a :class:`~citewell.web.fairness.FairPool` keyed by workspace (issue 14):
workspaces are served in turn and one workspace never takes every thread, so a workspace
that floods the server with uploads or questions delays another's by at most one job per
thread, not by its queue. The background work nobody waits for (re-extraction at start,
the embedding thread, a workspace's backlog of uploads) runs at a lower CPU priority
(``nice`` 10) than the answers and the single uploads people wait for.

Jobs run in the submitting request's context (its request id reaches the log lines); a
failing job is logged and never raised.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from typing import Any, TypeVar

from ..embed import Embedder
from ..engine import Engine, PendingTurn
from ..ingest.pipeline import BACKGROUND_NICE, stale_resources
from ..models import Message
from ..store import Store
from .fairness import FairPool

log = logging.getLogger("citewell.web.worker")

T = TypeVar("T")

#: The code and message of a turn the server stopped before answering.
TURN_INTERRUPTED = "TURN_INTERRUPTED"
TURN_INTERRUPTED_MESSAGE = "the server stopped before the answer was finished; ask again"
def lower_priority() -> None:
    """Lower the calling thread's CPU priority by :data:`BACKGROUND_NICE` (Linux: a thread's
    nice value is its own, and threads it starts inherit it); nothing where unsupported."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except (AttributeError, OSError):
        pass


class UploadWorker:
    """Extraction of uploads on a :class:`~citewell.web.fairness.FairPool` of ``threads``
    threads, one workspace's uploads one at a time (each extraction runs in its own child
    process; with 2 threads another workspace's upload never waits for a flood), and
    embedding of ready uploads on a fair pool of one low-priority thread.

    A failing job is logged and never raised (the resource keeps its coded failure).
    :meth:`recover` queues every upload still ``processing`` in the store (a restart), and
    :meth:`reindex` every ready resource an older extractor made.
    """

    def __init__(self, store: Store, *, threads: int = 2) -> None:
        self.store = store
        self._pool = FairPool(threads, "citewell-ingest", per_key=1)
        #: one thread embedding ready uploads, workspaces in turn
        self._embedding = FairPool(1, "citewell-embed", initializer=lower_priority)
        self._embedder: Embedder | None = None
        self._stopping = threading.Event()  # set by shutdown: the running embedding stops at its next batch
        self.closed = False

    def submit(self, workspace_id: str, resource_id: str) -> Future[None]:
        """Queue the extraction of one upload; returns its future (result None)."""
        return self._pool.submit(workspace_id, self._run, workspace_id, resource_id)

    def recover(self) -> int:
        """Queue every upload still processing in the store; returns how many."""
        pending = Engine.pending_uploads(self.store)
        for workspace_id, resource_id in pending:
            self.submit(workspace_id, resource_id)
        if pending:
            log.info("resuming %d upload(s) left processing", len(pending))
        return len(pending)

    def reindex(self) -> int:
        """Queue the re-extraction, from its stored bytes, of every ready resource an older
        extractor version made (then its embedding); returns how many."""
        stale = stale_resources(self.store)
        for workspace_id, resource_id in stale:
            self._pool.submit(workspace_id, self._reindex, workspace_id, resource_id)
        if stale:
            log.info("re-extracting %d resource(s) made by an older extractor", len(stale))
        return len(stale)

    def _run(self, workspace_id: str, resource_id: str) -> None:
        # a workspace with more uploads waiting is flooding: its backlog yields the CPU to
        # the answers and to other workspaces' single uploads
        nice = BACKGROUND_NICE if self._pool.waiting(workspace_id) else 0
        try:
            resource = Engine.for_workspace_id(self.store, workspace_id).process(resource_id, nice=nice)
        except Exception:  # a worker never dies of one upload
            log.exception("processing upload %s failed unexpectedly", resource_id)
            return
        if resource is None:
            log.info("upload %s was deleted before it was processed", resource_id)
        elif resource.status == "failed" and resource.error is not None:
            log.info("upload %s failed: %s: %s", resource_id, resource.error.code, resource.error.message)
        else:
            log.info("upload %s is %s (%d chunks)", resource_id, resource.status, resource.chunk_count)
            if resource.status == "ready" and resource.chunk_count:
                self._embedding.submit(workspace_id, self._embed, workspace_id, resource_id)

    def _reindex(self, workspace_id: str, resource_id: str) -> None:
        try:
            resource = Engine.for_workspace_id(self.store, workspace_id).reindex_stored(resource_id)
        except Exception:  # a worker never dies of one resource
            log.exception("re-extracting %s failed unexpectedly", resource_id)
            return
        if resource is not None:
            log.info("%s re-extracted by %s (%d chunks)", resource_id, resource.extractor_version,
                     resource.chunk_count)
            self._embedding.submit(workspace_id, self._embed, workspace_id, resource_id)

    def backfill(self) -> int:
        """Queue, for every workspace with passages that have no vector yet, the embedding
        of all of them (a store filled by ``citewell ingest`` without ``--wait``), after the
        uploads already queued; returns how many workspaces were queued. Nothing when the
        retrieval mode is lexical or the embedding model is not installed. Each process
        serving the store does this at start: the work may be done twice, never wrongly."""
        ids = self.store.workspace_ids()
        if not ids:
            return 0
        probe = Engine.for_workspace_id(self.store, ids[0])  # the mode and the model are the process's
        if probe.mode == "lexical" or not probe.dense_available():
            return 0
        queued = 0
        for workspace_id in ids:
            embedded, total = Engine.for_workspace_id(self.store, workspace_id).embedding_coverage()
            if embedded < total:
                self._embedding.submit(workspace_id, self._embed, workspace_id, None)
                queued += 1
        if queued:
            log.info("embedding the passages of %d workspace(s) that lack vectors", queued)
        return queued

    def _background_embedder(self) -> Embedder | None:
        """The embedder of background work (built on the embedding thread, on first use):
        the local MiniLM on one onnxruntime thread, so that embedding an upload leaves the
        other cores to the questions (the questions' own embedder uses them all); an
        embeddings endpoint as configured."""
        if self._embedder is None:
            from ..embed.endpoint import configured_embedder
            from ..retrieve.embedder import MiniLMEmbedder

            configured = configured_embedder()
            self._embedder = MiniLMEmbedder(threads=1) if isinstance(configured, MiniLMEmbedder) else configured
        return self._embedder

    def _embed(self, workspace_id: str, resource_id: str | None) -> None:
        """Embed the passages of one ready upload (``resource_id``), or of the whole
        workspace (None), that have no vector yet (nothing when the mode is lexical or the
        embedding model is not installed)."""
        what = f"upload {resource_id}" if resource_id else f"workspace {workspace_id}"
        try:
            engine = Engine.for_workspace_id(self.store, workspace_id)
            if engine.mode == "lexical" or not engine.dense_available():
                return
            engine = Engine.for_workspace_id(self.store, workspace_id, embedder=self._background_embedder())
            scope = {"resource_id": resource_id} if resource_id else None
            embedded, total = engine.embed(filters=scope, stop=self._stopping.is_set)
        except Exception:  # deleted meanwhile, or a model failure: questions embed what they need
            log.exception("embedding %s failed", what)
            return
        if embedded < total:
            log.info("%s: %d of %d passages embedded, stopped before the rest", what, embedded, total)
        else:
            log.info("%s embedded (%d passages)", what, total)

    def shutdown(self) -> None:
        """Stop: the running extraction finishes, queued ones are dropped (they stay
        processing and :meth:`recover` picks them up at the next start); the running
        embedding stops after its current batch (about a second) and queued ones are
        dropped (a question embeds what its scope lacks)."""
        self.closed = True
        self._stopping.set()
        self._pool.shutdown()
        self._embedding.shutdown()

    def wait_embedded(self) -> None:
        """Block until the embeddings queued so far are done (for tests and orderly stops)."""
        self._embedding.wait_idle()

    def wait_idle(self) -> None:
        """Block until the extractions queued so far, and the embeddings they queue, are done."""
        self._pool.wait_idle()
        self._embedding.wait_idle()


class TurnWorker:
    """A :class:`~citewell.web.fairness.FairPool` of ``threads`` threads answering turns
    begun by :meth:`Engine.begin_turn` (and, through :meth:`call`, the sessions profile's
    questions), workspaces in turn and at most ``per_workspace`` (default ``threads - 1``)
    of one workspace's at once.

    :meth:`submit` takes the request's engine (its workspace, store and generator; a
    generator shared by the app must be safe to call from several threads) and the
    :class:`~citewell.engine.PendingTurn`. A turn always settles: answered, failed with
    its code (:meth:`Engine.complete_turn`), or — when the pool is stopped before it ran,
    or is closed already — failed with ``TURN_INTERRUPTED``. Turns a stopped process left
    pending are failed at the next start (``Store.fail_pending``, see the app).
    """

    def __init__(self, *, threads: int = 2, per_workspace: int | None = None) -> None:
        self._pool = FairPool(threads, "citewell-turn", per_key=per_workspace)
        self.closed = False
        self._lock = threading.Lock()
        self._queued: dict[Future[Message | None], tuple[Engine, PendingTurn]] = {}

    def submit(self, engine: Engine, pending: PendingTurn,
               job: Callable[[Engine, PendingTurn], Message | None] | None = None) -> Future[Message | None]:
        """Queue the answer of one turn; returns its future (the settled message, or None
        when answering it failed unexpectedly and was logged). ``job(engine, pending)``
        answers it (default :meth:`Engine.complete_turn`; the SSE route streams it)."""
        with self._lock:
            if self.closed:
                future: Future[Message | None] = Future()
                future.set_result(self._interrupt(engine, pending))
                return future
            future = self._pool.submit(engine.workspace_id, self._run, engine, pending, job)
            self._queued[future] = (engine, pending)
        future.add_done_callback(self._forget)
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

    def _forget(self, future: Future[Message | None]) -> None:
        if not future.cancelled():
            with self._lock:
                self._queued.pop(future, None)

    @staticmethod
    def _run(engine: Engine, pending: PendingTurn,
             job: Callable[[Engine, PendingTurn], Message | None] | None = None) -> Message | None:
        try:
            message = (job or Engine.complete_turn)(engine, pending)
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

    def shutdown(self) -> None:
        """Stop: running turns finish; queued ones are not answered but settle as failed
        (``TURN_INTERRUPTED``) so that none stays pending."""
        with self._lock:
            self.closed = True
        cancelled = self._pool.shutdown()
        with self._lock:
            dropped = [self._queued[f] for f in cancelled if f in self._queued]
            self._queued.clear()
        for engine, pending in dropped:
            self._interrupt(engine, pending)
        if dropped:
            log.info("%d queued turn(s) interrupted by the shutdown", len(dropped))


__all__ = ["TURN_INTERRUPTED", "TURN_INTERRUPTED_MESSAGE", "TurnWorker", "UploadWorker"]
