"""Persistence behind one interface; nothing outside this package knows which store is used."""

from __future__ import annotations

from pathlib import Path

from .base import Condition, FileRecord, Store
from .sqlite import SQLiteStore


def open_store(location: str | Path) -> Store:
    """Open the store at ``location`` (a SQLite file path today; a PostgreSQL URL later).

    Raises :class:`citewell.errors.StoreError` when it cannot be opened.
    """
    return SQLiteStore(location)


__all__ = ["Condition", "FileRecord", "SQLiteStore", "Store", "open_store"]
