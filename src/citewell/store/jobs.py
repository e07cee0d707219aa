"""Jobs in the database (schema v12): work off the request path that any worker process
sharing the store may claim — extraction and embedding of uploads, answering turns.

A job is ``(kind, workspace, payload)`` with a state:

- ``queued``: waiting until ``run_after`` (seconds since the epoch; a retry waits out
  its backoff);
- ``running``: claimed by one worker, which holds a **lease** until ``lease_expires`` and
  renews it while it works (:meth:`Jobs.renew_job`). A worker that dies stops renewing:
  once the lease has expired :meth:`Jobs.expire_jobs` puts the job back in the queue (or,
  out of attempts, dead-letters it), so another worker takes it again;
- ``done``;
- ``failed``: the dead letter, with the error's ``code`` and ``message`` — a job that
  failed ``max_attempts`` times (each failure before that is retried after
  ``backoff_s × 2^(attempt−1)`` seconds), or one whose failure is not worth retrying.

**Claims are fair between workspaces** (the rule of :mod:`citewell.jobs.fairness`, now
across processes): every (workspace, kind) has a lane in ``job_lanes`` recording when it
was last served; a claim takes the oldest due job of the lane served longest ago among
those with a job due, skipping workspaces that already run ``per_workspace`` jobs of the
claimed kinds. One workspace's 150 uploads therefore delay another's single upload by at
most the jobs already running, never by the queue.

**Claims never double-claim.** Every change of a job happens in one write transaction of
the dialect: on SQLite ``BEGIN IMMEDIATE`` takes the database's write lock, so claims are
serialised; on PostgreSQL the lane and the job are selected ``FOR UPDATE SKIP LOCKED``
(the dialect's :attr:`Jobs._LOCK_CLAIMED`), so concurrent claimers lock different rows
and never wait for each other. A lease carries a token of its claim: renewing,
finishing, failing or releasing a job whose lease went to another claim changes nothing.

A ``key`` names a job that must not exist twice while queued or running (the extraction
of one upload): :meth:`Jobs.enqueue_job` then returns the job already there. Times come
from the calling process's clock (``now`` parameters, for tests); the machines of one
deployment are assumed to keep their clocks in sync to well under a lease.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from ..errors import NotFoundError, UsageError
from .sqlbase import SQLBase

#: The states of a job, in the order a job passes them (``failed`` = dead letter).
JOB_STATES = ("queued", "running", "done", "failed")
#: The code of a job whose worker stopped renewing its lease once too often.
LEASE_EXPIRED = "LEASE_EXPIRED"
_COLUMNS = ("id, kind, workspace_id, payload, state, key, attempts, max_attempts, run_after, lease_owner, "
            "lease_token, lease_expires, error_code, error_message, created_at, updated_at")


@dataclass(frozen=True)
class JobRecord:
    """One job as stored (see the module docstring). Times are seconds since the epoch;
    ``error`` is ``{code, message}`` of the last failure (None when none); ``lease_token``
    identifies the claim holding it (pass it back to renew, finish, fail or release)."""

    id: str
    kind: str
    workspace_id: str
    payload: dict[str, Any]
    state: str
    key: str | None
    attempts: int
    max_attempts: int
    run_after: float
    lease_owner: str | None
    lease_token: str | None
    lease_expires: float | None
    error: dict[str, str] | None
    created_at: float
    updated_at: float


def _job(row: Any) -> JobRecord:
    error = {"code": row["error_code"], "message": row["error_message"] or ""} if row["error_code"] else None
    return JobRecord(id=row["id"], kind=row["kind"], workspace_id=row["workspace_id"],
                     payload=json.loads(row["payload"]), state=row["state"], key=row["key"],
                     attempts=int(row["attempts"]), max_attempts=int(row["max_attempts"]),
                     run_after=float(row["run_after"]), lease_owner=row["lease_owner"],
                     lease_token=row["lease_token"],
                     lease_expires=float(row["lease_expires"]) if row["lease_expires"] is not None else None,
                     error=error, created_at=float(row["created_at"]), updated_at=float(row["updated_at"]))


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


class JobStore(Protocol):
    """Jobs: queue, claim, lease, retry and dead letter (the jobs concern of
    :class:`~citewell.store.base.Store`; the rules are the module docstring's). A job is a
    :class:`JobRecord`; an unknown id raises :class:`~citewell.errors.NotFoundError`, a claim
    ``token`` that no longer holds its job makes a method return False or None."""

    # -- jobs (citewell.store.jobs: the rules of queue, claim, lease and dead letter) ----
    # Times (``now``, ``before``, a job's times) are seconds since the epoch; ``now`` None is
    # the clock of this process. Each method is :class:`citewell.store.jobs.Jobs`'s.
    def enqueue_job(self, workspace_id: str, kind: str, payload: dict[str, Any], *, key: str | None = None,
                    max_attempts: int = 3, delay_s: float = 0.0, now: float | None = None) -> tuple[JobRecord, bool]:
        """Queue a job of ``kind`` with JSON-able ``payload``, due after ``delay_s`` seconds;
        ``(job, created)`` (with ``key``: the queued or running job of that key, False).
        ``ValueError`` for ``max_attempts`` < 1."""
        ...

    def enqueue_pending_uploads(self, kind: str) -> int:
        """Queue a ``kind`` job (key ``kind:resource_id``) for every upload still processing
        that has none queued or running; the upload's status is read by the insert itself,
        so one that turns ready meanwhile gets none. Returns how many were queued."""
        ...

    def claim_job(self, owner: str, *, kinds: Sequence[str], lease_s: float, per_workspace: int | None = None,
                  now: float | None = None) -> JobRecord | None:
        """Claim the next due job of ``kinds`` for ``owner``, fairly between workspaces (at most
        ``per_workspace`` running per workspace under this owner), with a lease of
        ``lease_s`` seconds; None when none is due."""
        ...

    def renew_job(self, job_id: str, token: str, *, lease_s: float, now: float | None = None) -> bool:
        """Extend the lease of the claim ``token`` to ``now + lease_s`` (seconds); False when
        it no longer holds the job."""
        ...

    def finish_job(self, job_id: str, token: str, *, now: float | None = None) -> bool:
        """Mark the job of the claim ``token`` done; False when it no longer holds it."""
        ...

    def fail_job(self, job_id: str, token: str, *, code: str, message: str, retry: bool = True,
                 backoff_s: float = 5.0, now: float | None = None) -> str | None:
        """Record a failure ``{code, message}``: ``queued`` again after ``backoff_s × 2^(attempts−1)``
        seconds while attempts are left and ``retry``, else ``failed`` (dead letter); the new
        state, None when the claim ``token`` no longer holds the job."""
        ...

    def release_job(self, job_id: str, token: str, *, now: float | None = None) -> bool:
        """Put the job of the claim ``token`` back in the queue without counting the attempt."""
        ...

    def expire_jobs(self, *, now: float | None = None) -> list[JobRecord]:
        """Requeue (or dead-letter) running jobs whose lease expired; returns those dead-lettered."""
        ...

    def requeue_job(self, job_id: str, *, now: float | None = None) -> JobRecord:
        """Queue a dead-lettered (``failed``) job again with all its attempts.
        ``NotFoundError`` for an unknown id, ``UsageError`` for a job that is not ``failed``
        or whose ``key`` is queued or running again."""
        ...

    def job(self, job_id: str) -> JobRecord:
        """One job; ``NotFoundError`` for an unknown id."""
        ...

    def jobs(self, *, workspace_id: str | None = None, states: Sequence[str] | None = None,
             kinds: Sequence[str] | None = None, key: str | None = None, limit: int = 100) -> list[JobRecord]:
        """Jobs, oldest first, of one workspace, states, kinds or ``key`` when given; at most ``limit``."""
        ...

    def prune_jobs(self, *, before: float) -> int:
        """Delete ``done`` jobs last changed before ``before`` (dead letters stay); how many."""
        ...

    def listen_jobs(self, on_job: Callable[[str], None], stop: Any) -> bool:
        """Call ``on_job(kind)`` for jobs queued by any process until ``stop`` (a
        ``threading.Event``) is set; False at once where the database cannot tell."""
        ...


class Jobs(SQLBase):
    """The jobs concern: queue, claim, lease, retry and dead-letter (module docstring)."""

    #: what locks a selected row for the claiming transaction (dialect): nothing on SQLite
    #: (this class as it is), whose ``BEGIN IMMEDIATE`` serialises writers; ``FOR UPDATE
    #: SKIP LOCKED`` on PostgreSQL (:class:`~citewell.store.postgres.jobs.PostgresJobs`)
    _LOCK_CLAIMED = ""
    #: the statement that tells listening workers of a new job (parameter: its kind), run
    #: in the queueing transaction (dialect; None: workers only poll)
    _NOTIFY_JOB: str | None = None

    def listen_jobs(self, on_job: Callable[[str], None], stop: threading.Event) -> bool:
        """Call ``on_job(kind)`` for every job queued by any process, until ``stop`` is set
        (blocks; run it on a thread of its own). False at once where the database cannot
        tell (SQLite: workers poll)."""
        return False

    def enqueue_job(self, workspace_id: str, kind: str, payload: dict[str, Any], *, key: str | None = None,
                    max_attempts: int = 3, delay_s: float = 0.0, now: float | None = None) -> tuple[JobRecord, bool]:
        """Queue a job of ``kind`` for ``workspace_id`` with JSON-able ``payload``, due
        after ``delay_s`` seconds, tried at most ``max_attempts`` times (at least 1).
        Returns ``(job, created)``: with ``key`` and a job of that key already queued or
        running, that job and False. ``ValueError`` for ``max_attempts < 1``."""
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        at = time.time() if now is None else now
        with self._write() as conn:
            job_id = self._insert_job(conn, workspace_id, kind, payload, key=key, max_attempts=max_attempts,
                                      run_after=at + max(0.0, delay_s), at=at)
            if job_id is not None:
                row = conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
            else:
                row = conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE key = ? AND state IN ('queued', 'running')",
                                   (key,)).fetchone()
        return _job(row), job_id is not None

    def enqueue_pending_uploads(self, kind: str) -> int:
        """Queue a ``kind`` job (key ``kind:resource_id``, payload ``{"resource_id": …}``,
        3 attempts) for every upload still processing that has none queued or running.
        Each insert reads the upload's status itself (``INSERT … SELECT … WHERE EXISTS``), so
        an upload whose running job turns it ready between the listing and the insert gets
        no second job (the job, done by then, no longer holds the key). Returns how many
        were queued."""
        queued = 0
        for workspace_id, resource_id in self.pending_uploads():  # type: ignore[attr-defined]
            at = time.time()
            with self._write() as conn:
                queued += self._insert_job(
                    conn, workspace_id, kind, {"resource_id": resource_id}, key=f"{kind}:{resource_id}",
                    max_attempts=3, run_after=at, at=at,
                    only_if=("SELECT 1 FROM resources WHERE id = ? AND status = 'processing'", (resource_id,))) \
                    is not None
        return queued

    def _insert_job(self, conn: Any, workspace_id: str, kind: str, payload: dict[str, Any], *, key: str | None,
                    max_attempts: int, run_after: float, at: float,
                    only_if: tuple[str, tuple[Any, ...]] | None = None) -> str | None:
        """Insert one queued job in the open write transaction ``conn`` (its workspace's lane
        too, and the notification where the database has one); its id, or None when a job
        of ``key`` is queued or running or the ``only_if`` query (SQL, parameters) finds no
        row. Times are seconds since the epoch."""
        job_id = str(uuid.uuid4())
        guard, params = only_if if only_if is not None else ("SELECT 1", ())
        changed = conn.total_changes
        conn.execute("INSERT INTO jobs (id, kind, workspace_id, payload, state, key, attempts, max_attempts, "
                     "run_after, created_at, updated_at) SELECT ?, ?, ?, ?, 'queued', ?, 0, ?, ?, ?, ? "
                     f"WHERE EXISTS ({guard}) ON CONFLICT DO NOTHING",
                     (job_id, kind, workspace_id, json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
                      key, max_attempts, run_after, at, at, *params))
        if conn.total_changes == changed:
            return None
        conn.execute("INSERT INTO job_lanes (workspace_id, kind, served_at) VALUES (?, ?, 0) "
                     "ON CONFLICT DO NOTHING", (workspace_id, kind))
        if self._NOTIFY_JOB is not None:
            conn.execute(self._NOTIFY_JOB, (kind,))
        return job_id

    def claim_job(self, owner: str, *, kinds: Sequence[str], lease_s: float, per_workspace: int | None = None,
                  now: float | None = None) -> JobRecord | None:
        """Claim the next due job of one of ``kinds`` for worker ``owner`` (a label of the
        claiming process, e.g. :func:`citewell.jobs.runner.worker_id`), fairly between
        workspaces (module docstring): it becomes ``running`` with a new lease of
        ``lease_s`` seconds and one more attempt. ``per_workspace``: at most that many jobs
        of these kinds of one workspace run under this ``owner`` at once (each process
        keeps threads for the other workspaces; other processes are not limited by it).
        None when no job is due (or every workspace with one is at its cap, or, on
        PostgreSQL, the due ones are being claimed by another worker)."""
        if not kinds:
            return None
        at = time.time() if now is None else now
        kinds = list(kinds)
        cap = ""
        params: list[Any] = [*kinds, at]
        if per_workspace is not None:
            cap = (f"AND (SELECT COUNT(*) FROM jobs r WHERE r.workspace_id = l.workspace_id AND r.state = 'running' "
                   f"AND r.lease_owner = ? AND r.kind IN ({_marks(kinds)}) AND r.lease_expires > ?) < ? ")
            params += [owner, *kinds, at, per_workspace]
        due = self._conn().execute(f"SELECT 1 FROM jobs WHERE state = 'queued' AND kind IN ({_marks(kinds)}) "
                                   "AND run_after <= ? LIMIT 1", [*kinds, at]).fetchone()
        if due is None:  # the common answer of an idle worker, without taking the write lock
            return None
        with self._write() as conn:
            lane = conn.execute(
                f"SELECT l.workspace_id, l.kind FROM job_lanes l WHERE l.kind IN ({_marks(kinds)}) "
                "AND EXISTS (SELECT 1 FROM jobs j WHERE j.workspace_id = l.workspace_id AND j.kind = l.kind "
                f"AND j.state = 'queued' AND j.run_after <= ?) {cap}"
                f"ORDER BY l.served_at, l.workspace_id, l.kind LIMIT 1 {self._LOCK_CLAIMED}", params).fetchone()
            if lane is None:
                return None
            row = conn.execute(
                "SELECT id FROM jobs WHERE workspace_id = ? AND kind = ? AND state = 'queued' AND run_after <= ? "
                f"ORDER BY run_after, seq LIMIT 1 {self._LOCK_CLAIMED}", (lane[0], lane[1], at)).fetchone()
            if row is None:
                return None
            token = uuid.uuid4().hex
            conn.execute("UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = ?, "
                         "lease_token = ?, lease_expires = ?, updated_at = ? WHERE id = ?",
                         (owner, token, at + lease_s, at, row[0]))
            conn.execute("UPDATE job_lanes SET served_at = ? WHERE workspace_id = ? AND kind = ?",
                         (at, lane[0], lane[1]))
            return _job(conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (row[0],)).fetchone())

    def renew_job(self, job_id: str, token: str, *, lease_s: float, now: float | None = None) -> bool:
        """Extend the lease of a running job held by the claim ``token`` to ``now + lease_s``;
        False when that claim no longer holds it (expired and taken again, or settled)."""
        at = time.time() if now is None else now
        with self._write() as conn:
            return conn.execute("UPDATE jobs SET lease_expires = ?, updated_at = ? WHERE id = ? AND lease_token = ? "
                                "AND state = 'running'", (at + lease_s, at, job_id, token)).rowcount == 1

    def finish_job(self, job_id: str, token: str, *, now: float | None = None) -> bool:
        """Mark a running job of the claim ``token`` ``done``; False when that claim no longer holds it."""
        at = time.time() if now is None else now
        with self._write() as conn:
            return conn.execute("UPDATE jobs SET state = 'done', lease_expires = NULL, updated_at = ? WHERE id = ? "
                                "AND lease_token = ? AND state = 'running'", (at, job_id, token)).rowcount == 1

    def fail_job(self, job_id: str, token: str, *, code: str, message: str, retry: bool = True,
                 backoff_s: float = 5.0, now: float | None = None) -> str | None:
        """Record a failure of a running job of the claim ``token``: queued again after
        ``backoff_s × 2^(attempts−1)`` seconds while it has attempts left and ``retry``,
        else dead-lettered (``failed``) with ``{code, message}``. Returns the new state;
        None when that claim no longer holds the job (nothing written)."""
        at = time.time() if now is None else now
        with self._write() as conn:
            row = conn.execute("SELECT attempts, max_attempts FROM jobs WHERE id = ? AND lease_token = ? AND "
                               "state = 'running'", (job_id, token)).fetchone()
            if row is None:
                return None
            again = retry and row[0] < row[1]
            state = "queued" if again else "failed"
            delay = backoff_s * 2 ** max(0, row[0] - 1) if again else 0.0
            conn.execute("UPDATE jobs SET state = ?, run_after = ?, lease_owner = NULL, lease_token = NULL, "
                         "lease_expires = NULL, error_code = ?, error_message = ?, updated_at = ? WHERE id = ?",
                         (state, at + delay, code, message, at, job_id))
            return state

    def release_job(self, job_id: str, token: str, *, now: float | None = None) -> bool:
        """Put a running job of the claim ``token`` back in the queue, due at once, without
        counting the attempt (a worker stopping before it could do the work); False when
        that claim no longer holds it."""
        at = time.time() if now is None else now
        with self._write() as conn:
            return conn.execute("UPDATE jobs SET state = 'queued', attempts = attempts - 1, run_after = ?, "
                                "lease_owner = NULL, lease_token = NULL, lease_expires = NULL, updated_at = ? "
                                "WHERE id = ? AND lease_token = ? AND state = 'running'",
                                (at, at, job_id, token)).rowcount == 1

    def expire_jobs(self, *, now: float | None = None) -> list[JobRecord]:
        """Take back every running job whose lease expired before ``now`` (its worker
        died): queued again, due at once, while it has attempts left, else dead-lettered
        with ``LEASE_EXPIRED``. Returns the jobs dead-lettered by this call (their kinds
        may need to settle what the job was doing: a turn fails)."""
        at = time.time() if now is None else now
        if self._conn().execute("SELECT 1 FROM jobs WHERE state = 'running' AND lease_expires < ? LIMIT 1",
                                (at,)).fetchone() is None:
            return []
        with self._write() as conn:
            rows = conn.execute(f"SELECT id, attempts, max_attempts, lease_owner FROM jobs WHERE state = 'running' "
                                f"AND lease_expires < ? {self._LOCK_CLAIMED}", (at,)).fetchall()
            dead = [row[0] for row in rows if row[1] >= row[2]]
            for row in rows:
                final = row[1] >= row[2]
                conn.execute("UPDATE jobs SET state = ?, run_after = ?, lease_owner = NULL, lease_token = NULL, "
                             "lease_expires = NULL, error_code = ?, error_message = ?, updated_at = ? WHERE id = ?",
                             ("failed" if final else "queued", at, LEASE_EXPIRED,
                              f"the worker {row[3]} stopped renewing its lease", at, row[0]))
            if not dead:
                return []
            return [_job(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id IN ({_marks(dead)}) "
                                                  "ORDER BY seq", dead)]

    def requeue_job(self, job_id: str, *, now: float | None = None) -> JobRecord:
        """Queue a dead-lettered job again, due at once, with all its attempts (an operator
        fixed what failed it); its last error stays until it runs. ``NotFoundError`` for an
        unknown id, ``UsageError`` for a job that is not ``failed`` or whose ``key`` is
        queued or running again."""
        at = time.time() if now is None else now
        with self._write() as conn:
            row = conn.execute("SELECT state, key FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no job {job_id}")
            if row[0] != "failed":
                raise UsageError(f"job {job_id} is {row[0]}: only a failed job is queued again")
            if row[1] is not None and conn.execute("SELECT 1 FROM jobs WHERE key = ? AND state IN ('queued', "
                                                   "'running')", (row[1],)).fetchone() is not None:
                raise UsageError(f"job {job_id}: another job of its key {row[1]} is queued or running")
            conn.execute("UPDATE jobs SET state = 'queued', attempts = 0, run_after = ?, updated_at = ? WHERE id = ?",
                         (at, at, job_id))
            return _job(conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone())

    def job(self, job_id: str) -> JobRecord:
        """One job; ``NotFoundError`` for an unknown id."""
        row = self._conn().execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no job {job_id}")
        return _job(row)

    def jobs(self, *, workspace_id: str | None = None, states: Sequence[str] | None = None,
             kinds: Sequence[str] | None = None, key: str | None = None, limit: int = 100) -> list[JobRecord]:
        """Jobs, oldest first, optionally of one workspace, states, kinds or ``key``; at most ``limit``."""
        where, params = [], []
        if workspace_id is not None:
            where.append("workspace_id = ?")
            params.append(workspace_id)
        for column, values in (("state", states), ("kind", kinds)):
            if values is not None:
                where.append(f"{column} IN ({_marks(values) or 'NULL'})")
                params += list(values)
        if key is not None:
            where.append("key = ?")
            params.append(key)
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        rows = self._conn().execute(f"SELECT {_COLUMNS} FROM jobs {clause}ORDER BY seq LIMIT ?", [*params, limit])
        return [_job(row) for row in rows]

    def prune_jobs(self, *, before: float) -> int:
        """Delete the ``done`` jobs last changed before ``before`` (dead letters stay); how many."""
        with self._write() as conn:
            return conn.execute("DELETE FROM jobs WHERE state = 'done' AND updated_at < ?", (before,)).rowcount


__all__ = ["JOB_STATES", "LEASE_EXPIRED", "JobRecord", "Jobs"]
