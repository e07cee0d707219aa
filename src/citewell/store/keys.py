"""Workspaces, store secrets and API keys (hashes only, see :mod:`citewell.keys`)."""

from __future__ import annotations

import secrets
import sqlite3
import uuid
from typing import Protocol

from ..errors import NotFoundError
from .records import ApiKeyRecord
from .sqlbase import SQLBase, now, parse_time


class KeyStore(Protocol):
    """Workspaces by name, named secrets and API keys (the keys concern of
    :class:`~citewell.store.base.Store`).

    A workspace is an id (a UUID string) with a unique name; every other concern is scoped
    to one. Keys are stored as their SHA-256 only (:class:`ApiKeyRecord`, see
    :mod:`citewell.keys`). Unknown workspaces raise :class:`~citewell.errors.NotFoundError`
    where a method says so; a missing key is None, never an error."""

    def workspace_id(self, name: str, *, create: bool = True) -> str:
        """Id of the workspace called ``name`` (created when missing and ``create``).

        Raises :class:`citewell.errors.NotFoundError` when missing and not ``create``.
        """
        ...

    def workspace_name(self, workspace_id: str) -> str:
        """Name of the workspace with this id; ``NotFoundError`` for an unknown id."""
        ...

    def workspace_ids(self) -> list[str]:
        """The id of every workspace, oldest first (for server-wide background work)."""
        ...

    def secret(self, name: str) -> bytes:
        """A random 32-byte secret stored under ``name``, made on first use and the same for
        every process sharing the store (the signing key of presigned URLs)."""
        ...

    def create_api_key(self, workspace_id: str, key_hash: str, *, platform: bool, prefix: str) -> ApiKeyRecord:
        """Store an API key of the workspace by its hash; ``NotFoundError`` for an unknown workspace."""
        ...

    def api_keys(self, workspace_id: str | None = None) -> list[ApiKeyRecord]:
        """Stored keys (of one workspace, or of all), oldest first: never the keys themselves."""
        ...

    def delete_api_key(self, key_id: str) -> bool:
        """Revoke the key with this id (or this prefix, when exactly one key has it); requests
        with it are refused from then on. True when a key was deleted."""
        ...

    def api_key(self, key_hash: str) -> ApiKeyRecord | None:
        """The key whose SHA-256 is ``key_hash``, or None."""
        ...

    def api_key_by_id(self, key_id: str) -> ApiKeyRecord | None:
        """The key with this id (exactly; not a prefix), or None when there is none (never
        made, or revoked): signed links die with the key that made them."""
        ...


class Keys(SQLBase):
    """Workspaces by name, named secrets and API keys."""

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
            wconn.execute("INSERT INTO workspaces VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                          (str(uuid.uuid4()), name, now()))
            return str(wconn.execute("SELECT id FROM workspaces WHERE name = ?", (name,)).fetchone()["id"])

    def workspace_ids(self) -> list[str]:
        """The id of every workspace, oldest first."""
        return [row[0] for row in self._conn().execute(f"SELECT id FROM workspaces ORDER BY {self._INSERTION_ORDER}")]

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
                conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT DO NOTHING", (key, secrets.token_hex(32)))
                row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return bytes.fromhex(row["value"])

    # -- API keys ----------------------------------------------------------------------
    @staticmethod
    def _key_from_row(row: sqlite3.Row) -> ApiKeyRecord:
        return ApiKeyRecord(id=row["id"], workspace_id=row["workspace_id"], platform=bool(row["platform"]),
                            prefix=row["prefix"], created_at=parse_time(row["created_at"]))

    def create_api_key(self, workspace_id: str, key_hash: str, *, platform: bool, prefix: str) -> ApiKeyRecord:
        """Store a key's hash for the workspace (see :meth:`Store.create_api_key`)."""
        key_id = str(uuid.uuid4())
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM workspaces WHERE id = ?", (workspace_id,)).fetchone() is None:
                raise NotFoundError(f"no workspace {workspace_id}")
            conn.execute("INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, ?)",
                         (key_id, workspace_id, key_hash, int(platform), prefix, now()))
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
