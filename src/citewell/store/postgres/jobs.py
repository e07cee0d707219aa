"""PostgreSQL's claim of jobs (a dialect piece of the jobs concern, :mod:`citewell.store.jobs`).

A claim selects its lane and its job ``FOR UPDATE SKIP LOCKED``: concurrent workers lock
different rows, a row another claim holds is skipped rather than waited for, and no job
is claimed twice (the claim's ``UPDATE`` runs in the same transaction, under the lock).

Queueing a job also sends ``NOTIFY citewell_jobs`` with its kind (delivered when the
queueing transaction commits); workers ``LISTEN`` on a connection of their own
(:meth:`PostgresJobs.listen_jobs`), so a job queued by another replica is claimed at once
rather than at the next poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..jobs import Jobs

log = logging.getLogger("citewell.jobs")

#: the notification channel of queued jobs
CHANNEL = "citewell_jobs"


class PostgresJobs(Jobs):
    """The jobs concern with PostgreSQL's row locks and notifications."""

    url: str
    _LOCK_CLAIMED = "FOR UPDATE SKIP LOCKED"
    _NOTIFY_JOB = f"SELECT pg_notify('{CHANNEL}', ?)"

    def listen_jobs(self, on_job: Callable[[str], None], stop: threading.Event) -> bool:
        """``LISTEN citewell_jobs`` on a connection of its own and call ``on_job(kind)`` for
        each notification until ``stop`` is set (looking at ``stop`` every second); a lost
        connection is opened again after a second (one warning when it is lost, one when it
        is back). The connection is outside the store's pool: one per job runner. Returns
        True once stopped."""
        import psycopg

        from .connection import connect_kwargs

        failing = False
        while not stop.is_set():
            try:
                with psycopg.connect(self.url, **connect_kwargs(self.url)) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    if failing:
                        log.warning("listening for jobs again")
                        failing = False
                    while not stop.is_set():
                        for note in conn.notifies(timeout=1.0):
                            on_job(note.payload)
            except psycopg.Error as exc:
                if not failing:  # one line per outage, not one a second
                    log.warning("listening for jobs failed (%s); polling until the connection is back",
                                str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
                    failing = True
                stop.wait(1.0)
        return True


__all__ = ["CHANNEL", "PostgresJobs"]
