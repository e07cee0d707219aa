"""Dense retrieval: cosine search over a workspace's embedded chunks.

Vectors are stored by the store (schema v8, keyed by workspace and chunk-text sha256) as
float32 unit vectors, so cosine similarity is a dot product. The store's vector index
ranks them (:meth:`Store.nearest_chunks`): exactly on SQLite (one matrix-vector product
over every embedded chunk in the filter scope, kept in memory between questions), with
pgvector's HNSW index on PostgreSQL; filters and the folder scope are applied by the
store, exactly as for BM25. Chunks without a vector yet
are not ranked here (the hybrid retriever's BM25 side still sees them).

:func:`embed_missing` computes the vectors a scope lacks, within a time budget.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..embed import Embedder
from ..models import Passage
from ..store.base import Condition, Store, VectorStore
from ..store.ids import text_hash


@dataclass(frozen=True)
class EmbedProgress:
    """What :func:`embed_missing` did: ``embedded`` texts now, ``missing`` still without a
    vector (0 when complete), ``seconds`` spent."""

    embedded: int
    missing: int
    seconds: float


#: Texts :func:`embed_missing` reads from the store at a time.
PAGE = 512


def embed_missing(store: VectorStore, workspace_id: str, embedder: Embedder, *, conditions: Sequence[Condition] = (),
                  under: str | None = None, budget_s: float | None = None, batch: int = 32,
                  progress: Callable[[int, int], None] | None = None,
                  stop: Callable[[], bool] | None = None) -> EmbedProgress:
    """Embed the texts of searchable chunks in scope that have no vector, shortest first
    (texts of a batch are padded to the longest, so batches of similar lengths waste the
    least work: 37.0 against 36.0 passages/s in chunk order on 256 shared-corpus chunks,
    ``benchmarks/dense_speed.py``; under a budget, more passages get a vector), storing
    each batch of ``batch`` texts as it is computed.

    ``budget_s``: stop starting batches once that many seconds have passed (None: no
    limit; 0: embed nothing); a batch already started finishes, so the overrun is at most
    one batch (about 0.5–1 s for 32 passages on 2 cores). ``progress(done, total)`` is called
    after each batch. ``stop()``: checked before each batch; True ends the work (a server
    shutting down). A batch whose texts no chunk has any more (the resource was deleted
    meanwhile) stores nothing (:meth:`Store.put_vectors`) and ends the work too: the scope
    changed. Returns what was embedded and what is still missing (distinct texts).

    The texts are read from the store :data:`PAGE` at a time (shortest first), never all
    at once: what embedding holds in memory does not grow with the scope (a 50 MB posts
    file is some 38,000 passages, issue 14), and a question with a time budget reads only
    what it can embed.
    """
    start = time.monotonic()
    total = store.missing_vectors(workspace_id, embedder.model_id, conditions=conditions, under=under)
    if progress is not None:
        progress(0, total)
    done = 0
    while done < total:
        page = store.texts_without_vectors(workspace_id, embedder.model_id, conditions=conditions, under=under,
                                           limit=PAGE, shortest_first=True)
        if not page:
            break
        step = None if progress is None else (lambda n, _all, base=done: progress(base + n, total))
        embedded = _embed_batches(store, workspace_id, embedder, page, start=start, budget_s=budget_s, batch=batch,
                                  stop=stop, progress=step, first_free=False)
        done += embedded
        if embedded < len(page):  # out of time, stopped, or the scope changed
            break
    return EmbedProgress(done, max(0, total - done), time.monotonic() - start)


def embed_passages(store: VectorStore, workspace_id: str, embedder: Embedder, passages: Sequence[Passage], *,
                   budget_s: float | None = None, batch: int = 8, stop: Callable[[], bool] | None = None) -> int:
    """Embed those of ``passages`` (chunks of this workspace) whose text has no vector yet,
    best first, ``batch`` texts at a time; returns how many texts were embedded. ``ask``
    uses it to embed its BM25 candidates before the rest of its scope. ``budget_s``: no
    batch after the first starts once that many seconds have passed (the first, the
    question's best candidates, runs whenever ``budget_s`` is not 0; small batches keep
    the overrun short). ``stop()``: checked before each batch; True ends the work."""
    start = time.monotonic()
    have = store.vectors(workspace_id, embedder.model_id, [p.chunk.id for p in passages])
    todo = list({text_hash(p.chunk.text): p.chunk.text for p in passages if p.chunk.id not in have}.items())
    return _embed_batches(store, workspace_id, embedder, todo, start=start, budget_s=budget_s, batch=batch,
                          stop=stop, first_free=True)


def _embed_batches(store: VectorStore, workspace_id: str, embedder: Embedder, todo: Sequence[tuple[str, str]], *,
                   start: float, budget_s: float | None, batch: int, stop: Callable[[], bool] | None,
                   progress: Callable[[int, int], None] | None = None, first_free: bool = False) -> int:
    """Embed ``todo`` (``(text_hash, text)``) in batches of ``batch``, storing each batch as
    it is computed; returns how many texts were embedded. Before each batch: over
    ``budget_s`` seconds since ``start`` ends the work (``first_free``: not before the first
    batch, unless the budget is 0), and so does ``stop()``; a batch whose texts no chunk has
    any more stores nothing and ends it too. ``progress(done, total)`` after each batch."""
    done = 0
    for i in range(0, len(todo), batch):
        if budget_s is not None and (budget_s <= 0 or ((i or not first_free) and
                                                       time.monotonic() - start >= budget_s)):
            break
        if stop is not None and stop():
            break
        part = todo[i:i + batch]
        vectors = np.ascontiguousarray(embedder.embed([text for _, text in part]), dtype="<f4")
        if not store.put_vectors(workspace_id, embedder.model_id, embedder.dim,
                                 [(key, vectors[j].tobytes()) for j, (key, _) in enumerate(part)]):
            break
        done += len(part)
        if progress is not None:
            progress(done, len(todo))
    return done


#: Threads that embed a question ahead of its dense ranking (:meth:`DenseRetriever.prefetch`):
#: the model's inference releases the GIL, so it runs while the scope check reads the store.
_PREFETCH = ThreadPoolExecutor(max_workers=2, thread_name_prefix="citewell-embed-question")


class DenseRetriever:
    """Ranks a workspace's embedded chunks by cosine similarity to the question.

    ``store``/``workspace_id`` as :class:`~citewell.retrieve.bm25.BM25Retriever`;
    ``embedder`` embeds the question (and must be the model the stored vectors came from:
    only vectors of ``embedder.model_id`` are read). Implements
    :class:`~citewell.retrieve.base.Retriever`; ``score`` is the cosine in [-1, 1].
    """

    def __init__(self, store: Store, workspace_id: str, embedder: Embedder) -> None:
        self.store = store
        self.workspace_id = workspace_id
        self.embedder = embedder
        self._last: tuple[str, np.ndarray] | None = None  # the last question and its vector
        self._ahead: tuple[str, Future] | None = None  # a question being embedded ahead (prefetch)
        self._lock = threading.Lock()

    def prefetch(self, question: str) -> None:
        """Start embedding ``question`` in a background thread, so that the embedding and
        the work before the dense ranking (the scope check's lookups) overlap; the next
        :meth:`_query_vector` of the same question waits for it. Only the latest question
        is kept ahead; an embedding error is raised where the vector is asked for."""
        if not question.strip():
            return
        with self._lock:
            last, ahead = self._last, self._ahead
            if (last is not None and last[0] == question) or (ahead is not None and ahead[0] == question):
                return
            self._ahead = (question, _PREFETCH.submit(self.embedder.embed, [question]))

    def _query_vector(self, question: str) -> np.ndarray:
        """The question's unit vector (the last one is kept: hybrid fusion asks twice; one
        embedded ahead by :meth:`prefetch` is waited for)."""
        with self._lock:
            last, ahead = self._last, self._ahead
            if ahead is not None and ahead[0] == question:
                self._ahead = None
        if last is not None and last[0] == question:
            return last[1]
        waited = ahead is not None and ahead[0] == question
        vector = ahead[1].result()[0] if waited else self.embedder.embed([question])[0]  # type: ignore[index]
        self._last = (question, vector)
        return vector

    def similarities(self, question: str, chunk_ids: Sequence[str]) -> dict[str, float]:
        """Cosine of ``question`` with each of ``chunk_ids`` that has a vector (chunk id ->
        cosine in [-1, 1]); chunks without a vector, or of another workspace, are absent."""
        if not chunk_ids or not question.strip():
            return {}
        blobs = self.store.vectors(self.workspace_id, self.embedder.model_id, chunk_ids)
        if not blobs:
            return {}
        ids = list(blobs)
        matrix = np.frombuffer(b"".join(blobs[i] for i in ids), dtype="<f4").reshape(len(ids), -1)
        return dict(zip(ids, (matrix @ self._query_vector(question)).tolist()))

    def rank(self, question: str, *, limit: int, conditions: Sequence[Condition] = (),
             under: str | None = None) -> list[tuple[str, float]]:
        """``(chunk_id, cosine)`` of the best ``limit`` embedded chunks in scope, best first
        (ties by chunk order), from the store's vector index (:meth:`Store.nearest_chunks`)."""
        if limit <= 0 or not question.strip():
            return []
        return self.store.nearest_chunks(self.workspace_id, self.embedder.model_id, self._query_vector(question),
                                         limit=limit, conditions=conditions, under=under)

    def retrieve(self, question: str, *, k: int, conditions: Sequence[Condition] = (),
                 under: str | None = None) -> list[Passage]:
        """Top ``k`` passages by cosine (see :class:`~citewell.retrieve.base.Retriever`)."""
        ranked = self.rank(question, limit=k, conditions=conditions, under=under)
        found = self.store.chunks(self.workspace_id, [cid for cid, _ in ranked])
        out: list[Passage] = []
        for cid, score in ranked:
            if cid in found:
                out.append(found[cid].model_copy(update={"score": score, "rank": len(out) + 1}))
        return out
