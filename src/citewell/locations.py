"""Where a store is: a PostgreSQL URL or a SQLite file, and how messages name it.

A leaf module (it imports nothing of citewell), so that :mod:`citewell.settings` and
:mod:`citewell.store` can both use it without importing each other;
:mod:`citewell.store` re-exports :data:`POSTGRES_SCHEMES` and :func:`is_url`,
:mod:`citewell.store.postgres` :func:`safe_location`.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

#: URL schemes of a PostgreSQL store (libpq accepts both)
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://…`` or
    ``postgres://…``) rather than a SQLite file."""
    return isinstance(location, str) and location.lower().startswith(POSTGRES_SCHEMES)


def safe_location(url: str) -> str:
    """``url`` without its password (how errors and logs name a PostgreSQL store)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


__all__ = ["POSTGRES_SCHEMES", "is_url", "safe_location"]
