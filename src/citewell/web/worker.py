"""The background worker that extracts uploads (``Engine.process``) off the request path."""

from __future__ import annotations

import contextvars
import logging
from concurrent.futures import Future, ThreadPoolExecutor

from ..engine import Engine
from ..store import Store

log = logging.getLogger("citewell.web.worker")


class UploadWorker:
    """A bounded pool (``threads``, 1–2 is plenty for SQLite) running :meth:`Engine.process`
    for uploaded resources.

    Jobs run in the submitting request's context (its request id reaches the log lines);
    a failing job is logged and never raised (the resource keeps its coded failure).
    :meth:`recover` queues every upload still ``processing`` in the store (a restart).
    """

    def __init__(self, store: Store, *, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="citewell-ingest")
        self.closed = False

    def submit(self, workspace_id: str, resource_id: str) -> Future[None]:
        """Queue the extraction of one upload; returns its future (result None)."""
        ctx = contextvars.copy_context()
        return self._pool.submit(ctx.run, self._run, workspace_id, resource_id)

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

    def shutdown(self) -> None:
        """Stop: the running job finishes, queued ones are dropped (they stay processing and
        :meth:`recover` picks them up at the next start)."""
        self.closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)


__all__ = ["UploadWorker"]
