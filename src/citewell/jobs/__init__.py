"""The work of a citewell server or worker: jobs in the store (:mod:`citewell.store.jobs`),
run by :class:`~citewell.jobs.runner.JobRunner` threads of any process sharing the store —
``citewell serve`` (unless ``--no-workers``) and ``citewell worker``, which serves nothing.

Modules, one job each (none imports :mod:`citewell.web`: ``tests/test_layering.py``):

- :mod:`.runner`: the generic job runner (claims, leases, retries, dead letters, stop);
- :mod:`.fairness`: :class:`~.fairness.FairPool`, an in-process thread pool fair between
  workspaces (the sessions profile's questions answered while the client waits);
- :mod:`.kinds`: the kinds of jobs (``extract``, ``reindex``, ``embed``, ``turn``);
- :mod:`.traced`: a job runs under the request id it was queued with;
- :mod:`.extraction`: the ``extract`` and ``reindex`` handlers;
- :mod:`.embedding`: the ``embed`` handler, and queueing an embedding;
- :mod:`.turns`: the ``turn`` handler (answering a turn; how a turn settles);
- :mod:`.streaming`: a streamed turn's events recorded in the store (the producer the
  ``/v2/analytics/sse`` route tails);
- :mod:`.workers`: :class:`~.workers.UploadWorker` and :class:`~.workers.TurnWorker`,
  which queue jobs and run this process's workers;
- :mod:`.process`: :func:`~.process.resume_left_work` (what a process settles and queues
  at start) and :func:`~.process.run_workers` (the body of ``citewell worker``, with the
  tracking-agent scheduler of :mod:`citewell.agents`).

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
  ``STORE_UNAVAILABLE`` once the database is back. It is not answered again: it may have
  streamed events and spent a model's tokens already, and the client may ask again.

An upload's ``extract`` whose database could not be reached is retried with backoff
(nothing of it was written); when its job is dead-lettered (out of attempts, or its
workers died) the upload settles ``failed`` with the job's code. ``reindex`` and
``embed`` are retried the same way and leave nothing to settle (the old passages stay;
passages without a vector are embedded by the next backfill).

This package imports nothing at import time: import the module you need.
"""
