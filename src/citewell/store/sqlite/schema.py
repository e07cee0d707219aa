"""The SQLite store's migrations: citewell's own steps v1–v10, then Alembic's, on open.

Before Alembic, the schema carried a version (table ``meta``, key ``schema_version``) and
these steps brought a store from any version to the next; they stay, frozen, for the
stores they made. v10 is Alembic's baseline (:mod:`citewell.store.migrate`): a store of an
older version takes the steps up to v10 and is then upgraded by Alembic's revisions, in the
same transaction. :func:`migrate` refuses a file that is not a citewell store or is newer
than this citewell.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ...errors import StoreError
from ..ids import post_chunk_id, text_hash
from ..migrate import HEAD, SCHEMA_VERSION, check_state, store_state, upgrade
from ..sqlbase import index_title
from .connection import BUSY_TIMEOUT_S
from .lexical import FTS5_TABLE

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine


_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS resources (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, sha256 TEXT NOT NULL,
    title TEXT NOT NULL, file_name TEXT NOT NULL, kind TEXT, media_type TEXT,
    size_bytes INTEGER NOT NULL, blob_key TEXT, status TEXT NOT NULL,
    error_code TEXT, error_message TEXT, warnings TEXT NOT NULL DEFAULT '[]',
    metadata TEXT NOT NULL DEFAULT '{}', custom_metadata TEXT,
    extractor_version TEXT, chunk_count INTEGER NOT NULL DEFAULT 0, extracted_text TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    UNIQUE (workspace_id, sha256));
CREATE TABLE IF NOT EXISTS facets (
    resource_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS facets_by_resource ON facets (resource_id, key, value);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, workspace_id TEXT NOT NULL,
    resource_id TEXT NOT NULL, chunk_index INTEGER NOT NULL, text TEXT NOT NULL,
    text_type TEXT NOT NULL, char_start INTEGER NOT NULL, char_end INTEGER NOT NULL,
    metadata TEXT NOT NULL, post_source TEXT, created_at TEXT);
CREATE INDEX IF NOT EXISTS chunks_by_resource ON chunks (resource_id, chunk_index);
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts USING fts5(
    title, text, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS mentions (
    workspace_id TEXT NOT NULL, source_key TEXT NOT NULL, id TEXT NOT NULL,
    source TEXT NOT NULL, text TEXT NOT NULL, url TEXT, author TEXT, created_at TEXT,
    dataset_id TEXT NOT NULL, chunk_id TEXT NOT NULL, fields TEXT NOT NULL,
    PRIMARY KEY (workspace_id, source_key, id));
CREATE TABLE IF NOT EXISTS files (
    workspace_id TEXT NOT NULL, path TEXT NOT NULL, resource_id TEXT,
    last_resource_id TEXT, last_sha256 TEXT NOT NULL, size_bytes INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, present INTEGER NOT NULL DEFAULT 1, seen_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, path));
CREATE INDEX IF NOT EXISTS files_by_resource ON files (resource_id);
"""


#: v2: index files by last attempt (no-op re-syncs stay linear); dataset_posts records
#: every posts file a post appears in, so a post stays findable while any of them is.
_SCHEMA_V2 = """
CREATE INDEX IF NOT EXISTS files_by_last_resource ON files (last_resource_id);
CREATE TABLE IF NOT EXISTS dataset_posts (
    resource_id TEXT NOT NULL, chunk_id TEXT NOT NULL, chunk_index INTEGER NOT NULL,
    PRIMARY KEY (resource_id, chunk_id));
CREATE INDEX IF NOT EXISTS dataset_posts_by_chunk ON dataset_posts (chunk_id);
INSERT OR IGNORE INTO dataset_posts SELECT c.resource_id, c.id, c.chunk_index FROM chunks c
    WHERE c.post_source IS NOT NULL;
"""
#: v3: chunks remember the extractor version that made them; a resource re-extracted by
#: a newer extractor keeps its old chunks readable (stored answers cite them) but only the
#: current version's chunks are listed and searched.
_SCHEMA_V3 = """
ALTER TABLE chunks ADD COLUMN version TEXT;
UPDATE chunks SET version = (SELECT r.extractor_version FROM resources r WHERE r.id = chunks.resource_id)
    WHERE post_source IS NULL;
"""
#: v4: chats and their messages. ``payload`` is the whole canonical message (JSON) of
#: ``format_version``; a NULL ``format_version`` marks a row of the older shape (raw links
#: in ``text``, no references), converted on read; ``legacy`` keeps such a row as first
#: stored once the conversion is written back. ``seq`` orders a chat's messages.
_SCHEMA_V4 = """
CREATE TABLE IF NOT EXISTS chats (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, title TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chats_by_workspace ON chats (workspace_id, created_at);
CREATE TABLE IF NOT EXISTS messages (
    id TEXT NOT NULL, chat_id TEXT NOT NULL REFERENCES chats (id), workspace_id TEXT NOT NULL,
    role TEXT NOT NULL, status TEXT NOT NULL, text TEXT NOT NULL, payload TEXT,
    format_version INTEGER, legacy TEXT, created_at TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id), UNIQUE (chat_id, seq));
"""
#: v5 (the HTTP API): API keys, stored as SHA-256 hashes only, each belonging to one
#: workspace (``platform`` keys may act for others); a chat may belong to one user of its
#: workspace (``user_id`` + ``user_email``, set by a platform key acting for that user).
_SCHEMA_V5 = """
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE,
    platform INTEGER NOT NULL DEFAULT 0, prefix TEXT NOT NULL, created_at TEXT NOT NULL);
ALTER TABLE chats ADD COLUMN user_id TEXT;
ALTER TABLE chats ADD COLUMN user_email TEXT;
CREATE INDEX IF NOT EXISTS resources_by_status ON resources (status);
"""
#: v6 (resumable answer streams): the client events of a streamed answer, in order, so a
#: client that reconnects with ``Last-Event-ID`` gets the rest without a gap or a duplicate,
#: also after the answer finished.
_SCHEMA_V6 = """
CREATE TABLE IF NOT EXISTS stream_events (
    workspace_id TEXT NOT NULL, message_id TEXT NOT NULL, seq INTEGER NOT NULL,
    event TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (workspace_id, message_id, seq));
"""
#: v7 (dense retrieval): chunk embeddings keyed by the sha256 of the chunk's text, so identical
#: text is embedded once whatever its workspace (a vector is only ever read for a chunk the
#: reading workspace has); ``chunks.text_hash`` joins them (``citewell_sha256`` is a function
#: each connection registers).
_SCHEMA_V7 = """
CREATE TABLE IF NOT EXISTS chunk_vectors (
    text_hash TEXT PRIMARY KEY, model TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL);
ALTER TABLE chunks ADD COLUMN text_hash TEXT;
UPDATE chunks SET text_hash = citewell_sha256(text) WHERE text_hash IS NULL;
CREATE INDEX IF NOT EXISTS chunks_by_text_hash ON chunks (text_hash)
"""
#: v8 (tenant isolation): vectors are keyed by workspace and text hash. Shared across
#: workspaces (v7), one workspace could tell from its embedding coverage that another held
#: an exact text; identical text is still embedded once per workspace. Existing vectors are
#: copied to every workspace whose chunks have their text.
_SCHEMA_V8 = """
CREATE TABLE IF NOT EXISTS chunk_vectors_v8 (
    workspace_id TEXT NOT NULL, text_hash TEXT NOT NULL, model TEXT NOT NULL, dim INTEGER NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY (workspace_id, text_hash));
INSERT OR IGNORE INTO chunk_vectors_v8 SELECT DISTINCT c.workspace_id, v.text_hash, v.model, v.dim, v.vector
    FROM chunks c JOIN chunk_vectors v ON v.text_hash = c.text_hash;
DROP TABLE chunk_vectors;
ALTER TABLE chunk_vectors_v8 RENAME TO chunk_vectors
"""


def _migrate_v9(conn: sqlite3.Connection) -> None:
    """v9 (post identity per dataset, issue 14): each posts file keeps its own copy of a post.

    Until v8 a post was one chunk row and one mention per workspace, shared by every posts
    file holding it (``dataset_posts``), so a second file with the same (source, id)
    rewrote the first file's text. From v9 a post's chunks belong to one dataset
    (``chunks.resource_id``; ``chunks.post_id`` next to ``post_source``) and mentions are
    keyed by ``(workspace, dataset, source, id)``. Nothing is lost: the chunk row of a
    shared post stays with the file that owns it (same id), every other file holding it
    gets a copy of the row (an id of :func:`~citewell.store.ids.post_chunk_id`, indexed for
    search), and a mention per file. A copy has the text the store held (which the last
    writer may have set); the ``posts-2`` extractor re-extracts every posts file from its
    own bytes (``citewell ingest``/``sync`` for files, ``citewell serve`` at start for
    uploads), which restores each file's own text. Post chunks also get their extractor
    version, as document chunks have since v3.
    """
    if not any(row[1] == "post_id" for row in conn.execute("PRAGMA table_info(chunks)")):
        conn.execute("ALTER TABLE chunks ADD COLUMN post_id TEXT")
    conn.execute("UPDATE chunks SET post_id = json_extract(metadata, '$.id') WHERE post_source IS NOT NULL "
                 "AND post_id IS NULL")
    conn.execute("UPDATE chunks SET version = (SELECT r.extractor_version FROM resources r WHERE "
                 "r.id = chunks.resource_id) WHERE post_source IS NOT NULL AND version IS NULL")
    conn.execute("""CREATE TABLE IF NOT EXISTS mentions_v9 (
        workspace_id TEXT NOT NULL, dataset_id TEXT NOT NULL, source_key TEXT NOT NULL, id TEXT NOT NULL,
        source TEXT NOT NULL, text TEXT NOT NULL, url TEXT, author TEXT, created_at TEXT,
        chunk_id TEXT NOT NULL, fields TEXT NOT NULL, PRIMARY KEY (workspace_id, dataset_id, source_key, id))""")
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "dataset_posts" in tables:
        members = conn.execute(
            "SELECT dp.resource_id AS rid, dp.chunk_index AS idx, c.rowid AS crow, c.resource_id AS owner, "
            "r.title AS title, r.metadata AS rmeta, r.extractor_version AS version FROM dataset_posts dp "
            "JOIN chunks c ON c.id = dp.chunk_id JOIN resources r ON r.id = dp.resource_id").fetchall()
        for m in members:
            chunk = conn.execute("SELECT * FROM chunks WHERE rowid = ?", (m["crow"],)).fetchone()
            mention = conn.execute("SELECT * FROM mentions WHERE chunk_id = ?", (chunk["id"],)).fetchone()
            cid = chunk["id"]
            if m["owner"] != m["rid"]:  # another file's copy: a row of its own
                cid = post_chunk_id(chunk["workspace_id"], m["rid"], chunk["post_source"], chunk["post_id"] or "")
                metadata = {**json.loads(chunk["metadata"]), "dataset_id": m["rid"]}
                rowid = conn.execute(
                    "INSERT OR IGNORE INTO chunks (id, workspace_id, resource_id, chunk_index, text, text_type, "
                    "char_start, char_end, metadata, post_source, created_at, version, text_hash, post_id) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (cid, chunk["workspace_id"], m["rid"], m["idx"], chunk["text"], chunk["text_type"],
                     chunk["char_start"], chunk["char_end"], json.dumps(metadata), chunk["post_source"],
                     chunk["created_at"], m["version"], chunk["text_hash"], chunk["post_id"])).lastrowid
                if rowid:
                    conn.execute("INSERT INTO chunk_fts (rowid, title, text) VALUES (?, ?, ?)",
                                 (rowid, index_title(m["title"], json.loads(m["rmeta"] or "{}")), chunk["text"]))
            if mention is not None:
                conn.execute("INSERT OR IGNORE INTO mentions_v9 VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                             (mention["workspace_id"], m["rid"], mention["source_key"], mention["id"],
                              mention["source"], mention["text"], mention["url"], mention["author"],
                              mention["created_at"], cid, mention["fields"]))
        conn.execute("DROP TABLE dataset_posts")
    conn.execute("INSERT OR IGNORE INTO mentions_v9 SELECT workspace_id, dataset_id, source_key, id, source, text, "
                 "url, author, created_at, chunk_id, fields FROM mentions")
    conn.execute("DROP TABLE mentions")
    conn.execute("ALTER TABLE mentions_v9 RENAME TO mentions")
    conn.execute("CREATE INDEX IF NOT EXISTS mentions_by_post ON mentions (workspace_id, source_key, id)")
    conn.execute("CREATE INDEX IF NOT EXISTS mentions_by_dataset ON mentions (dataset_id)")
    conn.execute("CREATE INDEX IF NOT EXISTS chunks_by_post ON chunks (resource_id, post_source, post_id)")


#: v10 (issue 17): tracking agents, post arrivals, alerts (canonical messages as JSON),
#: alerted posts, patterns.
_SCHEMA_V10 = """
CREATE TABLE IF NOT EXISTS tracking_agents (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, name TEXT NOT NULL, query TEXT NOT NULL,
    filters TEXT NOT NULL, interval_s INTEGER NOT NULL, state TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, next_run_at TEXT NOT NULL, last_run_at TEXT,
    last_error TEXT, watermark INTEGER NOT NULL DEFAULT 0, runs INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT, lease_token TEXT, lease_until TEXT);
CREATE INDEX IF NOT EXISTS tracking_agents_by_workspace ON tracking_agents (workspace_id, created_at);
CREATE INDEX IF NOT EXISTS tracking_agents_due ON tracking_agents (state, next_run_at);
CREATE TABLE IF NOT EXISTS post_arrivals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, workspace_id TEXT NOT NULL, source_key TEXT NOT NULL,
    post_id TEXT NOT NULL, arrived_at TEXT NOT NULL, UNIQUE (workspace_id, source_key, post_id));
CREATE TABLE IF NOT EXISTS agent_alerts (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, agent_id TEXT NOT NULL, seq INTEGER NOT NULL,
    payload TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE (agent_id, seq));
CREATE TABLE IF NOT EXISTS agent_alerted_posts (
    agent_id TEXT NOT NULL, source_key TEXT NOT NULL, post_id TEXT NOT NULL, message_id TEXT NOT NULL,
    PRIMARY KEY (agent_id, source_key, post_id));
CREATE TABLE IF NOT EXISTS patterns (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, agent_id TEXT, label TEXT NOT NULL,
    members TEXT NOT NULL, datasets TEXT NOT NULL, sources TEXT NOT NULL, first_seen TEXT, last_seen TEXT,
    trend TEXT NOT NULL, created_at TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS patterns_by_workspace ON patterns (workspace_id, seq)
"""


_MIGRATIONS: tuple[tuple[int, str | Callable[[sqlite3.Connection], None]], ...] = (
    (1, _SCHEMA_V1), (2, _SCHEMA_V2), (3, _SCHEMA_V3), (4, _SCHEMA_V4), (5, _SCHEMA_V5), (6, _SCHEMA_V6),
    (7, _SCHEMA_V7), (8, _SCHEMA_V8), (9, _migrate_v9), (10, _SCHEMA_V10))



_ADD_COLUMN = re.compile(r"\s*ALTER TABLE (\w+) ADD COLUMN (\w+)", re.IGNORECASE)


def _column_exists(conn: sqlite3.Connection, statement: str) -> bool:
    """Whether ``statement`` adds a column that is already there (a store a newer or
    interrupted migration touched): such a step is skipped, so migrations are idempotent."""
    m = _ADD_COLUMN.match(statement)
    if m is None:
        return False
    return any(row[1] == m.group(2) for row in conn.execute(f"PRAGMA table_info({m.group(1)})"))


#: the names of the tables of a SQLite database
_TABLES_SQL = "SELECT name FROM sqlite_master WHERE type = 'table'"


def _engine(path: Path) -> Engine:
    """A SQLAlchemy engine on the store file whose transactions are ``BEGIN IMMEDIATE``
    (SQLite's write lock, so concurrent openers migrate one after the other): the driver's
    own transaction handling is off and every begin is emitted here (SQLAlchemy's recipe
    for pysqlite). Connections are not pooled: each closes after use."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import URL
    from sqlalchemy.pool import NullPool

    engine = create_engine(URL.create("sqlite", database=str(path)), poolclass=NullPool,
                           connect_args={"timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        dbapi_connection.isolation_level = None
        dbapi_connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        dbapi_connection.execute("PRAGMA foreign_keys = ON")
        dbapi_connection.create_function("citewell_sha256", 1, text_hash, deterministic=True)

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def migrate(path: Path) -> None:
    """Create or upgrade the store at ``path``.

    A store at the newest revision (:data:`~citewell.store.migrate.HEAD`) is only read.
    Otherwise, in one ``BEGIN IMMEDIATE`` transaction: a store of schema v1–v9 is brought
    to v10 by the steps above, then Alembic takes it to the newest revision
    (:func:`citewell.store.migrate.upgrade`); a file without tables gets the whole schema
    (the tables of :mod:`citewell.store.tables` and the FTS5 index,
    :data:`~citewell.store.sqlite.lexical.FTS5_TABLE`). Table ``meta`` records the
    schema version.

    Raises :class:`StoreError` for a SQLite file that is not a citewell store, one of a
    newer schema, or one that is not a database.
    """
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        try:
            tables, version, revision = store_state(conn, _TABLES_SQL)
        finally:
            conn.close()
        _check(path, tables, version)
        if version == SCHEMA_VERSION and revision == HEAD:
            return
        engine = _engine(path)
        try:
            with engine.begin() as connection:
                conn = connection.connection.driver_connection
                assert isinstance(conn, sqlite3.Connection)
                tables, version, revision = store_state(conn, _TABLES_SQL)  # again, under the write lock
                _check(path, tables, version)
                conn.row_factory = sqlite3.Row
                if tables:
                    for target, script in _MIGRATIONS:
                        if version < target and callable(script):
                            script(conn)
                        elif version < target:
                            for statement in script.split(";\n"):
                                if statement.strip() and not _column_exists(conn, statement):
                                    conn.execute(statement)
                upgrade(connection, fresh=not tables, location=str(path),
                        create_extra=lambda c: c.exec_driver_sql(FTS5_TABLE))
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        finally:
            engine.dispose()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a citewell store ({exc})") from exc
    except Exception as exc:  # SQLAlchemy wraps the driver's errors
        if isinstance(getattr(exc, "orig", None), sqlite3.DatabaseError):
            raise StoreError(f"{path} is not a citewell store ({exc.orig})") from exc
        raise


def _check(path: Path, tables: set[str], version: int) -> None:
    """Refuse a file that is not a citewell store or is newer than this citewell (:func:`check_state`)."""
    check_state(str(path), tables, version, database="an SQLite database", option="--store file")
