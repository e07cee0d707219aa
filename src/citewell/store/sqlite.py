"""The embedded store: one SQLite file (WAL, 30 s busy timeout) plus a blob folder.

- Full-text search is SQLite FTS5 (stdlib) with BM25 ranking; every term is quoted
  before ``MATCH`` so no question can raise a syntax error.
- Each resource is written in one ``BEGIN IMMEDIATE`` transaction; extraction happens
  before it, outside any transaction. ``UNIQUE(workspace_id, sha256)`` and
  deterministic ids make concurrent ingestion of the same files converge on one copy.
- The schema carries a version (table ``meta``) and migrates on open.
- One connection per thread, so a server may share the store between threads.
- Chats and messages (schema v4): a message row keeps the whole canonical message as
  JSON (``payload``) with its ``format_version``; rows of the older shape (NULL
  version, raw links) are converted on read by :mod:`citewell.cite.history` and, with
  ``persist_conversions`` (default), written back once, the original kept in ``legacy``.
- Retrieval reads go through in-process caches (:mod:`citewell.store.searchcache`) tagged
  with the generation counters ``search_generation`` and ``vector_generation`` of table
  ``meta``: every write that changes what a search sees (chunks, the full-text index,
  resources, their files and facets; vectors) bumps its counter in the same transaction
  (``_write(bump=…)``), so another process's or thread's write is seen by the next query.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import threading
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..errors import NotFoundError, StoreError, UsageError
from ..ingest.base import Extraction, MentionDraft
from ..models import FORMAT_VERSION, Chunk, Mention, Message, Notice, Passage, Resource, utcnow
from .base import PAGE_REACH, ApiKeyRecord, ChatRecord, Condition, FileRecord, question_title
from .ids import chunk_id_for, post_chunk_id, text_hash
from .searchcache import GenerationCache, Scope, TermScores, VectorScope, rank_rows, select

if TYPE_CHECKING:
    from ..cite.resolver import SourceResolver

SCHEMA_VERSION = 9
BUSY_TIMEOUT_S = 30.0
#: BM25 column weights of the search index: (title and entity names, chunk text).
BM25_WEIGHTS = (0.5, 1.0)
LIST_FACETS = ("tickers", "company_names", "sector", "subsector", "countries", "regions", "tags",
               "stock_ids", "document_tags")
SCALAR_FACETS = ("calendar_date", "fiscal_year", "fiscal_quarter", "document_category",
                 "document_subcategory", "publisher", "source")
#: ``meta`` keys of the generation counters (see the module docstring)
SEARCH = "search_generation"
VECTORS = "vector_generation"
#: filter keys on chunk columns: searches with them skip the resource-level caches
_CHUNK_KEYS = frozenset({"created_at", "source"})
#: memory budgets of the retrieval caches, in bytes
TERM_CACHE_BYTES = 256 << 20
VECTOR_CACHE_BYTES = 1 << 30

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
                                 (rowid, _index_title(m["title"], json.loads(m["rmeta"] or "{}")), chunk["text"]))
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


_MIGRATIONS: tuple[tuple[int, str | Callable[[sqlite3.Connection], None]], ...] = (
    (1, _SCHEMA_V1), (2, _SCHEMA_V2), (3, _SCHEMA_V3), (4, _SCHEMA_V4), (5, _SCHEMA_V5), (6, _SCHEMA_V6),
    (7, _SCHEMA_V7), (8, _SCHEMA_V8), (9, _migrate_v9))


#: Every column of ``resources`` but ``extracted_text`` (megabytes for a long filing): rows
#: are read on every question, the text only by :meth:`SQLiteStore.resource_text`.
_RESOURCE_COLUMNS = ("id, workspace_id, sha256, title, file_name, kind, media_type, size_bytes, blob_key, status, "
                     "error_code, error_message, warnings, metadata, custom_metadata, extractor_version, "
                     "chunk_count, created_at, updated_at")


def _now() -> str:
    return utcnow().isoformat()


def _dt(value: str | None) -> datetime:
    if not value:
        return utcnow()
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _facet_rows(resource_id: str, metadata: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for key in LIST_FACETS + SCALAR_FACETS:
        value = metadata.get(key)
        if value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                rows.append((resource_id, key, str(item).strip().lower()))
    return rows


def _index_title(title: str, metadata: dict[str, Any]) -> str:
    names = [title, *[str(v) for v in metadata.get("company_names") or []],
             *[str(v) for v in metadata.get("tickers") or []]]
    return " ".join(names)


_ADD_COLUMN = re.compile(r"\s*ALTER TABLE (\w+) ADD COLUMN (\w+)", re.IGNORECASE)


def _column_exists(conn: sqlite3.Connection, statement: str) -> bool:
    """Whether ``statement`` adds a column that is already there (a store a newer or
    interrupted migration touched): such a step is skipped, so migrations are idempotent."""
    m = _ADD_COLUMN.match(statement)
    if m is None:
        return False
    return any(row[1] == m.group(2) for row in conn.execute(f"PRAGMA table_info({m.group(1)})"))


def _under_sql(under: str | None) -> tuple[str, list[Any]]:
    """``AND …`` over ``r`` (resources) keeping those with a present file under folder
    ``under`` (an absolute path), and its parameters; nothing for None."""
    if under is None:
        return "", []
    prefix = under.rstrip("/") + "/"
    return (" AND EXISTS (SELECT 1 FROM files f WHERE f.present = 1 AND f.workspace_id = r.workspace_id "
            "AND f.resource_id = r.id AND substr(f.path, 1, ?) = ?)", [len(prefix), prefix])


def fts_query(terms: Sequence[str]) -> str:
    """Build an FTS5 query matching any term, each quoted (``"a" OR "b"``).

    Quoting makes every word a literal phrase: operators (AND, NOT, NEAR), ``*``, ``-``,
    ``:``, quotes and parentheses in a question can never be parsed as FTS syntax.
    """
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms if t.strip()]
    return " OR ".join(quoted)


class SQLiteStore:
    """The embedded :class:`~citewell.store.base.Store` in one SQLite file.

    ``path`` is the database file (created with its folder when missing); blobs go to
    ``<folder>/<store name>.blobs`` (``citewell.sqlite`` → ``citewell.blobs/``). Raises
    :class:`StoreError` when the file cannot be opened, is not a citewell store, or is
    newer than this version of citewell. ``persist_conversions``: write the conversion
    of a legacy message row back when it is first read (see :meth:`message`).
    """

    def __init__(self, path: str | Path, *, persist_conversions: bool = True) -> None:
        #: write a legacy message's conversion back on first read (rule 10 "once")
        self.persist_conversions = persist_conversions
        self.path = Path(path).expanduser().resolve()
        self.location = str(self.path)
        self.blob_dir = self.path.parent / f"{self.path.stem}.blobs"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {self.path.parent}: {exc}") from exc
        self._local = threading.local()
        #: full-text term -> :class:`TermScores`; workspace -> :class:`Scope`;
        #: (workspace, words) -> document frequency; (workspace, model, matrix?) -> :class:`VectorScope`;
        #: (workspace, under) -> ready resources; (workspace, conditions, under) -> resource ids
        #: (the term scores span every workspace: store-wide generation; the rest are a
        #: workspace's own: its generations, so another workspace's writes keep them)
        self._terms: GenerationCache[TermScores] = GenerationCache(TERM_CACHE_BYTES, lambda t: t.nbytes)
        self._scopes: GenerationCache[Scope] = GenerationCache(64, per_key=True)
        self._alone: GenerationCache[bool] = GenerationCache(1024)  # workspace -> no other has a chunk
        self._dfs: GenerationCache[int] = GenerationCache(200_000, per_key=True)
        self._ranking_resources: GenerationCache[tuple[Resource, ...]] = GenerationCache(64, per_key=True)
        self._resource_sets: GenerationCache[set[str]] = GenerationCache(4096, per_key=True)
        self._vectors: GenerationCache[VectorScope] = GenerationCache(VECTOR_CACHE_BYTES, lambda v: v.nbytes,
                                                                       per_key=True)
        self._verified = False
        self._migrate()
        self._verified = True
        self._conn().execute("PRAGMA journal_mode = WAL")

    # -- connections -------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                if self._verified:  # never touch a file before knowing it is a citewell store
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                conn.create_function("citewell_sha256", 1, text_hash, deterministic=True)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open the store {self.path}: {exc}") from exc
            self._local.conn = conn
        return conn

    @contextmanager
    def _write(self, *, bump: str | None = None, workspace: str | None = None) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; ``bump``: the generation counter (``SEARCH``,
        ``VECTORS``) this write moves, store-wide and (``workspace``) the workspace's own,
        incremented in the same transaction when it changed a row (a sync that finds
        nothing new keeps the caches)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        changes = conn.total_changes
        try:
            yield conn
            if bump is not None and conn.total_changes != changes:
                self._bump(conn, bump, workspace)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    @staticmethod
    def _bump(conn: sqlite3.Connection, counter: str, workspace: str | None = None) -> None:
        """Move the generation ``counter`` (``SEARCH``, ``VECTORS``) inside the open write:
        store-wide, and the workspace's own when ``workspace`` is given."""
        for key in (counter, *([f"{counter}:{workspace}"] if workspace is not None else [])):
            conn.execute("INSERT INTO meta VALUES (?, '1') ON CONFLICT (key) DO UPDATE "
                         "SET value = CAST(value AS INTEGER) + 1", (key,))

    @staticmethod
    def _ws_generation(conn: sqlite3.Connection, workspace_id: str, *keys: str) -> tuple[int, ...]:
        """A workspace's own counters ``keys`` (``SEARCH``, ``VECTORS``), 0 when never bumped."""
        return SQLiteStore._generation(conn, *(f"{k}:{workspace_id}" for k in keys))

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every read inside sees one state of the store (WAL snapshot),
        the generation counters included. Inside a transaction already open, that one."""
        conn = self._conn()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    @staticmethod
    def _generation(conn: sqlite3.Connection, *keys: str) -> tuple[int, ...]:
        """The counters ``keys`` (``SEARCH``, ``VECTORS``) as stored now (0 when never bumped)."""
        rows = dict(conn.execute(f"SELECT key, value FROM meta WHERE key IN ({','.join('?' * len(keys))})",
                                 keys).fetchall())
        return tuple(int(rows.get(k, 0)) for k in keys)

    def close(self) -> None:
        """Close this thread's connection (other threads' close when they end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _migrate(self) -> None:
        try:
            with self._write() as conn:
                tables = {r["name"] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if tables and "meta" not in tables:
                    raise StoreError(f"{self.path} is an SQLite database but not a citewell store; "
                                     "choose another --store file")
                conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                version = int(row["value"]) if row else 0
                if version > SCHEMA_VERSION:
                    raise StoreError(f"the store {self.path} has schema version {version}; this citewell "
                                     f"reads up to {SCHEMA_VERSION}: upgrade citewell")
                for target, script in _MIGRATIONS:
                    if version < target and callable(script):
                        script(conn)
                    elif version < target:
                        for statement in script.split(";\n"):
                            if statement.strip() and not _column_exists(conn, statement):
                                conn.execute(statement)
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a citewell store ({exc})") from exc

    # -- workspaces --------------------------------------------------------------------
    def workspace_id(self, name: str, *, create: bool = True) -> str:
        """Id of workspace ``name``; created when missing and ``create`` is true."""
        conn = self._conn()
        row = conn.execute("SELECT id FROM workspaces WHERE name = ?", (name,)).fetchone()
        if row:
            return str(row["id"])
        if not create:
            raise NotFoundError(f"no workspace named {name!r}")
        with self._write() as wconn:
            wconn.execute("INSERT OR IGNORE INTO workspaces VALUES (?, ?, ?)", (str(uuid.uuid4()), name, _now()))
            return str(wconn.execute("SELECT id FROM workspaces WHERE name = ?", (name,)).fetchone()["id"])

    # -- rows --------------------------------------------------------------------------
    def workspace_name(self, workspace_id: str) -> str:
        """Name of the workspace with this id; ``NotFoundError`` for an unknown id."""
        row = self._conn().execute("SELECT name FROM workspaces WHERE id = ?", (workspace_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no workspace {workspace_id}")
        return str(row["name"])

    def secret(self, name: str) -> bytes:
        """A random 32-byte secret kept in the store under ``name`` (made on first use;
        every process sharing the store reads the same one), e.g. for signed URLs."""
        key = f"secret:{name}"
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            with self._write() as conn:
                conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, secrets.token_hex(32)))
                row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return bytes.fromhex(row["value"])

    # -- stream events -----------------------------------------------------------------
    def append_events(self, workspace_id: str, message_id: str, events: Sequence[tuple[int, str, str]]) -> None:
        """Record client events ``(seq, event name, JSON data)`` of a streamed message (one
        transaction; a ``seq`` recorded already is an error)."""
        if not events:
            return
        with self._write() as conn:
            conn.executemany("INSERT INTO stream_events VALUES (?, ?, ?, ?, ?)",
                             [(workspace_id, message_id, seq, name, data) for seq, name, data in events])

    def events(self, workspace_id: str, message_id: str, *, after: int = 0) -> list[tuple[int, str, str]]:
        """The recorded events of a message with ``seq > after``, in order."""
        rows = self._conn().execute("SELECT seq, event, data FROM stream_events WHERE workspace_id = ? AND "
                                    "message_id = ? AND seq > ? ORDER BY seq", (workspace_id, message_id, after))
        return [(row["seq"], row["event"], row["data"]) for row in rows]

    # -- API keys ----------------------------------------------------------------------
    @staticmethod
    def _key_from_row(row: sqlite3.Row) -> ApiKeyRecord:
        return ApiKeyRecord(id=row["id"], workspace_id=row["workspace_id"], platform=bool(row["platform"]),
                            prefix=row["prefix"], created_at=_dt(row["created_at"]))

    def create_api_key(self, workspace_id: str, key_hash: str, *, platform: bool, prefix: str) -> ApiKeyRecord:
        """Store a key's hash for the workspace (see :meth:`Store.create_api_key`)."""
        key_id = str(uuid.uuid4())
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM workspaces WHERE id = ?", (workspace_id,)).fetchone() is None:
                raise NotFoundError(f"no workspace {workspace_id}")
            conn.execute("INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, ?)",
                         (key_id, workspace_id, key_hash, int(platform), prefix, _now()))
            row = conn.execute("SELECT * FROM api_keys WHERE id = ?", (key_id,)).fetchone()
        return self._key_from_row(row)

    def api_keys(self, workspace_id: str | None = None) -> list[ApiKeyRecord]:
        """Stored keys (of one workspace, or all), oldest first."""
        sql, args = "SELECT * FROM api_keys", []
        if workspace_id is not None:
            sql, args = sql + " WHERE workspace_id = ?", [workspace_id]
        rows = self._conn().execute(sql + " ORDER BY created_at, id", args).fetchall()
        return [self._key_from_row(row) for row in rows]

    def delete_api_key(self, key_id: str) -> bool:
        """Revoke a key by its id (or its prefix, when that names exactly one key); True if one went."""
        with self._write() as conn:
            rows = conn.execute("SELECT id FROM api_keys WHERE id = ? OR prefix = ?", (key_id, key_id)).fetchall()
            if len(rows) != 1:
                return False
            conn.execute("DELETE FROM api_keys WHERE id = ?", (rows[0]["id"],))
        return True

    def api_key(self, key_hash: str) -> ApiKeyRecord | None:
        """The key with this hash, or None."""
        row = self._conn().execute("SELECT * FROM api_keys WHERE key_hash = ?", (key_hash,)).fetchone()
        return self._key_from_row(row) if row else None

    def api_key_by_id(self, key_id: str) -> ApiKeyRecord | None:
        """The key with this id (not a prefix), or None (never made, or revoked)."""
        row = self._conn().execute("SELECT * FROM api_keys WHERE id = ?", (key_id,)).fetchone()
        return self._key_from_row(row) if row else None

    def _resource_from_row(self, row: sqlite3.Row, paths: list[str] | None = None) -> Resource:
        error = {"code": row["error_code"], "message": row["error_message"]} if row["error_code"] else None
        return Resource(
            id=row["id"], workspace_id=row["workspace_id"], title=row["title"], file_name=row["file_name"],
            kind=row["kind"], media_type=row["media_type"], sha256=row["sha256"], size_bytes=row["size_bytes"],
            blob_key=row["blob_key"], status=row["status"], error=error, warnings=json.loads(row["warnings"]),
            metadata=json.loads(row["metadata"]),
            custom_metadata=json.loads(row["custom_metadata"]) if row["custom_metadata"] else None,
            extractor_version=row["extractor_version"], chunk_count=row["chunk_count"],
            paths=paths or [], created_at=_dt(row["created_at"]), updated_at=_dt(row["updated_at"]))

    @staticmethod
    def _chunk_from_row(row: sqlite3.Row) -> Chunk:
        return Chunk(id=row["id"], resource_id=row["resource_id"], chunk_index=row["chunk_index"],
                     text=row["text"], text_type=row["text_type"], char_start=row["char_start"],
                     char_end=row["char_end"], metadata=json.loads(row["metadata"]))

    def _passage_from_row(self, row: sqlite3.Row, score: float = 0.0, rank: int = 0) -> Passage:
        return Passage(chunk=self._chunk_from_row(row), resource_title=row["r_title"],
                       resource_kind=row["r_kind"], file_name=row["r_file_name"], score=score, rank=rank)

    def _paths(self, conn: sqlite3.Connection, resource_ids: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for i in range(0, len(resource_ids), 500):
            batch = list(resource_ids[i:i + 500])
            marks = ",".join("?" * len(batch))
            for row in conn.execute(f"SELECT resource_id, last_resource_id, path FROM files WHERE present = 1 "
                                    f"AND resource_id IN ({marks}) UNION SELECT resource_id, last_resource_id, path "
                                    f"FROM files WHERE present = 1 AND last_resource_id IN ({marks}) ORDER BY path",
                                    batch + batch):
                for rid in {row["resource_id"], row["last_resource_id"]}:
                    if rid in batch:
                        out.setdefault(rid, []).append(row["path"])
        return out

    def file_record(self, workspace_id: str, path: str) -> FileRecord | None:
        """The sync record of ``path`` in the workspace, or None."""
        row = self._conn().execute("SELECT * FROM files WHERE workspace_id = ? AND path = ?",
                                   (workspace_id, path)).fetchone()
        if row is None:
            return None
        return FileRecord(path=row["path"], resource_id=row["resource_id"], last_resource_id=row["last_resource_id"],
                          last_sha256=row["last_sha256"], size_bytes=row["size_bytes"], mtime_ns=row["mtime_ns"],
                          present=bool(row["present"]))

    def blob_referenced(self, blob_key: str) -> bool:
        """True when any resource (any workspace) has this ``blob_key``."""
        return self._conn().execute("SELECT 1 FROM resources WHERE blob_key = ? LIMIT 1",
                                    (blob_key,)).fetchone() is not None

    def resource_by_sha(self, workspace_id: str, sha256: str) -> Resource | None:
        """The resource with this content in the workspace (any status), or None."""
        row = self._conn().execute(f"SELECT {_RESOURCE_COLUMNS} FROM resources WHERE workspace_id = ? AND sha256 = ?",
                                   (workspace_id, sha256)).fetchone()
        return self._resource_from_row(row) if row else None

    # -- writes ------------------------------------------------------------------------
    def _upsert_file(self, conn: sqlite3.Connection, workspace_id: str, path: str, resource: Resource,
                     size_bytes: int, mtime_ns: int) -> None:
        """Record ``path`` -> ``resource``; a ready resource replaces the path's version."""
        old = conn.execute("SELECT resource_id, last_resource_id FROM files WHERE workspace_id = ? AND path = ?",
                           (workspace_id, path)).fetchone()
        usable = resource.status != "failed"
        current = resource.id if usable else (old["resource_id"] if old else None)
        conn.execute(
            "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT (workspace_id, path) DO UPDATE SET "
            "resource_id = excluded.resource_id, last_resource_id = excluded.last_resource_id, "
            "last_sha256 = excluded.last_sha256, size_bytes = excluded.size_bytes, "
            "mtime_ns = excluded.mtime_ns, present = 1, seen_at = excluded.seen_at",
            (workspace_id, path, current, resource.id, resource.sha256, size_bytes, mtime_ns, _now()))
        if usable and old and old["resource_id"] and old["resource_id"] != resource.id:
            self._retire_if_orphaned(conn, old["resource_id"], "superseded")
        if old and old["last_resource_id"] not in (None, resource.id, old["resource_id"]):
            # an earlier failed attempt at this path is history now that another version came
            still = conn.execute("SELECT 1 FROM files WHERE last_resource_id = ? AND present = 1 LIMIT 1",
                                 (old["last_resource_id"],)).fetchone()
            if not still:
                conn.execute("UPDATE resources SET status = 'superseded', updated_at = ? WHERE id = ? "
                             "AND status = 'failed'", (_now(), old["last_resource_id"]))

    @staticmethod
    def _retire_if_orphaned(conn: sqlite3.Connection, resource_id: str, status: str) -> bool:
        still = conn.execute("SELECT 1 FROM files WHERE resource_id = ? AND present = 1 LIMIT 1",
                             (resource_id,)).fetchone()
        if still:
            return False
        cur = conn.execute("UPDATE resources SET status = ?, updated_at = ? WHERE id = ? AND status = 'ready'",
                           (status, _now(), resource_id))
        return cur.rowcount > 0

    def _insert_resource_row(self, conn: sqlite3.Connection, r: Resource, text: str | None) -> None:
        conn.execute(
            "INSERT INTO resources VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (r.id, r.workspace_id, r.sha256, r.title, r.file_name, r.kind, r.media_type, r.size_bytes,
             r.blob_key, r.status, r.error.code if r.error else None, r.error.message if r.error else None,
             json.dumps([w.model_dump() for w in r.warnings]), json.dumps(r.metadata),
             json.dumps(r.custom_metadata) if r.custom_metadata else None, r.extractor_version,
             r.chunk_count, text, r.created_at.isoformat(), r.updated_at.isoformat()))
        conn.executemany("INSERT INTO facets VALUES (?, ?, ?)", _facet_rows(r.id, r.metadata))

    def commit_resource(self, workspace_id: str, resource: Resource, extraction: Extraction | None,
                        *, path: str | None, size_bytes: int, mtime_ns: int, upload: bool = False) -> Resource:
        """Write a ready (with ``extraction``) or failed resource in one transaction."""
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            row = conn.execute(f"SELECT {_RESOURCE_COLUMNS} FROM resources WHERE workspace_id = ? AND sha256 = ?",
                               (workspace_id, resource.sha256)).fetchone()
            if upload and (row is None or (row["status"] == "processing"
                                           and _dt(row["created_at"]) != resource.created_at)):
                # deleted while it was processed (and maybe uploaded again: that upload wins)
                raise NotFoundError(f"no resource {resource.id} (deleted while it was processed)")
            if row is not None:
                existing = self._resource_from_row(row)
                replace = (existing.error is not None and resource.status == "ready") or existing.status == "processing"
                if not replace:
                    if resource.status == "ready" and existing.status in ("superseded", "missing"):
                        conn.execute("UPDATE resources SET status = 'ready', updated_at = ? WHERE id = ?",
                                     (_now(), existing.id))
                        existing.status = "ready"
                    if path is not None:
                        self._upsert_file(conn, workspace_id, path, existing, size_bytes, mtime_ns)
                    return existing
                conn.execute("DELETE FROM facets WHERE resource_id = ?", (existing.id,))
                conn.execute("DELETE FROM resources WHERE id = ?", (existing.id,))
            if extraction is not None and resource.status == "ready":
                resource.chunk_count = len(extraction.chunks)
                self._insert_resource_row(conn, resource, extraction.text)
                self._insert_chunks(conn, workspace_id, resource, extraction)
            else:
                self._insert_resource_row(conn, resource, None)
            if path is not None:
                self._upsert_file(conn, workspace_id, path, resource, size_bytes, mtime_ns)
            return resource

    def _insert_chunks(self, conn: sqlite3.Connection, workspace_id: str, resource: Resource,
                       extraction: Extraction) -> None:
        """Insert (or, for an id already stored, update in place) the chunks of ``extraction``
        as ``resource``'s, with their search rows, and its mentions (schema v9: a post's
        chunks and mention are this dataset's own)."""
        title = _index_title(resource.title, resource.metadata)
        version = resource.extractor_version
        pieces: dict[int, tuple[MentionDraft, int]] = {}  # chunk position -> (its post, part)
        for mention in extraction.mentions:
            for part in range(mention.chunk_count):
                pieces[mention.chunk_position + part] = (mention, part)
        first: dict[int, str] = {}  # id(mention) -> id of its first chunk
        for index, draft in enumerate(extraction.chunks):
            post = pieces.get(index)
            if post is not None:
                mention, part = post
                cid = post_chunk_id(workspace_id, resource.id, mention.source, mention.id, part)
                first.setdefault(id(mention), cid)
                metadata = {**draft.metadata, "dataset_id": resource.id}
            else:
                cid = chunk_id_for(workspace_id, resource.sha256, version or "", index)
                metadata = draft.metadata
            created = draft.metadata.get("created_at") if post else None
            values = (cid, workspace_id, resource.id, index, draft.text, draft.text_type, draft.char_start,
                      draft.char_end, json.dumps(metadata), post[0].source.lower() if post else None,
                      str(created) if created else None, version, text_hash(draft.text),
                      post[0].id if post else None)
            old = conn.execute("SELECT rowid FROM chunks WHERE id = ?", (cid,)).fetchone()
            if old is not None:  # re-extracted (or a concurrent writer): update in place, keep the id
                conn.execute("UPDATE chunks SET workspace_id=?, resource_id=?, chunk_index=?, text=?, text_type=?, "
                             "char_start=?, char_end=?, metadata=?, post_source=?, created_at=?, version=?, "
                             "text_hash=?, post_id=? WHERE rowid=?", values[1:] + (old["rowid"],))
                conn.execute("DELETE FROM chunk_fts WHERE rowid = ?", (old["rowid"],))
                rowid = old["rowid"]
            else:
                rowid = conn.execute("INSERT INTO chunks (id, workspace_id, resource_id, chunk_index, text, "
                                     "text_type, char_start, char_end, metadata, post_source, created_at, version, "
                                     "text_hash, post_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values).lastrowid
            conn.execute("INSERT INTO chunk_fts (rowid, title, text) VALUES (?, ?, ?)", (rowid, title, draft.text))
        for mention in extraction.mentions:
            f = mention.fields
            text = f["text"] if isinstance(f.get("text"), str) else extraction.chunks[mention.chunk_position].text
            conn.execute(
                "INSERT INTO mentions (workspace_id, dataset_id, source_key, id, source, text, url, author, "
                "created_at, chunk_id, fields) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (workspace_id, dataset_id, source_key, id) DO UPDATE SET source=excluded.source, "
                "text=excluded.text, url=excluded.url, author=excluded.author, created_at=excluded.created_at, "
                "chunk_id=excluded.chunk_id, fields=excluded.fields",
                (workspace_id, resource.id, mention.source.lower(), mention.id, mention.source, text, f.get("url"),
                 f.get("author"), f.get("created_at"), first[id(mention)], json.dumps(f)))

    def replace_extraction(self, workspace_id: str, resource_id: str, extraction: Extraction, *,
                           extractor_version: str) -> Resource:
        """Re-index a ready resource with a newer extractor's output, in one transaction.

        The old chunks leave the search index but stay readable by id (stored answers
        cite them); the new chunks (ids of the new version) are inserted and indexed.
        """
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            row = conn.execute(f"SELECT {_RESOURCE_COLUMNS} FROM resources WHERE id = ? AND workspace_id = ?",
                               (resource_id, workspace_id)).fetchone()
            if row is None:
                raise NotFoundError(f"no resource {resource_id}")
            resource = self._resource_from_row(row)
            conn.execute("DELETE FROM chunk_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE resource_id = ?)",
                         (resource_id,))
            conn.execute("DELETE FROM mentions WHERE workspace_id = ? AND dataset_id = ?", (workspace_id, resource_id))
            resource.extractor_version = extractor_version
            resource.chunk_count = len(extraction.chunks)
            resource.warnings = [Notice(**w) for w in extraction.warnings]
            conn.execute("UPDATE resources SET extractor_version = ?, chunk_count = ?, extracted_text = ?, "
                         "warnings = ?, updated_at = ? WHERE id = ?",
                         (extractor_version, resource.chunk_count, extraction.text,
                          json.dumps([w.model_dump() for w in resource.warnings]), _now(), resource_id))
            self._insert_chunks(conn, workspace_id, resource, extraction)
            return resource

    def link_path(self, workspace_id: str, path: str, resource: Resource, *, size_bytes: int,
                  mtime_ns: int) -> Resource:
        """Point ``path`` at an existing resource; revive it if it was missing or superseded."""
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            if resource.status in ("missing", "superseded"):
                revived = "failed" if resource.error is not None else "ready"
                conn.execute("UPDATE resources SET status = ?, updated_at = ? WHERE id = ?",
                             (revived, _now(), resource.id))
                resource.status = revived
            self._upsert_file(conn, workspace_id, path, resource, size_bytes, mtime_ns)
        return resource

    def mark_missing(self, workspace_id: str, root: str, present: Sequence[str]) -> list[str]:
        """Flag files under ``root`` that were not seen; orphaned ready resources become missing."""
        keep = set(present)
        prefix = root.rstrip("/") + "/"
        gone: list[str] = []
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            rows = conn.execute("SELECT path, resource_id, last_resource_id FROM files WHERE workspace_id = ? "
                                "AND present = 1 "
                                "AND substr(path, 1, ?) = ?", (workspace_id, len(prefix), prefix)).fetchall()
            for row in rows:
                if row["path"] in keep:
                    continue
                conn.execute("UPDATE files SET present = 0 WHERE workspace_id = ? AND path = ?",
                             (workspace_id, row["path"]))
                if row["resource_id"] and self._retire_if_orphaned(conn, row["resource_id"], "missing"):
                    gone.append(row["resource_id"])
                elif row["resource_id"]:
                    self._follow_rename(conn, row["resource_id"], row["path"])
                last = row["last_resource_id"]
                if last and last != row["resource_id"]:  # a failed attempt whose file is gone
                    still = conn.execute("SELECT 1 FROM files WHERE last_resource_id = ? AND present = 1 LIMIT 1",
                                         (last,)).fetchone()
                    if not still:
                        conn.execute("UPDATE resources SET status = 'missing', updated_at = ? WHERE id = ? "
                                     "AND status = 'failed'", (_now(), last))
        return gone

    @staticmethod
    def _follow_rename(conn: sqlite3.Connection, resource_id: str, gone_path: str) -> None:
        """The file a resource is named after is gone but the content lives on under another
        path (a rename or move): take that path's file name, and its stem as title when
        the title was the default one."""
        row = conn.execute("SELECT file_name, title FROM resources WHERE id = ?", (resource_id,)).fetchone()
        other = conn.execute("SELECT path FROM files WHERE resource_id = ? AND present = 1 ORDER BY path LIMIT 1",
                             (resource_id,)).fetchone()
        if row is None or other is None or row["file_name"] != PurePath(gone_path).name:
            return
        new_name = PurePath(other["path"]).name
        title = PurePath(new_name).stem if row["title"] == PurePath(row["file_name"]).stem else row["title"]
        conn.execute("UPDATE resources SET file_name = ?, title = ?, updated_at = ? WHERE id = ?",
                     (new_name, title, _now(), resource_id))

    def update_resource_metadata(self, workspace_id: str, resource_id: str, *, title: str | None,
                                 metadata: dict[str, Any], custom_metadata: dict[str, Any] | None) -> None:
        """Replace title (when given), typed metadata, facets and the indexed title."""
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            row = conn.execute("SELECT title FROM resources WHERE id = ? AND workspace_id = ?",
                               (resource_id, workspace_id)).fetchone()
            if row is None:
                raise NotFoundError(f"no resource {resource_id}")
            new_title = title or row["title"]
            conn.execute("UPDATE resources SET title = ?, metadata = ?, custom_metadata = ?, updated_at = ? "
                         "WHERE id = ?", (new_title, json.dumps(metadata),
                                          json.dumps(custom_metadata) if custom_metadata else None, _now(),
                                          resource_id))
            conn.execute("DELETE FROM facets WHERE resource_id = ?", (resource_id,))
            conn.executemany("INSERT INTO facets VALUES (?, ?, ?)", _facet_rows(resource_id, metadata))
            index_title = _index_title(new_title, metadata)
            for chunk in conn.execute("SELECT rowid, text FROM chunks WHERE resource_id = ?", (resource_id,)).fetchall():
                conn.execute("DELETE FROM chunk_fts WHERE rowid = ?", (chunk["rowid"],))
                conn.execute("INSERT INTO chunk_fts (rowid, title, text) VALUES (?, ?, ?)",
                             (chunk["rowid"], index_title, chunk["text"]))

    # -- reads -------------------------------------------------------------------------
    def resources(self, workspace_id: str, *, statuses: Sequence[str] | None = None,
                  under: str | None = None, paths: bool = True, limit: int | None = None,
                  offset: int = 0) -> list[Resource]:
        """Resources of the workspace, oldest first; filter by status or present path prefix;
        ``paths=False`` leaves ``Resource.paths`` empty (one query fewer); ``limit``/``offset``
        page the list."""
        conn = self._conn()
        rows = self._list_resources(conn, workspace_id, statuses, under, limit, offset)
        found = self._paths(conn, [row["id"] for row in rows]) if paths else {}
        return [self._resource_from_row(row, found.get(row["id"])) for row in rows]

    @staticmethod
    def _list_resources(conn: sqlite3.Connection, workspace_id: str, statuses: Sequence[str] | None,
                        under: str | None, limit: int | None, offset: int) -> list[sqlite3.Row]:
        """The rows of :meth:`resources` (every column but the extracted text)."""
        sql = f"SELECT {_RESOURCE_COLUMNS} FROM resources r WHERE r.workspace_id = ?"
        args: list[Any] = [workspace_id]
        if statuses:
            sql += f" AND r.status IN ({','.join('?' * len(statuses))})"
            args += list(statuses)
        if under is not None:
            prefix = under.rstrip("/") + "/"
            sql += (" AND (EXISTS (SELECT 1 FROM files f WHERE f.resource_id = r.id AND f.present = 1 "
                    "AND substr(f.path, 1, ?) = ?) OR EXISTS (SELECT 1 FROM files f WHERE "
                    "f.last_resource_id = r.id AND f.present = 1 AND substr(f.path, 1, ?) = ?))")
            args += [len(prefix), prefix, len(prefix), prefix]
        sql += " ORDER BY r.created_at, r.id"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            args += [-1 if limit is None else limit, offset]
        return conn.execute(sql, args).fetchall()

    def total_resources(self, workspace_id: str, *, statuses: Sequence[str] | None = None) -> int:
        """How many resources the workspace has (of these statuses)."""
        sql = "SELECT count(*) FROM resources WHERE workspace_id = ?"
        args: list[Any] = [workspace_id]
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            args += list(statuses)
        return int(self._conn().execute(sql, args).fetchone()[0])

    # -- uploads and deletion ----------------------------------------------------------
    def begin_upload(self, workspace_id: str, resource: Resource) -> Resource:
        """Record an upload (see :meth:`Store.begin_upload`)."""
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            row = conn.execute(f"SELECT {_RESOURCE_COLUMNS} FROM resources WHERE workspace_id = ? AND sha256 = ?",
                               (workspace_id, resource.sha256)).fetchone()
            if row is None:
                self._insert_resource_row(conn, resource, None)
                return resource
            existing = self._resource_from_row(row)
            if existing.status in ("ready", "processing"):
                return existing
            if existing.status in ("superseded", "missing") and existing.error is None:
                conn.execute("UPDATE resources SET status = 'ready', updated_at = ? WHERE id = ?",
                             (_now(), existing.id))  # its chunks are all there: searchable again
                existing.status = "ready"
                return existing
            # a failed row: tried again (a newer citewell may read it)
            conn.execute("DELETE FROM facets WHERE resource_id = ?", (existing.id,))
            conn.execute("DELETE FROM resources WHERE id = ?", (existing.id,))
            self._insert_resource_row(conn, resource, None)
            return resource

    def workspace_ids(self) -> list[str]:
        """The id of every workspace, oldest first."""
        return [row[0] for row in self._conn().execute("SELECT id FROM workspaces ORDER BY rowid")]

    def pending_uploads(self) -> list[tuple[str, str]]:
        """``(workspace_id, resource_id)`` of every resource still processing, oldest first."""
        rows = self._conn().execute("SELECT workspace_id, id FROM resources WHERE status = 'processing' "
                                    "ORDER BY created_at, id").fetchall()
        return [(row["workspace_id"], row["id"]) for row in rows]

    def delete_resource(self, workspace_id: str, resource_id: str) -> str | None:
        """Delete a resource and everything derived from it (see :meth:`Store.delete_resource`)."""
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            row = conn.execute("SELECT blob_key FROM resources WHERE id = ? AND workspace_id = ?",
                               (resource_id, workspace_id)).fetchone()
            if row is None:
                raise NotFoundError(f"no resource {resource_id}")
            chunk_rows = "SELECT rowid FROM chunks WHERE resource_id = ? AND workspace_id = ?"
            hashes = [r[0] for r in conn.execute("SELECT DISTINCT text_hash FROM chunks WHERE resource_id = ? AND "
                                                 "workspace_id = ? AND text_hash IS NOT NULL",
                                                 (resource_id, workspace_id))]
            conn.execute(f"DELETE FROM chunk_fts WHERE rowid IN ({chunk_rows})", (resource_id, workspace_id))
            conn.execute("DELETE FROM mentions WHERE workspace_id = ? AND dataset_id = ?", (workspace_id, resource_id))
            conn.execute("DELETE FROM chunks WHERE resource_id = ? AND workspace_id = ?", (resource_id, workspace_id))
            conn.execute("DELETE FROM facets WHERE resource_id = ?", (resource_id,))
            conn.execute("DELETE FROM files WHERE workspace_id = ? AND (resource_id = ? OR last_resource_id = ?)",
                         (workspace_id, resource_id, resource_id))
            conn.execute("DELETE FROM resources WHERE id = ?", (resource_id,))
            # vectors of texts no chunk of the workspace has any more: a deleted document's
            # embeddings go with it
            dropped = 0
            for i in range(0, len(hashes), 500):
                part = hashes[i:i + 500]
                dropped += conn.execute(
                    f"DELETE FROM chunk_vectors WHERE workspace_id = ? AND text_hash IN ({','.join('?' * len(part))}) "
                    "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.workspace_id = chunk_vectors.workspace_id "
                    "AND c.text_hash = chunk_vectors.text_hash)", [workspace_id, *part]).rowcount
            if dropped:
                self._bump(conn, VECTORS, workspace_id)
        return row["blob_key"]

    def resource(self, workspace_id: str, resource_id: str) -> Resource:
        """One resource of the workspace; ``NotFoundError`` otherwise."""
        conn = self._conn()
        row = conn.execute(f"SELECT {_RESOURCE_COLUMNS} FROM resources WHERE id = ? AND workspace_id = ?",
                           (resource_id, workspace_id)).fetchone()
        if row is None:
            raise NotFoundError(f"no resource {resource_id}")
        return self._resource_from_row(row, self._paths(conn, [resource_id]).get(resource_id))

    def resource_text(self, workspace_id: str, resource_id: str) -> str:
        """The resource's whole extracted text (every chunk is a slice of it)."""
        row = self._conn().execute("SELECT extracted_text FROM resources WHERE id = ? AND workspace_id = ?",
                                   (resource_id, workspace_id)).fetchone()
        if row is None:
            raise NotFoundError(f"no resource {resource_id}")
        return row["extracted_text"] or ""

    _PASSAGE_SELECT = ("SELECT c.*, r.title AS r_title, r.kind AS r_kind, r.file_name AS r_file_name "
                       "FROM chunks c JOIN resources r ON r.id = c.resource_id ")

    def chunks(self, workspace_id: str, chunk_ids: Sequence[str]) -> dict[str, Passage]:
        """Passages by chunk id (any resource status); ids of other workspaces are absent."""
        rows, resources = self._chunk_rows(self._conn(), workspace_id, "id", list(dict.fromkeys(chunk_ids)))
        return {cid: self._passage(row, resources[row["resource_id"]]) for cid, row in rows.items()
                if row["resource_id"] in resources}

    @staticmethod
    def _chunk_rows(conn: sqlite3.Connection, workspace_id: str, column: str,
                    keys: Sequence[Any]) -> tuple[dict[Any, sqlite3.Row], dict[str, sqlite3.Row]]:
        """The workspace's chunk rows whose ``column`` (``id`` or ``rowid``) is one of ``keys``, by
        key, and the ``(id, title, kind, file_name, status)`` rows of their resources, by id.
        Two lookups: a join reading both tables row by row is several times slower."""
        rows: dict[Any, sqlite3.Row] = {}
        for i in range(0, len(keys), 500):
            batch = list(keys[i:i + 500])
            rows.update((row[column], row) for row in conn.execute(
                f"SELECT c.* FROM chunks c WHERE c.{column} IN ({','.join('?' * len(batch))}) "
                "AND c.workspace_id = ?", [*batch, workspace_id]))
        ids = list({row["resource_id"] for row in rows.values()})
        resources: dict[str, sqlite3.Row] = {}
        for i in range(0, len(ids), 500):
            batch = ids[i:i + 500]
            marks = ",".join("?" * len(batch))
            resources.update((row["id"], row) for row in conn.execute(
                f"SELECT id, title, kind, file_name, status FROM resources WHERE id IN ({marks})", batch))
        return rows, resources

    def _passage(self, row: sqlite3.Row, resource: sqlite3.Row, score: float = 0.0, rank: int = 0) -> Passage:
        """A passage from a chunk row and its resource's row (see :meth:`_chunk_rows`)."""
        return Passage(chunk=self._chunk_from_row(row), resource_title=resource["title"],
                       resource_kind=resource["kind"], file_name=resource["file_name"], score=score,
                       rank=rank)

    def page_passages(self, workspace_id: str, chunk_id: str, *, reach: int = PAGE_REACH) -> list[Passage]:
        """The passages on the page of chunk ``chunk_id`` (a PDF chunk of this workspace's
        current extraction), by ``chunk_index``: the chunks within ``reach`` places of it
        whose ``page`` is its page. ``[]`` for an unknown chunk or one without a page."""
        conn = self._conn()
        row = conn.execute("SELECT c.resource_id, c.chunk_index, json_extract(c.metadata, '$.page') AS page "
                           "FROM chunks c WHERE c.id = ? AND c.workspace_id = ? AND c.post_source IS NULL",
                           (chunk_id, workspace_id)).fetchone()
        if row is None or not isinstance(row["page"], int):
            return []
        rows = conn.execute(
            self._PASSAGE_SELECT + "WHERE c.workspace_id = ? AND c.resource_id = ? AND c.chunk_index BETWEEN ? AND ? "
            "AND c.post_source IS NULL AND c.version IS r.extractor_version "
            "AND json_extract(c.metadata, '$.page') = ? ORDER BY c.chunk_index",
            (workspace_id, row["resource_id"], row["chunk_index"] - reach, row["chunk_index"] + reach,
             row["page"])).fetchall()
        return [self._passage_from_row(r) for r in rows]

    def resource_chunks(self, workspace_id: str, resource_id: str) -> list[Chunk]:
        """All chunks of a resource, by ``chunk_index``."""
        rows = self._conn().execute("SELECT c.* FROM chunks c JOIN resources r ON r.id = c.resource_id WHERE "
                                    "c.workspace_id = ? AND c.resource_id = ? AND c.version IS r.extractor_version "
                                    "ORDER BY c.chunk_index", (workspace_id, resource_id)).fetchall()
        return [self._chunk_from_row(row) for row in rows]

    #: The order in which the copies of one post are chosen when no dataset is named (see
    #: :meth:`Store.mentions`): ready datasets first, the most recently added first.
    _COPY_ORDER = " ORDER BY r.status = 'ready' DESC, r.created_at DESC, r.id DESC LIMIT 1"

    def post_passage(self, workspace_id: str, source: str, post_id: str, *,
                     dataset_id: str | None = None) -> Passage | None:
        """The first chunk of post (source, id) as a passage (source compared lower-cased):
        the copy of posts file ``dataset_id``, or without one the copy
        :meth:`mentions` chooses."""
        row = self._mention_row(self._conn(), workspace_id, source, post_id, dataset_id)
        return self.chunks(workspace_id, [row["chunk_id"]]).get(row["chunk_id"]) if row is not None else None

    def _mention_row(self, conn: sqlite3.Connection, workspace_id: str, source: str, post_id: str,
                     dataset_id: str | None) -> sqlite3.Row | None:
        sql = ("SELECT m.* FROM mentions m JOIN resources r ON r.id = m.dataset_id WHERE m.workspace_id = ? "
               "AND m.source_key = ? AND m.id = ?")
        args: list[Any] = [workspace_id, source.lower(), post_id]
        if dataset_id is not None:
            sql += " AND m.dataset_id = ?"
            args.append(dataset_id)
        return conn.execute(sql + self._COPY_ORDER, args).fetchone()

    def mentions(self, workspace_id: str, refs: Sequence[tuple[str, str]], *,
                 dataset_ids: Sequence[str | None] | None = None) -> list[Mention | None]:
        """Mentions for (source, id) pairs in the order asked, each the copy of its
        ``dataset_ids`` entry when given (see :meth:`Store.mentions`); None for unknown pairs."""
        conn = self._conn()
        wanted = list(dataset_ids) if dataset_ids is not None else [None] * len(refs)
        out: list[Mention | None] = []
        for (source, post_id), dataset_id in zip(refs, wanted):
            row = self._mention_row(conn, workspace_id, source, post_id, dataset_id)
            out.append(self._mention_from_row(row) if row is not None else None)
        return out

    def list_mentions(self, workspace_id: str, *, source: str | None = None, terms: Sequence[str] = (),
                      created_after: str | None = None, created_before: str | None = None,
                      dataset_id: str | None = None, limit: int = 50,
                      after: tuple[str, ...] | None = None) -> list[Mention]:
        """Mentions of the workspace by ``(created_at, source, id, dataset_id)`` (see
        :meth:`Store.list_mentions`); a post held by two datasets is listed once per dataset."""
        sql = ("SELECT m.* FROM mentions m JOIN resources r ON r.id = m.dataset_id "
               "WHERE m.workspace_id = ? AND r.status = 'ready'")
        args: list[Any] = [workspace_id]
        if source is not None:
            sql += " AND m.source_key = ?"
            args.append(source.lower())
        if dataset_id is not None:
            sql += " AND m.dataset_id = ?"
            args.append(dataset_id)
        if created_after is not None:
            sql += " AND COALESCE(m.created_at, '') >= ?"
            args.append(created_after)
        if created_before is not None:
            sql += " AND COALESCE(m.created_at, '') <= ?"
            args.append(created_before)
        query = fts_query(terms)
        if query:  # any piece of the post (only the current version's pieces are indexed)
            sql += (" AND EXISTS (SELECT 1 FROM chunks p WHERE p.resource_id = m.dataset_id AND p.post_source = "
                    "m.source_key AND p.post_id = m.id AND p.rowid IN (SELECT rowid FROM chunk_fts WHERE chunk_fts "
                    "MATCH ?))")
            args.append(query)
        if after is not None:
            key = (list(after) + ["\uffff"])[:4]  # a three-part key (before v9): after every copy of the post
            sql += " AND (COALESCE(m.created_at, ''), m.source_key, m.id, m.dataset_id) > (?, ?, ?, ?)"
            args += key
        sql += " ORDER BY COALESCE(m.created_at, ''), m.source_key, m.id, m.dataset_id LIMIT ?"
        args.append(limit)
        return [self._mention_from_row(row) for row in self._conn().execute(sql, args).fetchall()]

    @staticmethod
    def _mention_from_row(row: sqlite3.Row) -> Mention:
        fields = json.loads(row["fields"])
        fields.update(source=row["source"], id=row["id"], text=row["text"], dataset_id=row["dataset_id"],
                      chunk_id=row["chunk_id"])
        return Mention(**fields)

    def search_text(self, workspace_id: str, terms: Sequence[str], *, limit: int,
                    conditions: Sequence[Condition] = (), under: str | None = None) -> list[Passage]:
        """BM25 over ready resources of the workspace (see :class:`Store.search_text`).

        Filters on resources (all but ``created_at`` and ``source``) and the folder scope
        rank from the cached per-term scores (:func:`~citewell.store.searchcache.rank_rows`):
        the same rows, order and scores as the SQL ranking, which the others still use.
        """
        query = fts_query(terms)
        if not query or limit <= 0:
            return []
        if not any(c.key in _CHUNK_KEYS for c in conditions):
            words = [t for t in terms if t.strip()]
            found = self._search_cached(workspace_id, words, limit, conditions, under)
            if found is not None:
                return found
        where, args = self._filter_sql(conditions)
        sql = (f"SELECT c.*, r.title AS r_title, r.kind AS r_kind, r.file_name AS r_file_name, "
               f"bm25(chunk_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]}) AS rank_score "
               "FROM chunk_fts JOIN chunks c ON c.rowid = chunk_fts.rowid JOIN resources r ON r.id = c.resource_id "
               "WHERE chunk_fts MATCH ? AND c.workspace_id = ? AND r.status = 'ready'")
        params: list[Any] = [query, workspace_id]
        if under is not None:
            prefix = under.rstrip("/") + "/"
            sql += (" AND EXISTS (SELECT 1 FROM files f WHERE f.present = 1 AND f.workspace_id = r.workspace_id "
                    "AND f.resource_id = r.id AND substr(f.path, 1, ?) = ?)")
            params += [len(prefix), prefix]
        sql += where + " ORDER BY rank_score, c.rowid LIMIT ?"
        rows = self._conn().execute(sql, params + args + [limit]).fetchall()
        return [self._passage_from_row(row, score=-float(row["rank_score"]), rank=i + 1) for i, row in enumerate(rows)]

    def term_counts(self, workspace_id: str, groups: Sequence[Sequence[str]]) -> tuple[int, list[int]]:
        """Chunk count and per-group document frequencies (see :class:`Store.term_counts`).

        Each group is one FTS5 query on the text column, ``text : ("a" AND "b")``, every
        word quoted as in :func:`fts_query`; counts are cached per workspace and group
        until the next write that changes what a search sees.
        """
        with self._snapshot() as conn:
            scope, generation = self._scope(conn, workspace_id)
            counts = [self._dfs.get(generation, (workspace_id, tuple(group)),
                                    lambda group=group: self._count_group(conn, scope, group))
                      for group in groups]
        return len(scope.rowids), counts

    def ranking_resources(self, workspace_id: str, *, under: str | None = None) -> tuple[Resource, ...]:
        """The ready resources of :meth:`resources` (``statuses=["ready"]``, no paths), shared
        read-only objects cached per search generation (see :meth:`Store.ranking_resources`):
        reading the rows skips over each resource's extracted text, and building hundreds of
        resources costs about ten milliseconds, per question otherwise."""
        with self._snapshot() as conn:
            generation = self._ws_generation(conn, workspace_id, SEARCH)
            return self._ranking_resources.get(generation, (workspace_id, under), lambda: tuple(
                self._resource_from_row(row) for row in self._list_resources(conn, workspace_id, ["ready"],
                                                                              under, None, 0)))

    def scope_resources(self, workspace_id: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> tuple[Resource, ...]:
        """The resources of :meth:`ranking_resources` that match the resource-level
        ``conditions`` (see :meth:`Store.scope_resources`); cached sets as searches use."""
        resource_conditions = [c for c in conditions if c.key not in _CHUNK_KEYS]
        everything = self.ranking_resources(workspace_id, under=under)
        if not resource_conditions:
            return everything
        with self._snapshot() as conn:
            ids = self._scope_resources(conn, workspace_id, resource_conditions, under)
        return everything if ids is None else tuple(r for r in everything if r.id in ids)

    @staticmethod
    def _count_group(conn: sqlite3.Connection, scope: Scope, group: Sequence[str]) -> int:
        """How many rows of ``scope`` have every word of ``group`` in their text (0 for no word)."""
        quoted = ['"' + w.replace('"', '""') + '"' for w in group if w.strip()]
        if not quoted:
            return 0
        query = "text : (" + " AND ".join(quoted) + ")"
        if scope.fts_covered:  # every indexed row is the workspace's: no join needed
            row = conn.execute("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (query,)).fetchone()
            return int(row[0])
        cur = conn.cursor()
        cur.row_factory = None
        found = np.fromiter((r[0] for r in cur.execute("SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?",
                                                       (query,))), dtype=np.int64)
        return int(np.isin(found, scope.rowids).sum())

    # -- retrieval caches (see searchcache) ---------------------------------------------
    def _scope(self, conn: sqlite3.Connection, workspace_id: str) -> tuple[Scope, tuple[int, ...]]:
        """The workspace's chunk rows of ready resources, and the generation it is cached
        under (and what is computed from it: document frequencies): the workspace's own
        search generation, and the store-wide one too while the workspace is the store's only
        one (then its rows may be the whole full-text index, ``fts_covered``, which another
        workspace's first chunk changes)."""
        own = self._ws_generation(conn, workspace_id, SEARCH)
        whole = self._generation(conn, SEARCH)
        alone = self._alone.get(whole, workspace_id, lambda: conn.execute(
            "SELECT 1 FROM chunks WHERE workspace_id != ? LIMIT 1", (workspace_id,)).fetchone() is None)
        generation = (*own, *(whole if alone else (0,)))

        def load() -> Scope:
            cur = conn.cursor()
            cur.row_factory = None
            rows = cur.execute("SELECT c.rowid, c.resource_id FROM chunks c JOIN resources r "
                               "ON r.id = c.resource_id WHERE c.workspace_id = ? AND r.status = 'ready' "
                               "ORDER BY c.rowid", (workspace_id,)).fetchall()
            names: dict[str, int] = {}
            rowids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            index = np.fromiter((names.setdefault(row[1], len(names)) for row in rows), dtype=np.int32,
                                count=len(rows))
            covered = False
            if alone:  # with another workspace's chunks in the store, the index is not all this one's
                indexed = np.fromiter((row[0] for row in cur.execute("SELECT rowid FROM chunk_fts")),
                                      dtype=np.int64)
                covered = bool(np.isin(indexed, rowids).all())
            return Scope(rowids, index, tuple(names), covered)

        return self._scopes.get(generation, workspace_id, load), generation

    def _scope_resources(self, conn: sqlite3.Connection, workspace_id: str, conditions: Sequence[Condition],
                         under: str | None) -> set[str] | None:
        """Ids of the workspace's ready resources matching ``conditions`` (resource keys only)
        under folder ``under`` (cached per search generation); None when neither is given
        (every resource)."""
        if not conditions and under is None:
            return None
        generation = self._ws_generation(conn, workspace_id, SEARCH)
        return self._resource_sets.get(generation, (workspace_id, tuple(conditions), under),
                                       lambda: self._find_resources(conn, workspace_id, conditions, under))

    def _find_resources(self, conn: sqlite3.Connection, workspace_id: str, conditions: Sequence[Condition],
                        under: str | None) -> set[str]:
        """What :meth:`_scope_resources` caches, read from the store."""
        folder, folder_params = _under_sql(under)
        sql = "SELECT r.id FROM resources r WHERE r.workspace_id = ? AND r.status = 'ready'" + folder
        where, args = self._filter_sql(conditions)
        return {row[0] for row in conn.execute(sql + where, [workspace_id, *folder_params, *args])}

    def _term_scores(self, conn: sqlite3.Connection, generation: tuple[int, ...], term: str) -> TermScores:
        """The rows ``term`` matches and its share of their ``bm25`` (cached per search generation)."""
        def load() -> TermScores:
            cur = conn.cursor()
            cur.row_factory = None
            score = f"bm25(chunk_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]})"
            rows = cur.execute(f"SELECT rowid, {score} FROM chunk_fts WHERE chunk_fts MATCH ?",
                               (fts_query([term]),)).fetchall()
            return TermScores(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                              -np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)))

        return self._terms.get(generation, term, load)

    def _search_cached(self, workspace_id: str, terms: Sequence[str], limit: int,
                       conditions: Sequence[Condition], under: str | None) -> list[Passage] | None:
        """:meth:`search_text` from the caches (resource-level ``conditions`` only); None
        when a ranked row cannot be read back (then the SQL ranking answers)."""
        with self._snapshot() as conn:
            generation = self._generation(conn, SEARCH)
            scope, _ = self._scope(conn, workspace_id)
            mask = scope.mask(self._scope_resources(conn, workspace_id, conditions, under))
            rowids, keys = rank_rows([self._term_scores(conn, generation, t) for t in terms], mask, limit)
            if not len(rowids):
                return []
            wanted = [int(r) for r in rowids]
            rows, resources = self._chunk_rows(conn, workspace_id, "rowid", wanted)
        if len(rows) != len(wanted) or any(r["status"] != "ready" for r in resources.values()) \
                or any(row["resource_id"] not in resources for row in rows.values()):
            return None
        return [self._passage(rows[rid], resources[rows[rid]["resource_id"]], score=-float(key), rank=i + 1)
                for i, (rid, key) in enumerate(zip(wanted, keys))]

    def _vector_scope(self, conn: sqlite3.Connection, workspace_id: str, model: str,
                      generation: tuple[int, ...], *, matrix: bool) -> VectorScope:
        """The workspace's searchable chunks for ``model`` (cached per search and vector
        generation): all of them with their ``embedded`` flags, or (``matrix``) only the
        embedded ones with their vectors."""
        def load() -> VectorScope:
            # chunks outside (CROSS JOIN): the vectors are looked up by their key, never walked
            join = ("CROSS JOIN" if matrix else "LEFT JOIN") + (" chunk_vectors v ON v.workspace_id = "
                                                                "c.workspace_id AND v.text_hash = c.text_hash "
                                                                "AND v.model = ?")
            scope, params = self._scope_sql(workspace_id, (), None, join)
            column = "v.vector" if matrix else "v.text_hash IS NOT NULL"
            cur = conn.cursor()
            cur.row_factory = None
            rows = cur.execute(f"SELECT c.id, c.resource_id, {column} {scope} ORDER BY c.rowid",
                               [model, *params]).fetchall()
            names: dict[str, int] = {}
            index = np.fromiter((names.setdefault(row[1], len(names)) for row in rows), dtype=np.int32,
                                count=len(rows))
            vectors = np.zeros((0, 0), dtype="<f4")
            if matrix:
                embedded = np.ones(len(rows), dtype=bool)
                if rows:
                    blobs = b"".join(row[2] for row in rows)
                    vectors = np.frombuffer(blobs, dtype="<f4").reshape(len(rows), -1)
            else:
                embedded = np.fromiter((bool(row[2]) for row in rows), dtype=bool, count=len(rows))
            return VectorScope(tuple(row[0] for row in rows), index, tuple(names), embedded, vectors)

        return self._vectors.get(generation, (workspace_id, model, matrix), load)

    def count_resources(self, workspace_id: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> int:
        """Ready resources with chunks matching ``conditions`` (see the Store protocol)."""
        where, args = self._filter_sql(conditions)
        sql = ("SELECT count(DISTINCT r.id) FROM chunks c JOIN resources r ON r.id = c.resource_id "
               "WHERE c.workspace_id = ? AND r.status = 'ready'")
        params: list[Any] = [workspace_id]
        if under is not None:
            prefix = under.rstrip("/") + "/"
            sql += (" AND EXISTS (SELECT 1 FROM files f WHERE f.present = 1 AND f.resource_id = r.id "
                    "AND substr(f.path, 1, ?) = ?)")
            params += [len(prefix), prefix]
        return int(self._conn().execute(sql + where, params + args).fetchone()[0])

    # -- vectors (schema v8: keyed by workspace and text hash) -------------------------
    def _scope_sql(self, workspace_id: str, conditions: Sequence[Condition], under: str | None,
                   join: str = "") -> tuple[str, list[Any]]:
        """``FROM … WHERE …`` over the searchable chunks ``c`` (current version, ready
        resource ``r``) of the workspace matching ``conditions`` and folder ``under``:
        the chunks :meth:`search_text` can return. ``join`` goes before ``WHERE``."""
        folder, folder_params = _under_sql(under)
        sql = (f"FROM chunks c JOIN resources r ON r.id = c.resource_id {join} WHERE c.workspace_id = ? "
               "AND r.status = 'ready' AND c.version IS r.extractor_version" + folder)
        where, args = self._filter_sql(conditions)
        return sql + where, [workspace_id, *folder_params, *args]

    def texts_without_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                              under: str | None = None, limit: int | None = None,
                              shortest_first: bool = False) -> list[tuple[str, str]]:
        """``(text_hash, text)`` of the distinct texts of searchable chunks in scope (as
        :meth:`search_text`: ``conditions``, ``under``) without a ``model`` vector yet, in
        chunk order (a resource's chunks together), or shortest first (``shortest_first``,
        then chunk order); at most ``limit``."""
        scope, params = self._scope_sql(workspace_id, conditions, under)
        order = "length(c.text), first" if shortest_first else "first"
        sql = (f"SELECT c.text_hash AS h, min(c.rowid) AS first, c.text AS text {scope} AND NOT EXISTS "
               "(SELECT 1 FROM chunk_vectors v WHERE v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash "
               f"AND v.model = ?) GROUP BY c.text_hash ORDER BY {order}")
        params.append(model)
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [(row["h"], row["text"]) for row in self._conn().execute(sql, params)]

    def missing_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> int:
        """How many distinct texts :meth:`texts_without_vectors` would give (none is read)."""
        scope, params = self._scope_sql(workspace_id, conditions, under)
        sql = (f"SELECT count(DISTINCT c.text_hash) {scope} AND NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE "
               "v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash AND v.model = ?)")
        return int(self._conn().execute(sql, [*params, model]).fetchone()[0])

    def vector_coverage(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> tuple[int, int]:
        """``(embedded, total)``: searchable chunks in scope with a ``model`` vector, and all of them."""
        if not any(c.key in _CHUNK_KEYS for c in conditions):
            with self._snapshot() as conn:
                generation = self._ws_generation(conn, workspace_id, SEARCH, VECTORS)
                scope = self._vector_scope(conn, workspace_id, model, generation, matrix=False)
                rows = select(scope.resource_index, scope.resource_ids,
                              self._scope_resources(conn, workspace_id, conditions, under))
            return int((rows & scope.embedded).sum()), int(rows.sum())
        join = "LEFT JOIN chunk_vectors v ON v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash " \
               "AND v.model = ?"
        scope, params = self._scope_sql(workspace_id, conditions, under, join)
        row = self._conn().execute(f"SELECT count(*) AS total, count(v.text_hash) AS embedded {scope}",
                                   [model, *params]).fetchone()
        return int(row["embedded"]), int(row["total"])

    def put_vectors(self, workspace_id: str, model: str, dim: int, vectors: Sequence[tuple[str, bytes]]) -> int:
        """Store the workspace's vectors ``(text_hash, float32 bytes, 4 × dim of them)`` of
        ``model`` in one transaction; a text's vector of another model is replaced. Only
        texts some chunk of the workspace still has are stored (a resource deleted while it
        was being embedded leaves no vector behind); returns how many were. ``StoreError``
        for a wrong byte length."""
        if not vectors:
            return 0
        for key, blob in vectors:
            if len(blob) != 4 * dim:
                raise StoreError(f"the vector of {key} has {len(blob)} bytes, expected {4 * dim}")
        with self._write(bump=VECTORS, workspace=workspace_id) as conn:
            return conn.executemany(  # rowcount: the rows inserted or updated, over every vector
                "INSERT INTO chunk_vectors SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM chunks WHERE "
                "workspace_id = ? AND text_hash = ?) ON CONFLICT (workspace_id, text_hash) DO UPDATE "
                "SET model = excluded.model, dim = excluded.dim, vector = excluded.vector",
                [(workspace_id, key, model, dim, blob, workspace_id, key) for key, blob in vectors]).rowcount

    def scope_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                      under: str | None = None) -> list[tuple[str, bytes]]:
        """``(chunk_id, vector bytes)`` of every searchable chunk in scope that has a
        ``model`` vector, in chunk order: what dense search ranks."""
        join = ("CROSS JOIN chunk_vectors v ON v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash "
                "AND v.model = ?")
        scope, params = self._scope_sql(workspace_id, conditions, under, join)
        rows = self._conn().execute(f"SELECT c.id AS id, v.vector AS vector {scope} ORDER BY c.rowid",
                                    [model, *params])
        return [(row["id"], row["vector"]) for row in rows]

    def scope_matrix(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                     under: str | None = None) -> tuple[Sequence[str], np.ndarray]:
        """:meth:`scope_vectors` as ``(chunk ids, float32 matrix (n, dim))``, same rows in the
        same order, from a cached matrix of the workspace (filters on ``created_at`` and
        ``source`` read :meth:`scope_vectors`). The matrix may be the cache's own array:
        read-only."""
        if any(c.key in _CHUNK_KEYS for c in conditions):
            rows = self.scope_vectors(workspace_id, model, conditions=conditions, under=under)
            if not rows:
                return [], np.zeros((0, 0), dtype="<f4")
            matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4").reshape(len(rows), -1)
            return [cid for cid, _ in rows], matrix
        with self._snapshot() as conn:
            generation = self._ws_generation(conn, workspace_id, SEARCH, VECTORS)
            scope = self._vector_scope(conn, workspace_id, model, generation, matrix=True)
            resources = self._scope_resources(conn, workspace_id, conditions, under)
        if resources is None:
            return scope.ids, scope.matrix
        rows = np.flatnonzero(select(scope.resource_index, scope.resource_ids, resources))
        return [scope.ids[i] for i in rows], scope.matrix[rows]

    def vectors(self, workspace_id: str, model: str, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        """Vector bytes of ``model`` for those of ``chunk_ids`` that are chunks of this
        workspace and have one (ids of other workspaces are absent)."""
        out: dict[str, bytes] = {}
        ids = list(dict.fromkeys(chunk_ids))
        for i in range(0, len(ids), 500):
            batch = ids[i:i + 500]
            rows = self._conn().execute(
                # CROSS JOIN keeps chunks (found by id) outside: else SQLite may walk every vector
                # of the workspace by the (workspace_id, text_hash) key (0.3 s at 100k, not 0.4 ms)
                "SELECT c.id AS id, v.vector AS vector FROM chunks c CROSS JOIN chunk_vectors v ON v.workspace_id = "
                "c.workspace_id AND v.text_hash = c.text_hash AND v.model = ? WHERE c.workspace_id = ? AND c.id IN "
                f"({','.join('?' * len(batch))})",
                [model, workspace_id, *batch])
            out.update({row["id"]: row["vector"] for row in rows})
        return out

    @staticmethod
    def _filter_sql(conditions: Sequence[Condition]) -> tuple[str, list[Any]]:
        """Translate conditions to ``AND …`` SQL over ``r`` (resources) and ``c`` (chunks)."""
        clauses: list[str] = []
        args: list[Any] = []
        for cond in conditions:
            values = list(cond.values)
            marks = ",".join("?" * len(values))
            facet = ("EXISTS (SELECT 1 FROM facets f WHERE f.resource_id = r.id AND f.key = ? AND {test})")
            if cond.key == "document_name":  # title, stored file name, or the name of a present path
                paths = " OR ".join("lower(f.path) LIKE ? ESCAPE '\\'" for _ in values)
                clauses.append(f"(lower(r.title) IN ({marks}) OR lower(r.file_name) IN ({marks}) OR EXISTS "
                               f"(SELECT 1 FROM files f WHERE f.resource_id = r.id AND f.present = 1 AND ({paths})))")
                args += values + values + ["%/" + re.sub(r"([%_\\])", r"\\\1", v) for v in values]
            elif cond.key == "kind":
                clauses.append(f"r.kind IN ({marks})")
                args += values
            elif cond.key == "resource_id":
                clauses.append(f"r.id IN ({marks})")
                args += values
            elif cond.key == "created_at":
                if cond.op == "ge":
                    clauses.append("c.created_at >= ?")
                    args.append(values[0])
                elif cond.op == "le":  # a date bound includes that whole day: 2022-06-30T12:00Z <= 2022-06-30
                    clauses.append("(c.created_at <= ? OR substr(c.created_at, 1, ?) = ?)")
                    args += [values[0], len(values[0]), values[0]]
                else:
                    clauses.append("(" + " OR ".join("c.created_at LIKE ?" for _ in values) + ")")
                    args += [v + "%" for v in values]
            elif cond.key == "source":
                clauses.append(f"(lower(c.post_source) IN ({marks}) OR "
                               + facet.format(test=f"f.value IN ({marks})") + ")")
                args += values + ["source"] + values
            elif cond.op == "ge":
                clauses.append(facet.format(test="f.value >= ?"))
                args += [cond.key, values[0]]
            elif cond.op == "le":
                clauses.append(facet.format(test="(f.value <= ? OR substr(f.value, 1, ?) = ?)"))
                args += [cond.key, values[0], len(values[0]), values[0]]
            elif cond.key == "calendar_date":
                clauses.append(facet.format(test="(" + " OR ".join("f.value LIKE ?" for _ in values) + ")"))
                args += [cond.key] + [v + "%" for v in values]
            else:
                clauses.append(facet.format(test=f"f.value IN ({marks})"))
                args += [cond.key] + values
        return "".join(" AND " + c for c in clauses), args

    # -- chats and messages ------------------------------------------------------------
    #: a chat row with the first question that has text (the title of an untitled chat)
    _CHAT_SELECT = ("SELECT c.*, (SELECT m.text FROM messages m WHERE m.chat_id = c.id AND m.role = 'user' "
                    "AND m.text != '' ORDER BY m.seq LIMIT 1) AS first_question FROM chats c")

    @staticmethod
    def _chat_from_row(row: sqlite3.Row) -> ChatRecord:
        title = row["title"]
        if title is None and row["first_question"] is not None:
            title = question_title(row["first_question"]) or None
        return ChatRecord(id=row["id"], workspace_id=row["workspace_id"], title=title,
                          created_at=_dt(row["created_at"]), updated_at=_dt(row["updated_at"]),
                          user_id=row["user_id"], user_email=row["user_email"])

    def create_chat(self, workspace_id: str, title: str | None = None, *, user_id: str | None = None,
                    user_email: str | None = None) -> ChatRecord:
        """Create an empty chat (UUIDv4 id); see :meth:`Store.create_chat`."""
        now = _now()
        chat_id = str(uuid.uuid4())
        with self._write() as conn:
            conn.execute("INSERT INTO chats (id, workspace_id, title, created_at, updated_at, user_id, user_email) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", (chat_id, workspace_id, title, now, now, user_id, user_email))
            row = conn.execute(self._CHAT_SELECT + " WHERE c.id = ?", (chat_id,)).fetchone()
        return self._chat_from_row(row)

    def chat(self, workspace_id: str, chat_id: str, *, user_id: str | None = None) -> ChatRecord:
        """One chat of the workspace (of that user, when ``user_id``); ``NotFoundError``
        otherwise (other workspaces' and other users' chats too)."""
        sql = self._CHAT_SELECT + " WHERE c.id = ? AND c.workspace_id = ?"
        args: list[Any] = [chat_id, workspace_id]
        if user_id is not None:
            sql += " AND c.user_id = ?"
            args.append(user_id)
        row = self._conn().execute(sql, args).fetchone()
        if row is None:
            raise NotFoundError(f"no chat {chat_id}")
        return self._chat_from_row(row)

    def chats(self, workspace_id: str, *, user_id: str | None = None) -> list[ChatRecord]:
        """Chats of the workspace (of that user, when ``user_id``), oldest first."""
        sql = self._CHAT_SELECT + " WHERE c.workspace_id = ?"
        args: list[Any] = [workspace_id]
        if user_id is not None:
            sql += " AND c.user_id = ?"
            args.append(user_id)
        rows = self._conn().execute(sql + " ORDER BY c.created_at, c.id", args).fetchall()
        return [self._chat_from_row(row) for row in rows]

    @staticmethod
    def _next_seq(conn: sqlite3.Connection, workspace_id: str, chat_id: str) -> int:
        if conn.execute("SELECT 1 FROM chats WHERE id = ? AND workspace_id = ?",
                        (chat_id, workspace_id)).fetchone() is None:
            raise NotFoundError(f"no chat {chat_id}")
        return int(conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE chat_id = ?",
                                (chat_id,)).fetchone()[0])

    @staticmethod
    def _check_free(conn: sqlite3.Connection, workspace_id: str, message_id: str) -> None:
        if conn.execute("SELECT 1 FROM messages WHERE workspace_id = ? AND id = ?",
                        (workspace_id, message_id)).fetchone() is not None:
            raise UsageError(f"message id {message_id} is already used")

    def add_message(self, workspace_id: str, chat_id: str, message: Message) -> Message:
        """Append one message (one transaction); see :meth:`Store.add_message`."""
        return self.add_messages(workspace_id, chat_id, [message])[0]

    def add_messages(self, workspace_id: str, chat_id: str, messages: Sequence[Message]) -> list[Message]:
        """Append messages in order, all in one transaction; returns the stored copies. A
        message timed before the chat's last one (turns of one chat answered concurrently)
        takes that time, so ``created_at`` never goes back in the history's order."""
        stored: list[Message] = []
        with self._write() as conn:
            seq = self._next_seq(conn, workspace_id, chat_id)
            last = conn.execute("SELECT created_at FROM messages WHERE chat_id = ? ORDER BY seq DESC LIMIT 1",
                                (chat_id,)).fetchone()
            latest = _dt(last["created_at"]) if last else None
            for message in messages:
                copy = message.model_copy(deep=True)
                copy.chat_id = chat_id
                copy.id = copy.id or str(uuid.uuid4())
                copy.format_version = FORMAT_VERSION
                if latest is not None and copy.created_at < latest:
                    copy.created_at = latest
                latest = copy.created_at
                self._check_free(conn, workspace_id, copy.id)
                payload = copy.model_dump_json()
                conn.execute("INSERT INTO messages (id, chat_id, workspace_id, role, status, text, payload, "
                             "format_version, legacy, created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                             (copy.id, chat_id, workspace_id, copy.role, copy.status, copy.text,
                              payload, FORMAT_VERSION, copy.created_at.isoformat(), seq))
                seq += 1
                # what a read returns (JSON round trip: tuples in additive fields become lists …)
                stored.append(Message.model_validate_json(payload))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (_now(), chat_id))
        return stored

    def add_legacy_message(self, workspace_id: str, chat_id: str, row: Mapping[str, Any]) -> str:
        """Store a row of the pre-``format_version`` shape as given (see :meth:`Store.add_legacy_message`)."""
        original = dict(row)
        message_id = str(original.get("id") or uuid.uuid4())
        original["id"] = message_id
        original["chat_id"] = chat_id
        created = original.get("created_at") or _now()
        original["created_at"] = str(created)
        with self._write() as conn:
            seq = self._next_seq(conn, workspace_id, chat_id)
            self._check_free(conn, workspace_id, message_id)
            conn.execute("INSERT INTO messages (id, chat_id, workspace_id, role, status, text, payload, "
                         "format_version, legacy, created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
                         (message_id, chat_id, workspace_id, original.get("role") or "assistant",
                          original.get("status") or "settled", original.get("text") or "",
                          json.dumps(original, ensure_ascii=False), original["created_at"], seq))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (_now(), chat_id))
        return message_id

    def settle_message(self, workspace_id: str, message: Message) -> Message:
        """Replace a pending message by its settled (or failed) form (see :meth:`Store.settle_message`)."""
        copy = message.model_copy(deep=True)
        copy.format_version = FORMAT_VERSION
        if copy.status == "pending":
            raise UsageError("a message settles as settled or failed, not pending")
        with self._write() as conn:
            row = conn.execute("SELECT chat_id, status FROM messages WHERE workspace_id = ? AND id = ?",
                               (workspace_id, copy.id)).fetchone()
            if row is None:
                raise NotFoundError(f"no message {copy.id}")
            if row["status"] != "pending":
                raise UsageError(f"message {copy.id} has settled already ({row['status']})")
            copy.chat_id = row["chat_id"]
            payload = copy.model_dump_json()
            conn.execute("UPDATE messages SET status = ?, text = ?, payload = ?, format_version = ? "
                         "WHERE workspace_id = ? AND id = ?",
                         (copy.status, copy.text, payload, FORMAT_VERSION, workspace_id, copy.id))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (_now(), row["chat_id"]))
        return Message.model_validate_json(payload)

    def fail_pending(self, *, before: datetime, code: str, message: str,
                     keep: Callable[[Message], bool] | None = None) -> int:
        """Settle as failed every pending message (all workspaces) created before ``before``
        (but those ``keep`` says another live process is still answering)."""
        with self._write() as conn:
            rows = conn.execute("SELECT workspace_id, id, payload FROM messages WHERE status = 'pending' "
                                "AND format_version IS NOT NULL").fetchall()
            failed = 0
            for row in rows:
                pending = Message.model_validate_json(row["payload"])
                if pending.created_at >= before or (keep is not None and keep(pending)):
                    continue
                pending.status = "failed"
                pending.warnings.append(Notice(code=code, message=message))
                setattr(pending, "error", {"code": code, "message": message})
                conn.execute("UPDATE messages SET status = 'failed', payload = ? WHERE workspace_id = ? AND id = ?",
                             (pending.model_dump_json(), row["workspace_id"], row["id"]))
                failed += 1
        return failed

    def _resolver(self, workspace_id: str, resolver: SourceResolver | None) -> SourceResolver:
        if resolver is not None:
            return resolver
        from ..engine import StoreResolver  # the engine's resolver; imported late (engine imports the store)

        return StoreResolver(self, workspace_id)

    def _read(self, workspace_id: str, row: sqlite3.Row, resolver: SourceResolver | None) -> Message:
        """A row through rule 10; a legacy row converted (and written back once when
        ``persist_conversions``; if another process converted it first, its version wins)."""
        from ..cite.history import is_current, read_message

        fields = dict(row)
        if is_current(fields):
            return read_message(fields)
        message = read_message(fields, self._resolver(workspace_id, resolver))
        payload = message.model_dump_json()
        message = Message.model_validate_json(payload)  # exactly what later reads return
        if not self.persist_conversions:
            return message
        try:
            with self._write() as conn:
                updated = conn.execute(
                    "UPDATE messages SET legacy = COALESCE(legacy, payload), payload = ?, format_version = ?, "
                    "text = ?, status = ? WHERE workspace_id = ? AND id = ? AND format_version IS NULL",
                    (payload, FORMAT_VERSION, message.text, message.status, workspace_id, fields["id"])).rowcount
                if not updated:
                    current = conn.execute("SELECT * FROM messages WHERE workspace_id = ? AND id = ?",
                                           (workspace_id, fields["id"])).fetchone()
                    if current is not None and is_current(dict(current)):
                        return read_message(dict(current))
        except sqlite3.Error:  # a read-only store still reads: the conversion is deterministic
            pass
        return message

    def message(self, workspace_id: str, message_id: str, *,
                resolver: SourceResolver | None = None, user_id: str | None = None) -> Message:
        """One message of the workspace (in a chat of that user, when ``user_id``) through
        rule 10; ``NotFoundError`` otherwise."""
        sql = "SELECT m.* FROM messages m WHERE m.workspace_id = ? AND m.id = ?"
        args: list[Any] = [workspace_id, message_id]
        if user_id is not None:
            sql += " AND EXISTS (SELECT 1 FROM chats c WHERE c.id = m.chat_id AND c.user_id = ?)"
            args.append(user_id)
        row = self._conn().execute(sql, args).fetchone()
        if row is None:
            raise NotFoundError(f"no message {message_id}")
        return self._read(workspace_id, row, resolver)

    def messages(self, workspace_id: str, chat_id: str, *, limit: int | None = None,
                 after: str | None = None, resolver: SourceResolver | None = None,
                 user_id: str | None = None) -> list[Message]:
        """A chat's messages oldest first (see :meth:`Store.messages`)."""
        conn = self._conn()
        self.chat(workspace_id, chat_id, user_id=user_id)
        sql = "SELECT * FROM messages WHERE workspace_id = ? AND chat_id = ?"
        args: list[Any] = [workspace_id, chat_id]
        if after is not None:
            mark = conn.execute("SELECT seq FROM messages WHERE workspace_id = ? AND chat_id = ? AND id = ?",
                                (workspace_id, chat_id, after)).fetchone()
            if mark is None:
                raise NotFoundError(f"no message {after} in chat {chat_id}")
            sql += " AND seq > ?"
            args.append(mark["seq"])
        sql += " ORDER BY seq"
        if limit is not None:
            if limit < 0:
                raise UsageError("limit must not be negative")
            sql += " LIMIT ?"
            args.append(limit)
        rows = conn.execute(sql, args).fetchall()
        return [self._read(workspace_id, row, resolver) for row in rows]
