"""Turn jobs: ``turn`` answers a turn begun by :meth:`Engine.begin_turn` — ``POST /v1/ask``
and the analytics stream, whose events are recorded in the store so that any replica can
serve them (:mod:`citewell.jobs.streaming`). Payload: :func:`~citewell.answer.turn.turn_payload`,
and ``stream``.

A turn is tried once: its lease is the turn's ownership (no process ids), and a turn
whose worker died (its lease expired) settles as failed with ``TURN_INTERRUPTED``; one
whose database could not be reached while it was answered (and then settled) settles as
failed with ``STORE_UNAVAILABLE`` once the database is back (its job is dead-lettered,
and :meth:`TurnHandler.dead` settles it). It is not answered again: it may have streamed
events and spent a model's tokens already, and the client may ask again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..answer.turn import pending_from_payload
from ..engine import Engine, PendingTurn
from ..errors import NotFoundError, StoreUnavailable, UsageError
from ..models import Message
from ..store import Store
from ..store.jobs import LEASE_EXPIRED, JobRecord, JobStore
from .kinds import TURN
from .runner import FUTURE_TTL_S, JobFailed, Lease
from .streaming import stream_job
from .traced import TracedHandler

log = logging.getLogger(__name__)

#: The code and message of a turn the server stopped before answering.
TURN_INTERRUPTED = "TURN_INTERRUPTED"
TURN_INTERRUPTED_MESSAGE = "the server stopped before the answer was finished; ask again"
#: The message of a turn that failed because the database could not be reached.
STORE_UNAVAILABLE_MESSAGE = "the database could not be reached while the answer was written; ask again"


def turn_key(message_id: str) -> str:
    """The job key of the turn answering message ``message_id``."""
    return f"{TURN}:{message_id}"


def turn_active(store: JobStore, message_id: str) -> bool:
    """Whether the turn answering ``message_id`` has a job queued or running (a worker of
    some process will settle it, and may still record its stream's events)."""
    return bool(store.jobs(key=turn_key(message_id), states=("queued", "running"), limit=1))


def answer_turn(engine: Engine, pending: PendingTurn,
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


def interrupt_turn(engine: Engine, pending: PendingTurn) -> Message | None:
    """Settle ``pending`` as failed with ``TURN_INTERRUPTED`` (a turn submitted once the
    workers stopped); the settled message, or None when settling failed (logged, never
    raised)."""
    try:
        return engine.fail_turn(pending, TURN_INTERRUPTED, TURN_INTERRUPTED_MESSAGE)
    except Exception:
        log.exception("turn %s could not be marked interrupted", pending.message.id)
        return None


class TurnHandler(TracedHandler):
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
        :data:`~citewell.jobs.runner.FUTURE_TTL_S`, as the runner drops its future)."""
        now = time.monotonic()
        with self._lock:
            for stale in [k for k, entry in self.local.items() if now - entry[3] > FUTURE_TTL_S]:
                del self.local[stale]
            self.local[key] = (engine, pending, job, now)

    def run(self, job: JobRecord, lease: Lease) -> Message | None:
        """Answer the turn of a :func:`~citewell.answer.turn.turn_payload` (:func:`answer_turn`;
        a streamed one with :func:`~citewell.jobs.streaming.stream_job`):
        the settled message, or None when it was deleted, had settled already, or
        answering failed unexpectedly (logged). Raises
        :class:`~citewell.errors.StoreUnavailable` when the store failed under the turn and
        under its settling, :class:`~citewell.jobs.runner.JobFailed` (``TURN_INTERRUPTED``)
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
            fn = stream_job if job.payload.get("stream") else None
        if pending.message.status != "pending":
            return None
        message = answer_turn(engine, pending, fn)
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


__all__ = ["STORE_UNAVAILABLE_MESSAGE", "TURN_INTERRUPTED", "TURN_INTERRUPTED_MESSAGE", "TurnHandler",
           "answer_turn", "interrupt_turn", "turn_active", "turn_key"]
