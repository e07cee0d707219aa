"""Background work off the request path, on bounded thread pools.

- :class:`UploadWorker` extracts uploads (:meth:`Engine.process`), then, when the
  server's retrieval mode uses embeddings (hybrid, the default, or dense), embeds the new
  resource's passages on its own thread (:meth:`Engine.embed`), so that questions do
  not spend their embedding budget on it;
- :class:`TurnWorker` answers the turns of ``POST /v1/ask`` (:meth:`Engine.complete_turn`).

Jobs run in the submitting request's context (its request id reaches the log lines); a
failing job is logged and never raised.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from ..engine import Engine, PendingTurn
from ..models import Message
from ..store import Store

log = logging.getLogger("citewell.web.worker")

T = TypeVar("T")

#: The code and message of a turn the server stopped before answering.
TURN_INTERRUPTED = "TURN_INTERRUPTED"
TURN_INTERRUPTED_MESSAGE = "the server stopped before the answer was finished; ask again"


class _Pool:
    """A bounded :class:`ThreadPoolExecutor` whose jobs run in the submitter's context."""

    def __init__(self, threads: int, name: str) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        self.closed = False

    def _submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        ctx = contextvars.copy_context()
        return self._pool.submit(ctx.run, fn, *args)


class UploadWorker(_Pool):
    """A bounded pool (``threads``, 1–2 is plenty for SQLite) running :meth:`Engine.process`
    for uploaded resources.

    A failing job is logged and never raised (the resource keeps its coded failure).
    :meth:`recover` queues every upload still ``processing`` in the store (a restart).
    """

    def __init__(self, store: Store, *, threads: int = 1) -> None:
        super().__init__(threads, "citewell-ingest")
        self.store = store
        #: one thread embedding ready uploads, in the order they became ready
        self._embedding = ThreadPoolExecutor(max_workers=1, thread_name_prefix="citewell-embed")
        self._stopping = threading.Event()  # set by shutdown: the running embedding stops at its next batch

    def submit(self, workspace_id: str, resource_id: str) -> Future[None]:
        """Queue the extraction of one upload; returns its future (result None)."""
        return self._submit(self._run, workspace_id, resource_id)

    def recover(self) -> int:
        """Queue every upload still processing in the store; returns how many."""
        pending = Engine.pending_uploads(self.store)
        for workspace_id, resource_id in pending:
            self.submit(workspace_id, resource_id)
        if pending:
            log.info("resuming %d upload(s) left processing", len(pending))
        return len(pending)

    def _run(self, workspace_id: str, resource_id: str) -> None:
        try:
            resource = Engine.for_workspace_id(self.store, workspace_id).process(resource_id)
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
                ctx = contextvars.copy_context()
                self._embedding.submit(ctx.run, self._embed, workspace_id, resource_id)

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
                ctx = contextvars.copy_context()
                self._embedding.submit(ctx.run, self._embed, workspace_id, None)
                queued += 1
        if queued:
            log.info("embedding the passages of %d workspace(s) that lack vectors", queued)
        return queued

    def _embed(self, workspace_id: str, resource_id: str | None) -> None:
        """Embed the passages of one ready upload (``resource_id``), or of the whole
        workspace (None), that have no vector yet (nothing when the mode is lexical or the
        embedding model is not installed)."""
        what = f"upload {resource_id}" if resource_id else f"workspace {workspace_id}"
        try:
            engine = Engine.for_workspace_id(self.store, workspace_id)
            if engine.mode == "lexical" or not engine.dense_available():
                return
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
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._embedding.shutdown(wait=True, cancel_futures=True)

    def wait_embedded(self) -> None:
        """Block until the embeddings queued so far are done (for tests and orderly stops)."""
        self._embedding.submit(lambda: None).result()


class TurnWorker(_Pool):
    """A bounded pool (``threads``) answering turns begun by :meth:`Engine.begin_turn`.

    :meth:`submit` takes the request's engine (its workspace, store and generator; a
    generator shared by the app must be safe to call from several threads) and the
    :class:`~citewell.engine.PendingTurn`. A turn always settles: answered, failed with
    its code (:meth:`Engine.complete_turn`), or — when the pool is stopped before it ran,
    or is closed already — failed with ``TURN_INTERRUPTED``. Turns a stopped process left
    pending are failed at the next start (``Store.fail_pending``, see the app).
    """

    def __init__(self, *, threads: int = 2) -> None:
        super().__init__(threads, "citewell-turn")
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
            future = self._submit(self._run, engine, pending, job)
            self._queued[future] = (engine, pending)
        future.add_done_callback(self._forget)
        return future

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
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            dropped = [job for future, job in self._queued.items() if future.cancelled()]
            self._queued.clear()
        for engine, pending in dropped:
            self._interrupt(engine, pending)
        if dropped:
            log.info("%d queued turn(s) interrupted by the shutdown", len(dropped))


__all__ = ["TURN_INTERRUPTED", "TURN_INTERRUPTED_MESSAGE", "TurnWorker", "UploadWorker"]
