"""Uploads and deletion: resources recorded before extraction, resumed after a restart,
and deleted with everything derived from them."""

from __future__ import annotations

import sqlite3

from ..errors import NotFoundError
from ..models import Resource
from .searchcache import SEARCH, VECTORS
from .sqlbase import RESOURCE_COLUMNS, SQLBase, now


class Uploads(SQLBase):
    """Uploads, pending work and deletion of resources."""

    @staticmethod
    def _unindex_resource(conn: sqlite3.Connection, resource_id: str) -> None:
        raise NotImplementedError  # lexical index hook (dialect)

    def begin_upload(self, workspace_id: str, resource: Resource) -> Resource:
        """Record an upload (see :meth:`Store.begin_upload`)."""
        with self._write(bump=SEARCH, workspace=workspace_id) as conn:
            row = conn.execute(f"SELECT {RESOURCE_COLUMNS} FROM resources WHERE workspace_id = ? AND sha256 = ?",
                               (workspace_id, resource.sha256)).fetchone()
            if row is None:
                self._insert_resource_row(conn, resource, None)
                return resource
            existing = self._resource_from_row(row)
            if existing.status in ("ready", "processing"):
                return existing
            if existing.status in ("superseded", "missing") and existing.error is None:
                conn.execute("UPDATE resources SET status = 'ready', updated_at = ? WHERE id = ?",
                             (now(), existing.id))  # its chunks are all there: searchable again
                existing.status = "ready"
                return existing
            # a failed row: tried again (a newer citewell may read it)
            conn.execute("DELETE FROM facets WHERE resource_id = ?", (existing.id,))
            conn.execute("DELETE FROM resources WHERE id = ?", (existing.id,))
            self._insert_resource_row(conn, resource, None)
            return resource

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
            hashes = [r[0] for r in conn.execute("SELECT DISTINCT text_hash FROM chunks WHERE resource_id = ? AND "
                                                 "workspace_id = ? AND text_hash IS NOT NULL",
                                                 (resource_id, workspace_id))]
            self._unindex_resource(conn, resource_id)
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
