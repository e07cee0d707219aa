"""SQLite's claim of jobs (a dialect piece of the jobs concern, :mod:`citewell.store.jobs`).

Every write of the store is one ``BEGIN IMMEDIATE`` transaction, which takes the
database's write lock before its first statement: claims are serialised, and a claim's
``SELECT`` and ``UPDATE`` see the same rows, so no job is claimed twice (nothing to lock
row by row).
"""

from __future__ import annotations

from ..jobs import Jobs


class SQLiteJobs(Jobs):
    """The jobs concern under SQLite's database-wide write lock."""

    _LOCK_CLAIMED = ""


__all__ = ["SQLiteJobs"]
