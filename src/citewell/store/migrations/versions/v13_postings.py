"""v13: PostgreSQL's lexical postings carry their counts (issue 18, BM25 at a million
chunks). Each row of ``lexical_postings`` gains ``freq`` (its number of positions) and
``doclen`` (its chunk row's tokens, as ``lexical_docs`` holds them), and the primary key
``(term, rowid, col)`` includes both, so that ranking a term reads one range of that
index and no table page per posting (see :mod:`citewell.store.postgres.lexical`).
Nothing changes on SQLite, whose lexical index is FTS5's.

Revision ID: v13
Revises: v12
"""

from __future__ import annotations

from alembic import op

revision = "v13"
down_revision = "v12"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add and fill ``freq`` and ``doclen``, then rebuild the primary key with them included."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql" or bind.exec_driver_sql(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'lexical_postings' AND column_name = 'freq'").fetchone():
        return  # nothing to do on SQLite, nor for postings made with their counts
    for ddl in (
        "ALTER TABLE lexical_postings ADD COLUMN freq INTEGER, ADD COLUMN doclen INTEGER",
        "UPDATE lexical_postings p SET freq = cardinality(p.positions), doclen = d.tokens "
        "FROM lexical_docs d WHERE d.rowid = p.rowid",
        # a posting without its row's token count was never ranked (the row is not indexed)
        "DELETE FROM lexical_postings WHERE doclen IS NULL",
        "ALTER TABLE lexical_postings ALTER COLUMN freq SET NOT NULL, ALTER COLUMN doclen SET NOT NULL",
        "ALTER TABLE lexical_postings DROP CONSTRAINT lexical_postings_pkey, "
        "ADD PRIMARY KEY (term, rowid, col) INCLUDE (freq, doclen)",
    ):
        bind.exec_driver_sql(ddl)


def downgrade() -> None:
    """Stores are never downgraded (an older citewell refuses a newer store)."""
    raise NotImplementedError("citewell stores are not downgraded")
