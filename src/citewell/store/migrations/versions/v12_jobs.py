"""v12: jobs in the database (issue 18): table ``jobs`` (work claimed by workers of any
process, with attempts, a lease and a dead-letter state) and ``job_lanes`` (when each
workspace's jobs of a kind were last served, for fair claims). See
:mod:`citewell.store.jobs`.

Revision ID: v12
Revises: v11
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v12"
down_revision = "v11"
branch_labels = None
depends_on = None

_ACTIVE = "state IN ('queued', 'running')"


def upgrade() -> None:
    """Create ``jobs`` and ``job_lanes`` with their indexes (as :mod:`citewell.store.tables` declares them)."""
    op.create_table(
        "jobs",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("workspace_id", sa.Text, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("key", sa.Text),
        sa.Column("attempts", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("max_attempts", sa.Integer, nullable=False),
        sa.Column("run_after", sa.Double, nullable=False),
        sa.Column("lease_owner", sa.Text),
        sa.Column("lease_token", sa.Text),
        sa.Column("lease_expires", sa.Double),
        sa.Column("error_code", sa.Text),
        sa.Column("error_message", sa.Text),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        sqlite_autoincrement=True)
    op.create_index("jobs_queued", "jobs", ["workspace_id", "kind", "state", "run_after"])
    op.create_index("jobs_running", "jobs", ["state", "lease_expires"])
    op.create_index("jobs_by_key", "jobs", ["key"], unique=True, sqlite_where=sa.text(_ACTIVE),
                    postgresql_where=sa.text(_ACTIVE))
    op.create_table(
        "job_lanes",
        sa.Column("workspace_id", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("served_at", sa.Double, nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("workspace_id", "kind"))


def downgrade() -> None:
    """Stores are never downgraded (an older citewell refuses a newer store)."""
    raise NotImplementedError("citewell stores are not downgraded")
