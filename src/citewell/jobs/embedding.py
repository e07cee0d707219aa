"""Embedding jobs: ``embed`` ``{resource_id}`` (null: the whole workspace) embeds the
passages that have no vector yet (:meth:`Engine.embed`), at a lower CPU priority, on one
thread. Queued after an upload's extraction (:func:`queue_embedding`) and, at a start,
for every workspace with passages that lack vectors. Retried with backoff when the
database could not be reached; it leaves nothing to settle (passages without a vector
are embedded by the next backfill).
"""

from __future__ import annotations

import logging
import os
import threading

from ..embed import Embedder
from ..engine import Engine
from ..errors import NotFoundError
from ..ingest.pipeline import BACKGROUND_NICE
from ..store import Store
from ..store.jobs import JobRecord
from .kinds import EMBED
from .runner import RELEASE, Lease
from .traced import TracedHandler, traced

log = logging.getLogger(__name__)


def lower_priority() -> None:
    """Lower the calling thread's CPU priority by :data:`BACKGROUND_NICE` (Linux: a thread's
    nice value is its own, and threads it starts inherit it); nothing where unsupported."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except (AttributeError, OSError):
        pass


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


class EmbedHandler(TracedHandler):
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
            from ..embed.minilm import MiniLMEmbedder

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


__all__ = ["EmbedHandler", "embeds", "lower_priority", "queue_embedding"]
