"""Workers that claim jobs from the store (:mod:`citewell.store.jobs`) and run them.

A :class:`JobRunner` is ``threads`` threads of one process claiming jobs of some kinds
(``extract``, ``embed``, ``turn`` …) from the store every process shares, so that workers
may run on any machine: ``citewell serve`` runs its own (unless ``--no-workers``), and
``citewell worker`` runs only workers. What a kind does is its :class:`Handler`.

- **Claims** are fair between workspaces and never double (the store's rules). An idle
  thread looks again every ``poll_s`` seconds, or at once when this process queued a job
  (:meth:`JobRunner.wake`) or the database tells of one (PostgreSQL's ``NOTIFY``,
  :meth:`Store.listen_jobs`).
- **Leases**: while a job runs, one heartbeat thread renews its lease every third of
  ``lease_s``; a job whose lease was lost (this process stalled beyond its lease and
  another worker took the job) is told so through :attr:`Lease.lost` and its outcome is
  not recorded. The heartbeat also takes back the jobs of dead workers
  (:meth:`Store.expire_jobs`) and hands those that ran out of attempts to their
  handler's :meth:`Handler.dead`; and, hourly, it deletes ``done`` jobs older than a day.
- **Failures**: a handler raising :class:`JobFailed` fails the job with its code (retried
  with backoff when ``retry``, else dead-lettered at once); a
  :class:`~citewell.errors.StoreUnavailable` (the database was unreachable: nothing was
  written, the job may simply run again) is ``STORE_UNAVAILABLE``, retried; any other
  exception is ``SERVER_ERROR``, retried. A job dead-lettered by its failure goes to its
  handler's :meth:`Handler.dead` too, as one whose worker died does, so that what it was
  doing settles (an upload fails, a turn fails). A worker never dies of a job.
- **Stop** (:meth:`JobRunner.stop`, on SIGTERM): no new claims; running jobs finish, or
  — a handler that sees :attr:`Lease.stopping` and returns :data:`RELEASE` — go back
  to the queue for another worker, without counting the attempt.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import StoreUnavailable
from ..store.base import JobStore
from ..store.jobs import JobRecord
from ..store.records import worker_id

log = logging.getLogger("citewell.jobs")

#: Seconds of a lease (renewed every third of it while the job runs).
LEASE_S = 30.0
#: Seconds an idle worker thread waits before it looks for a job again.
POLL_S = 0.5
#: Seconds a ``done`` job is kept (dead letters stay until retried); the heartbeat deletes
#: older ones every :data:`PRUNE_EVERY_S` seconds.
KEEP_DONE_S = 86400.0
PRUNE_EVERY_S = 3600.0
#: seconds between two runs of a runner's ``housekeeping`` (at its heartbeat: every third of
#: a lease at the soonest)
HOUSEKEEPING_S = 60.0
#: Seconds a future of a job nobody here ran is kept (another process ran the job).
FUTURE_TTL_S = 3600.0
#: What a handler returns to put its job back in the queue (the worker is stopping).
RELEASE = "release"


def run_initializer(initializer: Callable[[], None] | None) -> None:
    """Run a worker thread's ``initializer`` (such as a lower CPU priority) first thing in
    the thread; one that raises only leaves the thread's defaults (never raises itself)."""
    if initializer is not None:
        try:
            initializer()
        except Exception:  # noqa: BLE001 - a failed initializer only leaves the defaults
            pass


class JobFailed(Exception):
    """A job failed with ``code`` and ``message``; ``retry``: worth trying again."""

    def __init__(self, code: str, message: str, *, retry: bool = True) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.retry = code, message, retry


@dataclass
class Lease:
    """The running claim of one job: ``lost`` is set when another worker took the job (the
    lease expired), ``stopping`` when the runner is stopping (a long job may return
    :data:`RELEASE` at its next step)."""

    job: JobRecord
    stopping: threading.Event
    lost: threading.Event = field(default_factory=threading.Event)

    def should_stop(self) -> bool:
        """Whether the job should stop at its next step (lost, or the runner is stopping)."""
        return self.lost.is_set() or self.stopping.is_set()


class Handler:
    """What one kind of job does: :meth:`run` it (raise :class:`JobFailed` to fail it,
    return :data:`RELEASE` to give it back), and :meth:`dead` when it is dead-lettered —
    after its last attempt failed, or because its worker died (default: log it)."""

    kind = ""

    def run(self, job: JobRecord, lease: Lease) -> Any:
        """Do the job."""
        raise NotImplementedError

    def run_in_context(self, job: JobRecord, lease: Lease) -> Any:
        """:meth:`run` in the job's context (in a copy of the worker thread's context: a
        handler may set context variables, such as the request id its log lines carry)."""
        return self.run(job, lease)

    def dead(self, job: JobRecord) -> None:
        """The job was dead-lettered (state ``failed``): its last attempt failed with
        ``job.error`` (``{code, message}``: the handler's :class:`JobFailed`,
        ``STORE_UNAVAILABLE``, ``SERVER_ERROR``), or its last worker died (its lease expired:
        ``LEASE_EXPIRED``). Called once, by the process that dead-lettered it; what it
        raises is logged. Settle here what the job leaves unfinished."""
        log.warning("%s job %s of workspace %s dead-lettered: %s", job.kind, job.id, job.workspace_id,
                    (job.error or {}).get("message"))


class JobRunner:
    """``threads`` threads claiming jobs of ``handlers``' kinds from ``store`` (module
    docstring); a workspace runs at most ``per_workspace`` of them at once (None: no cap).
    ``initializer`` runs in each thread first (a lower CPU priority). ``backoff_s``: the
    first retry's delay. ``housekeeping`` runs at the heartbeat every ``housekeeping_s``
    seconds (such as queueing the uploads an outage left without a job; what it raises is
    logged). Threads start at :meth:`start`. ``ValueError`` for ``threads < 1``."""

    def __init__(self, store: JobStore, handlers: Sequence[Handler], *, threads: int, name: str,
                 per_workspace: int | None = None, lease_s: float = LEASE_S, poll_s: float = POLL_S,
                 backoff_s: float = 5.0, owner: str | None = None,
                 initializer: Callable[[], None] | None = None,
                 housekeeping: Callable[[], object] | None = None,
                 housekeeping_s: float = HOUSEKEEPING_S) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self.store = store
        self.handlers = {h.kind: h for h in handlers}
        self.threads, self.name, self.per_workspace = threads, name, per_workspace
        self.lease_s, self.poll_s, self.backoff_s = lease_s, poll_s, backoff_s
        self.owner = owner or worker_id()
        self._initializer = initializer
        self._stopping = threading.Event()
        self._wake = threading.Condition()
        self._woken = 0
        self._running: dict[str, tuple[Lease, str]] = {}  # job id -> (lease, token)
        self._futures: dict[str, tuple[Future[Any], float]] = {}  # job key -> (future, when asked)
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._heart: threading.Thread | None = None
        self._ear: threading.Thread | None = None
        self._next_prune = time.monotonic()
        self._housekeeping, self.housekeeping_s = housekeeping, housekeeping_s
        self._next_housekeeping = time.monotonic() + housekeeping_s
        #: whether the last claim met the store unreachable (its warning is logged once per outage)
        self._store_away = False

    @property
    def kinds(self) -> list[str]:
        """The kinds this runner claims."""
        return list(self.handlers)

    def start(self) -> JobRunner:
        """Start the worker threads and the heartbeat; returns self."""
        if self._workers:
            return self
        self._workers = [threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
                         for i in range(self.threads)]
        self._heart = threading.Thread(target=self._heartbeat, name=f"{self.name}-lease", daemon=True)
        # where the database tells of new jobs (PostgreSQL's NOTIFY), another process's job is claimed at once
        self._ear = threading.Thread(target=self.store.listen_jobs, args=(self._heard, self._stopping),
                                     name=f"{self.name}-listen", daemon=True)
        for thread in (*self._workers, self._heart, self._ear):
            thread.start()
        return self

    def _heard(self, kind: str) -> None:
        if kind in self.handlers:
            self.wake()

    def wake(self) -> None:
        """Look for a job now (this process queued one)."""
        with self._wake:
            self._woken += 1
            self._wake.notify()

    def future(self, key: str) -> Future[Any]:
        """A future of the job of ``key`` (see :meth:`Store.enqueue_job`) as *this* runner
        ends it: its handler's result, or the :class:`JobFailed` that dead-lettered it. Ask
        for it before queueing the job; a job another process runs never resolves it (it
        is forgotten after :data:`FUTURE_TTL_S`)."""
        now = time.monotonic()
        with self._lock:
            for stale in [k for k, (_, at) in self._futures.items() if now - at > FUTURE_TTL_S]:
                del self._futures[stale]
            if key not in self._futures:
                self._futures[key] = (Future(), now)
            return self._futures[key][0]

    def forget(self, key: str) -> None:
        """Drop the future of a key nobody waits for any more."""
        with self._lock:
            self._futures.pop(key, None)

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopping.is_set()

    def stop(self, *, wait: bool = True) -> None:
        """Claim nothing more; running jobs finish (or are released by their handler), and
        with ``wait`` this returns once they have."""
        self._stopping.set()
        with self._wake:
            self._wake.notify_all()
        if wait:
            for thread in self._workers:
                if thread is not threading.current_thread():
                    thread.join()
            for thread in (self._heart, self._ear):
                if thread is not None and thread is not threading.current_thread():
                    thread.join()

    # -- the threads ---------------------------------------------------------------------
    def _idle(self) -> None:
        with self._wake:
            if self._woken:
                self._woken -= 1
                return
            if not self._stopping.is_set():
                self._wake.wait(self.poll_s)

    def _work(self) -> None:
        run_initializer(self._initializer)
        while not self._stopping.is_set():
            try:
                job = self.store.claim_job(self.owner, kinds=self.kinds, lease_s=self.lease_s,
                                           per_workspace=self.per_workspace)
                if self._store_away:
                    self._store_away = False
                    log.warning("%s: the store is reachable again", self.name)
            except StoreUnavailable as exc:  # the database is away: look again later, say so once
                if not self._store_away:
                    self._store_away = True
                    log.warning("%s: %s; claiming again every %g s", self.name, exc, self.poll_s)
                job = None
            except Exception:  # noqa: BLE001 - look again later
                log.exception("claiming a job failed")
                job = None
            if job is None:
                self._idle()
                continue
            self._run(job)

    def _run(self, job: JobRecord) -> None:
        token = job.lease_token or ""
        lease = Lease(job, self._stopping)
        with self._lock:
            self._running[job.id] = (lease, token)
        outcome: Any = None
        failure: JobFailed | None = None
        try:
            handler = self.handlers[job.kind]
            outcome = contextvars.copy_context().run(handler.run_in_context, job, lease)
        except JobFailed as exc:
            failure = exc
        except StoreUnavailable as exc:  # nothing was written: the job runs again once the database is back
            log.warning("%s job %s: %s", job.kind, job.id, exc)
            failure = JobFailed(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - a worker never dies of a job
            log.exception("%s job %s failed unexpectedly", job.kind, job.id)
            failure = JobFailed("SERVER_ERROR", f"the job failed unexpectedly ({type(exc).__name__})")
        finally:
            with self._lock:
                self._running.pop(job.id, None)
        state: str | None = "done"
        try:
            if lease.lost.is_set():
                state = None
                log.info("%s job %s: the lease was lost, its outcome is not recorded", job.kind, job.id)
            elif failure is not None:
                state = self.store.fail_job(job.id, token, code=failure.code, message=failure.message,
                                            retry=failure.retry, backoff_s=self.backoff_s)
                log.info("%s job %s failed (%s: %s): %s", job.kind, job.id, failure.code, failure.message, state)
            elif outcome == RELEASE:
                state = None
                self.store.release_job(job.id, token)
            else:
                self.store.finish_job(job.id, token)
        except StoreUnavailable as exc:  # an outage, not a bug: the same, without a traceback
            log.warning("recording the end of %s job %s failed: %s", job.kind, job.id, exc)
            state = None  # as below: the job runs again once its lease expires
        except Exception:  # noqa: BLE001 - the lease expires and another worker takes the job
            log.exception("recording the end of %s job %s failed", job.kind, job.id)
            state = None  # not ended yet: the job runs again (or is dead-lettered) after its lease
        if state == "failed" and failure is not None:  # dead-lettered: what the job was doing settles
            self._dead(replace(job, state="failed", lease_token=None,
                               error={"code": failure.code, "message": failure.message}))
        if state in ("done", "failed") and job.key is not None:
            with self._lock:
                future = self._futures.pop(job.key, (None, 0.0))[0]
            if future is not None and not future.done():
                if failure is not None:
                    future.set_exception(failure)
                else:
                    future.set_result(outcome)

    def _heartbeat(self) -> None:
        """Renew the leases of running jobs every third of a lease and take back expired
        ones; once stopping, keep renewing until the running jobs have ended."""
        beat = self.lease_s / 3
        next_beat = time.monotonic() + beat
        while True:
            if self._stopping.is_set():
                time.sleep(min(0.2, beat))  # the running jobs are finishing: look often, renew on time
            else:
                self._stopping.wait(max(0.0, next_beat - time.monotonic()))
            with self._lock:
                running = list(self._running.items())
            if self._stopping.is_set() and not running:
                return
            if time.monotonic() < next_beat:
                continue
            next_beat = time.monotonic() + beat
            for job_id, (lease, token) in running:
                with _next_time(f"renewing the lease of job {job_id} failed"):
                    if not self.store.renew_job(job_id, token, lease_s=self.lease_s):
                        lease.lost.set()
            if not self._stopping.is_set():
                self.reap()
                if time.monotonic() >= self._next_prune:
                    self._next_prune = time.monotonic() + PRUNE_EVERY_S
                    with _next_time("deleting old done jobs failed"):
                        self.store.prune_jobs(before=time.time() - KEEP_DONE_S)
                if self._housekeeping is not None and time.monotonic() >= self._next_housekeeping:
                    self._next_housekeeping = time.monotonic() + self.housekeeping_s
                    with _next_time(f"{self.name}: housekeeping failed"):
                        self._housekeeping()

    def reap(self) -> int:
        """Take back the jobs whose lease expired (their worker died); hand those out of
        attempts to their kind's :meth:`Handler.dead`. Returns how many were dead-lettered."""
        dead: list[JobRecord] = []
        with _next_time("taking back expired jobs failed"):
            dead = self.store.expire_jobs()
        for job in dead:
            self._dead(job)
        return len(dead)

    def _dead(self, job: JobRecord) -> None:
        """Hand a dead-lettered job to its kind's :meth:`Handler.dead` (what it raises is logged)."""
        handler = self.handlers.get(job.kind)
        try:
            (handler or Handler()).dead(job)
        except Exception:  # noqa: BLE001
            log.exception("settling dead-lettered %s job %s failed", job.kind, job.id)


@contextmanager
def _next_time(what: str) -> Iterator[None]:
    """Run the block of a heartbeat's chore that is tried again at a later beat: what it
    raises is logged as ``what`` — :class:`~citewell.errors.StoreUnavailable` as a one-line
    warning (an outage, not a bug), anything else with its traceback — and not raised."""
    try:
        yield
    except StoreUnavailable as exc:
        log.warning("%s: %s", what, exc)
    except Exception:  # noqa: BLE001 - the next beat tries again
        log.exception(what)


def wait_for_jobs(store: JobStore, *, kinds: Sequence[str], workspace_id: str | None = None, timeout_s: float = 300.0,
                  poll_s: float = 0.05) -> bool:
    """Block until no job of ``kinds`` (of ``workspace_id``) is queued or running; False
    when ``timeout_s`` passed first (for tests and orderly stops)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not store.jobs(workspace_id=workspace_id, states=("queued", "running"), kinds=kinds, limit=1):
            return True
        time.sleep(poll_s)
    return False


__all__ = ["LEASE_S", "POLL_S", "RELEASE", "Handler", "JobFailed", "JobRunner", "Lease", "run_initializer",
           "wait_for_jobs", "worker_id"]
