"""Persistence behind one interface; nothing outside this package knows which store is used."""

from __future__ import annotations

import os
from pathlib import Path

from ..blobs import BlobStore
from ..errors import StoreError
from ..locations import POSTGRES_SCHEMES, is_url
from ..settings import configured_blobs
from .base import Condition, FileRecord, Store, TextHit
from .sqlite import SQLiteStore


def open_store(location: str | os.PathLike[str] | Path, *,
               blobs: BlobStore | str | os.PathLike[str] | None = None) -> Store:
    """Open the store at ``location``: a PostgreSQL URL (``postgresql://user[:password]@host[:port]/database``
    or ``postgres://…``) opens a :class:`~citewell.store.postgres.PostgresStore`, anything
    else is a SQLite file (:class:`SQLiteStore`, created with its folder when missing).

    ``blobs``: where its originals and page images go (a :class:`~citewell.blobs.BlobStore`,
    a folder or ``s3://bucket/prefix``, see :func:`citewell.blobs.open_blobs`). Default: the
    ``blobs`` setting (:func:`citewell.settings.configured_blobs`: ``CITEWELL_BLOBS``, config
    key ``blobs``; a command's ``--blobs`` sets ``CITEWELL_BLOBS``), else the store's own
    folder: beside a SQLite file (``citewell.sqlite`` → ``citewell.blobs/``), for a URL a
    folder of the database in the user data directory (see
    :meth:`citewell.store.postgres.PostgresStore.blob_dir`).
    Raises :class:`citewell.errors.StoreError` when it cannot be opened (for a URL also
    when the ``psycopg`` driver, extra ``citewell[postgresql]``, is not installed).
    """
    if blobs is None:
        blobs = configured_blobs()
    if is_url(location):
        try:
            import psycopg  # noqa: F401 - the driver is an optional dependency
        except ImportError:
            raise StoreError("a PostgreSQL store needs the driver: pip install 'citewell[postgresql]'") from None
        from .postgres import PostgresStore

        return PostgresStore(str(location), blobs=blobs)
    return SQLiteStore(location, blobs=blobs)


__all__ = ["POSTGRES_SCHEMES", "Condition", "FileRecord", "SQLiteStore", "Store", "TextHit", "is_url", "open_store"]
