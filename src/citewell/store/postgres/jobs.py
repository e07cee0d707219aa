"""PostgreSQL's claim of jobs (a dialect piece of the jobs concern, :mod:`citewell.store.jobs`).

A claim selects its lane and its job ``FOR UPDATE SKIP LOCKED``: concurrent workers lock
different rows, a row another claim holds is skipped rather than waited for, and no job
is claimed twice (the claim's ``UPDATE`` runs in the same transaction, under the lock).
"""

from __future__ import annotations

from ..jobs import Jobs


class PostgresJobs(Jobs):
    """The jobs concern with PostgreSQL's row locks."""

    _LOCK_CLAIMED = "FOR UPDATE SKIP LOCKED"


__all__ = ["PostgresJobs"]
