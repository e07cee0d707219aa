"""Resources and sync: files by path, resource rows, their chunks and what a path points at.

Each resource is written in one transaction; extraction happens before it, outside any
transaction. ``UNIQUE(workspace_id, sha256)`` and deterministic ids (:mod:`.ids`) make
concurrent ingestion of the same files converge on one copy. Chunks enter the lexical
index through its hooks (``_index_chunk``, ``_unindex_chunk``, ``_unindex_resource``,
``_reindex_title``: a dialect piece, :mod:`citewell.store.sqlite.lexical` on SQLite).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import PurePath
from typing import Any, Protocol, Sequence

from ..errors import NotFoundError
from ..extraction import Extraction, MentionDraft
from ..models import Chunk, Notice, Passage, Resource
from .filters import facet_rows
from .ids import chunk_id_for, post_chunk_id, text_hash
from .records import PAGE_REACH, FileRecord
from .searchcache import SEARCH
from .sqlbase import RESOURCE_COLUMNS, SQLBase, index_title, now, parse_time


class ResourceStore(Protocol):
    """Resources, their chunks, uploads and the file records of synced folders (the
    resources concern of :class:`~citewell.store.base.Store`; the SQL is
    :class:`Resources` and :class:`~citewell.store.uploads.Uploads`).

    Resources are :class:`~citewell.models.Resource` rows (status ``processing``, ``ready``,
    ``failed``, ``missing`` or ``superseded``), chunks are read as
    :class:`~citewell.models.Chunk` or, with their resource's metadata, as
    :class:`~citewell.models.Passage`; a path's sync state is a :class:`FileRecord`. An id
    of another workspace behaves like an unknown id: :class:`~citewell.errors.NotFoundError`
    where a method says so, else left out (an empty result)."""

    def file_record(self, workspace_id: str, path: str) -> FileRecord | None:
        """The record of an absolute file path, or None if never seen."""
        ...

    def resource_by_sha(self, workspace_id: str, sha256: str) -> Resource | None:
        """The resource row holding this content, whatever its status."""
        ...

    def commit_resource(self, workspace_id: str, resource: Resource, extraction: Extraction | None,
                        *, path: str | None, size_bytes: int, mtime_ns: int, upload: bool = False) -> Resource:
        """Write one resource (ready with ``extraction``, or failed without) in one transaction.

        A row of the same content still ``processing`` (an upload) is replaced. With
        ``upload`` (the extraction of an upload) the row must still exist: one deleted
        meanwhile raises ``NotFoundError`` instead of coming back.

        Ready: inserts the resource, its chunks (ids from the resource), the search index,
        mentions and metadata facets; the path's previous version becomes superseded.
        Failed: inserts only the failed row (never touching a ready version of the path).
        If the content already exists (another process won the race), links the path to
        it and returns the stored row. The blob must be written before the call.
        """
        ...

    def replace_extraction(self, workspace_id: str, resource_id: str, extraction: Extraction, *,
                           extractor_version: str) -> Resource:
        """Re-index a ready resource with a newer extractor's output (one transaction);
        the old chunks stay readable by id but are no longer listed or searched."""
        ...

    def link_path(self, workspace_id: str, path: str, resource: Resource, *, size_bytes: int,
                  mtime_ns: int) -> Resource:
        """Point ``path`` at an existing resource (same content seen again)."""
        ...

    def mark_missing(self, workspace_id: str, root: str, present: Sequence[str]) -> list[str]:
        """Mark files under ``root`` not in ``present`` gone; their resources become missing.

        Returns the ids of resources newly marked missing. Nothing is deleted.
        """
        ...

    def update_resource_metadata(self, workspace_id: str, resource_id: str, *, title: str | None,
                                 metadata: dict[str, Any], custom_metadata: dict[str, Any] | None) -> None:
        """Replace a resource's title (when given), typed metadata and custom metadata."""
        ...

    def resources(self, workspace_id: str, *, statuses: Sequence[str] | None = None,
                  under: str | None = None, paths: bool = True, limit: int | None = None,
                  offset: int = 0) -> list[Resource]:
        """Resources of the workspace, oldest first, optionally by status or path prefix;
        ``paths=False`` skips filling ``Resource.paths``; ``limit``/``offset`` page it."""
        ...

    def total_resources(self, workspace_id: str, *, statuses: Sequence[str] | None = None) -> int:
        """How many resources the workspace has (of these statuses)."""
        ...

    def begin_upload(self, workspace_id: str, resource: Resource) -> Resource:
        """Record an uploaded file before extraction: insert ``resource`` (status
        processing) in one transaction and return it; when the workspace already holds
        the same bytes, return that row instead (ready, or still processing; a superseded
        or missing one becomes ready again; a failed one is replaced to be tried again)."""
        ...

    def pending_uploads(self) -> list[tuple[str, str]]:
        """``(workspace_id, resource_id)`` of every resource still processing (all
        workspaces), for a server to resume after a restart."""
        ...

    def delete_resource(self, workspace_id: str, resource_id: str) -> str | None:
        """Delete a resource with its chunks, search rows, facets, mentions (its own copies
        of its posts: another posts file's copy of the same post is untouched), file
        records and the workspace's vectors of texts no other chunk of it has, in one
        transaction.
        Returns its blob key (the caller removes the blob when no resource refers to it);
        ``NotFoundError`` if not in this workspace. Stored messages keep their copies."""
        ...

    def resource_text(self, workspace_id: str, resource_id: str) -> str:
        """The resource's whole extracted text (each chunk is its ``[char_start:char_end]``
        slice, code points); ``NotFoundError`` if not in this workspace."""
        ...

    def resource(self, workspace_id: str, resource_id: str) -> Resource:
        """One resource; :class:`citewell.errors.NotFoundError` if not in this workspace."""
        ...

    def chunks(self, workspace_id: str, chunk_ids: Sequence[str]) -> dict[str, Passage]:
        """Passages for the given chunk ids that exist in this workspace (any status)."""
        ...

    def resource_chunks(self, workspace_id: str, resource_id: str) -> list[Chunk]:
        """All chunks of one resource in ``chunk_index`` order."""
        ...

    def page_passages(self, workspace_id: str, chunk_id: str, *, reach: int = PAGE_REACH) -> list[Passage]:
        """The passages on the same page as chunk ``chunk_id`` (itself included), in
        ``chunk_index`` order, looking at most ``reach`` chunks before and after it; ``[]``
        for a chunk without a ``page`` or not in this workspace."""
        ...

    def blob_referenced(self, blob_key: str) -> bool:
        """True when a resource of any workspace refers to this blob (blobs are shared)."""
        ...


class Resources(SQLBase):
    """Files, resources and chunks of a workspace (see the module docstring)."""

    # -- lexical index hooks (dialect) --------------------------------------------------
    @staticmethod
    def _index_chunk(conn: sqlite3.Connection, rowid: int, title: str, text: str) -> None:
        raise NotImplementedError

    @staticmethod
    def _unindex_chunk(conn: sqlite3.Connection, rowid: int) -> None:
        raise NotImplementedError

    @staticmethod
    def _unindex_resource(conn: sqlite3.Connection, resource_id: str) -> None:
        raise NotImplementedError

    def _reindex_title(self, conn: sqlite3.Connection, resource_id: str, title: str) -> None:
        raise NotImplementedError

    # -- the Store methods --------------------------------------------------------------
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
        row = self._conn().execute(f"SELECT {RESOURCE_COLUMNS} FROM resources WHERE workspace_id = ? AND sha256 = ?",
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
            (workspace_id, path, current, resource.id, resource.sha256, size_bytes, mtime_ns, now()))
        if usable and old and old["resource_id"] and old["resource_id"] != resource.id:
            self._retire_if_orphaned(conn, old["resource_id"], "superseded")
        if old and old["last_resource_id"] not in (None, resource.id, old["resource_id"]):
            # an earlier failed attempt at this path is history now that another version came
            still = conn.execute("SELECT 1 FROM files WHERE last_resource_id = ? AND present = 1 LIMIT 1",
                                 (old["last_resource_id"],)).fetchone()
            if not still:
                conn.execute("UPDATE resources SET status = 'superseded', updated_at = ? WHERE id = ? "
                             "AND status = 'failed'", (now(), old["last_resource_id"]))

    @staticmethod
    def _retire_if_orphaned(conn: sqlite3.Connection, resource_id: str, status: str) -> bool:
        still = conn.execute("SELECT 1 FROM files WHERE resource_id = ? AND present = 1 LIMIT 1",
                             (resource_id,)).fetchone()
        if still:
            return False
        cur = conn.execute("UPDATE resources SET status = ?, updated_at = ? WHERE id = ? AND status = 'ready'",
                           (status, now(), resource_id))
        return cur.rowcount > 0

    def _insert_resource_row(self, conn: sqlite3.Connection, r: Resource, text: str | None) -> None:
        conn.execute(
            "INSERT INTO resources VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (r.id, r.workspace_id, r.sha256, r.title, r.file_name, r.kind, r.media_type, r.size_bytes,
             r.blob_key, r.status, r.error.code if r.error else None, r.error.message if r.error else None,
             json.dumps([w.model_dump() for w in r.warnings]), json.dumps(r.metadata),
             json.dumps(r.custom_metadata) if r.custom_metadata else None, r.extractor_version,
             r.chunk_count, text, r.created_at.isoformat(), r.updated_at.isoformat()))
        conn.executemany("INSERT INTO facets VALUES (?, ?, ?)", facet_rows(r.id, r.metadata))

    def commit_resource(self, workspace_id: str, resource: Resource, extraction: Extraction | None,
                        *, path: str | None, size_bytes: int, mtime_ns: int, upload: bool = False) -> Resource:
        """Write a ready (with ``extraction``) or failed resource in one transaction."""
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            row = conn.execute(f"SELECT {RESOURCE_COLUMNS} FROM resources WHERE workspace_id = ? AND sha256 = ?",
                               (workspace_id, resource.sha256)).fetchone()
            if upload and (row is None or (row["status"] == "processing"
                                           and parse_time(row["created_at"]) != resource.created_at)):
                # deleted while it was processed (and maybe uploaded again: that upload wins)
                raise NotFoundError(f"no resource {resource.id} (deleted while it was processed)")
            if row is not None:
                existing = self._resource_from_row(row)
                replace = (existing.error is not None and resource.status == "ready") or existing.status == "processing"
                if not replace:
                    if resource.status == "ready" and existing.status in ("superseded", "missing"):
                        conn.execute("UPDATE resources SET status = 'ready', updated_at = ? WHERE id = ?",
                                     (now(), existing.id))
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
        title = index_title(resource.title, resource.metadata)
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
                self._unindex_chunk(conn, old["rowid"])
                rowid = old["rowid"]
            else:
                rowid = self._insert_rowid(conn, "INSERT INTO chunks (id, workspace_id, resource_id, chunk_index, "
                                           "text, text_type, char_start, char_end, metadata, post_source, created_at, "
                                           "version, text_hash, post_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
            self._index_chunk(conn, rowid, title, draft.text)
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
            row = conn.execute(f"SELECT {RESOURCE_COLUMNS} FROM resources WHERE id = ? AND workspace_id = ?",
                               (resource_id, workspace_id)).fetchone()
            if row is None:
                raise NotFoundError(f"no resource {resource_id}")
            resource = self._resource_from_row(row)
            self._unindex_resource(conn, resource_id)
            conn.execute("DELETE FROM mentions WHERE workspace_id = ? AND dataset_id = ?", (workspace_id, resource_id))
            resource.extractor_version = extractor_version
            resource.chunk_count = len(extraction.chunks)
            resource.warnings = [Notice(**w) for w in extraction.warnings]
            conn.execute("UPDATE resources SET extractor_version = ?, chunk_count = ?, extracted_text = ?, "
                         "warnings = ?, updated_at = ? WHERE id = ?",
                         (extractor_version, resource.chunk_count, extraction.text,
                          json.dumps([w.model_dump() for w in resource.warnings]), now(), resource_id))
            self._insert_chunks(conn, workspace_id, resource, extraction)
            return resource

    def link_path(self, workspace_id: str, path: str, resource: Resource, *, size_bytes: int,
                  mtime_ns: int) -> Resource:
        """Point ``path`` at an existing resource; revive it if it was missing or superseded."""
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            if resource.status in ("missing", "superseded"):
                revived = "failed" if resource.error is not None else "ready"
                conn.execute("UPDATE resources SET status = ?, updated_at = ? WHERE id = ?",
                             (revived, now(), resource.id))
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
                                     "AND status = 'failed'", (now(), last))
        return gone

    def _follow_rename(self, conn: sqlite3.Connection, resource_id: str, gone_path: str) -> None:
        """The file a resource is named after is gone but the content lives on under another
        path (a rename or move): take that path's file name, and its stem as title when
        the title was the default one."""
        row = conn.execute("SELECT file_name, title FROM resources WHERE id = ?", (resource_id,)).fetchone()
        other = conn.execute(f"SELECT path FROM files WHERE resource_id = ? AND present = 1 "
                             f"ORDER BY path{self._BYTE_ORDER} LIMIT 1", (resource_id,)).fetchone()
        if row is None or other is None or row["file_name"] != PurePath(gone_path).name:
            return
        new_name = PurePath(other["path"]).name
        title = PurePath(new_name).stem if row["title"] == PurePath(row["file_name"]).stem else row["title"]
        conn.execute("UPDATE resources SET file_name = ?, title = ?, updated_at = ? WHERE id = ?",
                     (new_name, title, now(), resource_id))

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
                                          json.dumps(custom_metadata) if custom_metadata else None, now(),
                                          resource_id))
            conn.execute("DELETE FROM facets WHERE resource_id = ?", (resource_id,))
            conn.executemany("INSERT INTO facets VALUES (?, ?, ?)", facet_rows(resource_id, metadata))
            self._reindex_title(conn, resource_id, index_title(new_title, metadata))

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

    def _list_resources(self, conn: sqlite3.Connection, workspace_id: str, statuses: Sequence[str] | None,
                        under: str | None, limit: int | None, offset: int) -> list[sqlite3.Row]:
        """The rows of :meth:`resources` (every column but the extracted text)."""
        sql = f"SELECT {RESOURCE_COLUMNS} FROM resources r WHERE r.workspace_id = ?"
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
            args += [self._NO_LIMIT if limit is None else limit, offset]
        return conn.execute(sql, args).fetchall()

    def total_resources(self, workspace_id: str, *, statuses: Sequence[str] | None = None) -> int:
        """How many resources the workspace has (of these statuses)."""
        sql = "SELECT count(*) FROM resources WHERE workspace_id = ?"
        args: list[Any] = [workspace_id]
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            args += list(statuses)
        return int(self._conn().execute(sql, args).fetchone()[0])


    def resource(self, workspace_id: str, resource_id: str) -> Resource:
        """One resource of the workspace; ``NotFoundError`` otherwise."""
        conn = self._conn()
        row = conn.execute(f"SELECT {RESOURCE_COLUMNS} FROM resources WHERE id = ? AND workspace_id = ?",
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

    def chunks(self, workspace_id: str, chunk_ids: Sequence[str]) -> dict[str, Passage]:
        """Passages by chunk id (any resource status); ids of other workspaces are absent."""
        rows, resources = self._chunk_rows(self._conn(), workspace_id, "id", list(dict.fromkeys(chunk_ids)))
        return {cid: self._passage(row, resources[row["resource_id"]]) for cid, row in rows.items()
                if row["resource_id"] in resources}

    def page_passages(self, workspace_id: str, chunk_id: str, *, reach: int = PAGE_REACH) -> list[Passage]:
        """The passages on the page of chunk ``chunk_id`` (a PDF chunk of this workspace's
        current extraction), by ``chunk_index``: the chunks within ``reach`` places of it
        whose ``page`` is its page. ``[]`` for an unknown chunk or one without a page."""
        conn = self._conn()
        row = conn.execute(f"SELECT c.resource_id, c.chunk_index, {self._json_int('c.metadata', 'page')} AS page "
                           "FROM chunks c WHERE c.id = ? AND c.workspace_id = ? AND c.post_source IS NULL",
                           (chunk_id, workspace_id)).fetchone()
        if row is None or not isinstance(row["page"], int):
            return []
        rows = conn.execute(
            self._PASSAGE_SELECT + "WHERE c.workspace_id = ? AND c.resource_id = ? AND c.chunk_index BETWEEN ? AND ? "
            f"AND c.post_source IS NULL AND c.version {self._IS} r.extractor_version "
            f"AND {self._json_int('c.metadata', 'page')} = ? ORDER BY c.chunk_index",
            (workspace_id, row["resource_id"], row["chunk_index"] - reach, row["chunk_index"] + reach,
             row["page"])).fetchall()
        return [self._passage_from_row(r) for r in rows]

    def resource_chunks(self, workspace_id: str, resource_id: str) -> list[Chunk]:
        """All chunks of a resource, by ``chunk_index``."""
        rows = self._conn().execute("SELECT c.* FROM chunks c JOIN resources r ON r.id = c.resource_id WHERE "
                                    f"c.workspace_id = ? AND c.resource_id = ? AND c.version {self._IS} r.extractor_version "
                                    "ORDER BY c.chunk_index", (workspace_id, resource_id)).fetchall()
        return [self._chunk_from_row(row) for row in rows]
