"""The store's tables in SQLAlchemy Core: one schema for every database.

These are the tables of schema v10 (the Alembic baseline, :mod:`citewell.store.migrate`)
and of the revisions after it (v12: jobs),
column for column in the order an upgraded SQLite store has them (rows are inserted
positionally in places), with the same types, defaults and indexes; only the primary keys
of a new store are also ``NOT NULL`` (SQLite lets a non-integer primary key be NULL; no
citewell ever wrote one). Times are ISO 8601 text (the jobs': seconds since the epoch), JSON documents are text, flags are
integers 0/1: what SQLite stored since v1, kept so that one store file moves between
versions unchanged.

What is not here belongs to a dialect: the lexical index (FTS5 table ``chunk_fts`` on
SQLite, :mod:`citewell.store.sqlite.lexical`) and the vector index's own structures.
``chunks.rowid`` is SQLite's rowid (an ``INTEGER PRIMARY KEY`` is its alias); on other
databases an identity column of the same name.
"""

from __future__ import annotations

from sqlalchemy import (BigInteger, Column, Double, ForeignKey, Index, Integer, LargeBinary, MetaData,
                        PrimaryKeyConstraint, Table, Text, UniqueConstraint, text)

metadata = MetaData()

#: 64-bit integers (byte sizes, nanosecond times, row ids): ``INTEGER`` on SQLite (already
#: 64-bit, and the one spelling that makes a primary key the rowid), ``BIGINT`` elsewhere
BigInt = BigInteger().with_variant(Integer(), "sqlite")

meta = Table(
    "meta", metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False))

workspaces = Table(
    "workspaces", metadata,
    Column("id", Text, primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("created_at", Text, nullable=False))

resources = Table(
    "resources", metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("sha256", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("file_name", Text, nullable=False),
    Column("kind", Text),
    Column("media_type", Text),
    Column("size_bytes", BigInt, nullable=False),
    Column("blob_key", Text),
    Column("status", Text, nullable=False),
    Column("error_code", Text),
    Column("error_message", Text),
    Column("warnings", Text, nullable=False, server_default="[]"),
    Column("metadata", Text, nullable=False, server_default="{}"),
    Column("custom_metadata", Text),
    Column("extractor_version", Text),
    Column("chunk_count", Integer, nullable=False, server_default=text("0")),
    Column("extracted_text", Text),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    UniqueConstraint("workspace_id", "sha256"),
    Index("resources_by_status", "status"))

facets = Table(
    "facets", metadata,
    Column("resource_id", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("value", Text, nullable=False),
    Index("facets_by_resource", "resource_id", "key", "value"))

chunks = Table(
    "chunks", metadata,
    Column("rowid", BigInt, primary_key=True, autoincrement=True),
    Column("id", Text, nullable=False, unique=True),
    Column("workspace_id", Text, nullable=False),
    Column("resource_id", Text, nullable=False),
    Column("chunk_index", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("text_type", Text, nullable=False),
    Column("char_start", Integer, nullable=False),
    Column("char_end", Integer, nullable=False),
    Column("metadata", Text, nullable=False),
    Column("post_source", Text),
    Column("created_at", Text),
    Column("version", Text),  # v3: the extractor version that made the chunk
    Column("text_hash", Text),  # v7: the key of its vector (sha256 of the text)
    Column("post_id", Text),  # v9: the post's id, beside post_source
    Index("chunks_by_resource", "resource_id", "chunk_index"),
    Index("chunks_by_text_hash", "text_hash"),
    Index("chunks_by_post", "resource_id", "post_source", "post_id"))

mentions = Table(
    "mentions", metadata,
    Column("workspace_id", Text, nullable=False),
    Column("dataset_id", Text, nullable=False),
    Column("source_key", Text, nullable=False),
    Column("id", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("url", Text),
    Column("author", Text),
    Column("created_at", Text),
    Column("chunk_id", Text, nullable=False),
    Column("fields", Text, nullable=False),
    PrimaryKeyConstraint("workspace_id", "dataset_id", "source_key", "id"),
    Index("mentions_by_post", "workspace_id", "source_key", "id"),
    Index("mentions_by_dataset", "dataset_id"))

files = Table(
    "files", metadata,
    Column("workspace_id", Text, nullable=False),
    Column("path", Text, nullable=False),
    Column("resource_id", Text),
    Column("last_resource_id", Text),
    Column("last_sha256", Text, nullable=False),
    Column("size_bytes", BigInt, nullable=False),
    Column("mtime_ns", BigInt, nullable=False),
    Column("present", Integer, nullable=False, server_default=text("1")),
    Column("seen_at", Text, nullable=False),
    PrimaryKeyConstraint("workspace_id", "path"),
    Index("files_by_resource", "resource_id"),
    Index("files_by_last_resource", "last_resource_id"))

chats = Table(
    "chats", metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("title", Text),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    Column("user_id", Text),  # v5: the workspace user a platform key acted for
    Column("user_email", Text),
    Index("chats_by_workspace", "workspace_id", "created_at"))

messages = Table(
    "messages", metadata,
    Column("id", Text, nullable=False),
    Column("chat_id", Text, ForeignKey("chats.id"), nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("payload", Text),
    Column("format_version", Integer),
    Column("legacy", Text),
    Column("created_at", Text, nullable=False),
    Column("seq", Integer, nullable=False),
    PrimaryKeyConstraint("workspace_id", "id"),
    UniqueConstraint("chat_id", "seq"))

api_keys = Table(
    "api_keys", metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("key_hash", Text, nullable=False, unique=True),
    Column("platform", Integer, nullable=False, server_default=text("0")),
    Column("prefix", Text, nullable=False),
    Column("created_at", Text, nullable=False))

stream_events = Table(
    "stream_events", metadata,
    Column("workspace_id", Text, nullable=False),
    Column("message_id", Text, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("event", Text, nullable=False),
    Column("data", Text, nullable=False),
    PrimaryKeyConstraint("workspace_id", "message_id", "seq"))

chunk_vectors = Table(
    "chunk_vectors", metadata,
    Column("workspace_id", Text, nullable=False),
    Column("text_hash", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("dim", Integer, nullable=False),
    Column("vector", LargeBinary, nullable=False),
    PrimaryKeyConstraint("workspace_id", "text_hash"))

# -- v10 (issue 17): tracking agents, post arrivals, alerts, alerted posts, patterns ----
tracking_agents = Table(
    "tracking_agents", metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("query", Text, nullable=False),
    Column("filters", Text, nullable=False),
    Column("interval_s", Integer, nullable=False),
    Column("state", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    Column("next_run_at", Text, nullable=False),
    Column("last_run_at", Text),
    Column("last_error", Text),
    Column("watermark", Integer, nullable=False, server_default=text("0")),
    Column("runs", Integer, nullable=False, server_default=text("0")),
    Column("lease_owner", Text),
    Column("lease_token", Text),
    Column("lease_until", Text),
    Index("tracking_agents_by_workspace", "workspace_id", "created_at"),
    Index("tracking_agents_due", "state", "next_run_at"))

post_arrivals = Table(
    "post_arrivals", metadata,
    Column("seq", BigInt, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("source_key", Text, nullable=False),
    Column("post_id", Text, nullable=False),
    Column("arrived_at", Text, nullable=False),
    UniqueConstraint("workspace_id", "source_key", "post_id"),
    sqlite_autoincrement=True)

agent_alerts = Table(
    "agent_alerts", metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("agent_id", Text, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("payload", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    UniqueConstraint("agent_id", "seq"))

agent_alerted_posts = Table(
    "agent_alerted_posts", metadata,
    Column("agent_id", Text, nullable=False),
    Column("source_key", Text, nullable=False),
    Column("post_id", Text, nullable=False),
    Column("message_id", Text, nullable=False),
    PrimaryKeyConstraint("agent_id", "source_key", "post_id"))

patterns = Table(
    "patterns", metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("agent_id", Text),
    Column("label", Text, nullable=False),
    Column("members", Text, nullable=False),
    Column("datasets", Text, nullable=False),
    Column("sources", Text, nullable=False),
    Column("first_seen", Text),
    Column("last_seen", Text),
    Column("trend", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("seq", Integer, nullable=False),
    Index("patterns_by_workspace", "workspace_id", "seq"))

# -- v12: jobs (citewell.store.jobs) ---------------------------------------------------------
#: Work off the request path, claimed by workers of any process (times are seconds since
#: the epoch: leases and backoff are compared and added in SQL). ``key`` names a job that
#: must not be queued twice (one queued or running job per key: the partial unique index).
jobs = Table(
    "jobs", metadata,
    Column("seq", BigInt, primary_key=True, autoincrement=True),
    Column("id", Text, nullable=False, unique=True),
    Column("kind", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("key", Text),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("max_attempts", Integer, nullable=False),
    Column("run_after", Double, nullable=False),
    Column("lease_owner", Text),
    Column("lease_token", Text),
    Column("lease_expires", Double),
    Column("error_code", Text),
    Column("error_message", Text),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Index("jobs_queued", "workspace_id", "kind", "state", "run_after"),
    Index("jobs_running", "state", "lease_expires"),
    Index("jobs_by_key", "key", unique=True, sqlite_where=text("state IN ('queued', 'running')"),
          postgresql_where=text("state IN ('queued', 'running')")),
    sqlite_autoincrement=True)

#: One row per (workspace, kind) that ever had a job: when it was last served, so that a
#: claim takes the workspace served longest ago first (fairness between workspaces).
job_lanes = Table(
    "job_lanes", metadata,
    Column("workspace_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("served_at", Double, nullable=False, server_default=text("0")),
    PrimaryKeyConstraint("workspace_id", "kind"))

__all__ = ["BigInt", "job_lanes", "jobs", "agent_alerted_posts", "agent_alerts", "patterns", "post_arrivals", "tracking_agents", "api_keys", "chats", "chunk_vectors", "chunks", "facets", "files", "mentions", "messages",
           "meta", "metadata", "resources", "stream_events", "workspaces"]
