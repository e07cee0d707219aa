"""Baseline: schema v10, the last schema of citewell's own migrations (v1–v10).

A store made from scratch gets its tables from :mod:`citewell.store.tables` and is stamped
at the newest revision; a SQLite store of an older schema is brought to v10 by its own
steps (:mod:`citewell.store.sqlite.schema`) and stamped here. So this revision changes
nothing: later revisions start from it.

Revision ID: v10
Revises: none
"""

from __future__ import annotations

revision = "v10"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing: the baseline is the schema the store already has."""


def downgrade() -> None:
    """Stores are never downgraded (an older citewell refuses a newer store)."""
    raise NotImplementedError("citewell stores are not downgraded")
