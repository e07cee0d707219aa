"""v11: the PostgreSQL store's vector index (pgvector), issue 18.

On PostgreSQL: the ``vector`` extension, column ``chunk_vectors.embedding`` (pgvector's
``vector``) filled from the float32 bytes already stored, and one HNSW index per
embedding model and dimension found (see :mod:`citewell.store.postgres.vectors`). On
SQLite nothing changes: its vector index ranks the bytes.

Revision ID: v11
Revises: v10
"""

from __future__ import annotations

revision = "v11"
down_revision = "v10"
branch_labels = None
depends_on = None

#: vectors converted per statement when filling the new column
BATCH = 2000


def upgrade() -> None:
    """Add and fill the vector column and its indexes (PostgreSQL only)."""
    from alembic import op

    from citewell.store.postgres.vectors import VECTOR_DDL, index_ddl, vector_text

    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for ddl in VECTOR_DDL:
        bind.exec_driver_sql(ddl)
    while True:
        rows = bind.exec_driver_sql(
            "SELECT workspace_id, text_hash, vector FROM chunk_vectors WHERE embedding IS NULL LIMIT %(n)s",
            {"n": BATCH}).fetchall()
        if not rows:
            break
        bind.exec_driver_sql(
            "UPDATE chunk_vectors SET embedding = CAST(%(e)s AS vector) WHERE workspace_id = %(w)s AND text_hash = %(h)s",
            [{"e": vector_text(bytes(blob)), "w": ws, "h": h} for ws, h, blob in rows])
    for model, dim in bind.exec_driver_sql("SELECT DISTINCT model, dim FROM chunk_vectors").fetchall():
        bind.exec_driver_sql(index_ddl(model, dim).replace("%", "%%"))


def downgrade() -> None:
    """Stores are never downgraded (an older citewell refuses a newer store)."""
    raise NotImplementedError("citewell stores are not downgraded")
