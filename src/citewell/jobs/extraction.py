"""Extraction jobs: ``extract`` (an upload) and ``reindex`` (a resource an older
extractor made, from its stored bytes).

- ``extract`` ``{resource_id}``: extract an upload (:meth:`Engine.process`); then, when
  the process's retrieval mode uses embeddings (hybrid, the default, or dense), queue
  its ``embed`` (the ``after`` callback of the handler).
- ``reindex`` ``{resource_id}``: re-extract a ready resource an older extractor made,
  from its stored bytes (:meth:`Engine.reindex_stored`), then queue its ``embed``.

An upload's ``extract`` whose database could not be reached is retried with backoff
(nothing of it was written); when its job is dead-lettered (out of attempts, or its
workers died) the upload settles ``failed`` with the job's code (:meth:`ExtractHandler.dead`).
``reindex`` is retried the same way and leaves nothing to settle (the old passages stay).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..engine import Engine
from ..errors import NotFoundError
from ..ingest.pipeline import BACKGROUND_NICE
from ..store import Store
from ..store.jobs import LEASE_EXPIRED, JobRecord
from .kinds import EXTRACT, REINDEX
from .runner import Lease
from .traced import TracedHandler

log = logging.getLogger(__name__)


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


class ExtractHandler(TracedHandler):
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


class ReindexHandler(TracedHandler):
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


__all__ = ["ExtractHandler", "ReindexHandler", "upload_failure"]
