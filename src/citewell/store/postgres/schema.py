"""The PostgreSQL store's schema: the tables of :mod:`citewell.store.tables`, migrated by
Alembic (:mod:`citewell.store.migrate`) on open.

A database at the newest revision is only read. Otherwise the migration runs in one
transaction under an advisory lock (so replicas starting together migrate once): a
database without citewell's tables gets them, then stamps the newest revision; an older
one is upgraded. A database with tables but no ``meta`` table is not a citewell store
and is refused, as is one of a newer schema.
"""

from __future__ import annotations

from ...errors import StoreError
from ..migrate import HEAD, SCHEMA_VERSION, upgrade
from .lexical import LEXICAL_TABLES
from .vectors import VECTOR_DDL

#: the advisory lock key of migrations (any fixed 64-bit number, the same for every process)
MIGRATION_LOCK = 0x63697465_77656C6C  # "citewell"


def _current(conn: object) -> tuple[set[str], int, str | None]:
    """``(tables, schema_version, Alembic revision)`` of the database (0 and None when not recorded)."""
    tables = {row[0] for row in conn.execute(  # type: ignore[attr-defined]
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()}
    version = revision = None
    if "meta" in tables:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()  # type: ignore[attr-defined]
    if "alembic_version" in tables:
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()  # type: ignore[attr-defined]
    return tables, int(version[0]) if version else 0, revision[0] if revision else None


def _check(location: str, tables: set[str], version: int) -> None:
    if tables - {"alembic_version"} and "meta" not in tables:
        raise StoreError(f"{location} is a PostgreSQL database but not a citewell store; choose another --store")
    if version > SCHEMA_VERSION:
        raise StoreError(f"the store {location} has schema version {version}; this citewell reads up to "
                         f"{SCHEMA_VERSION}: upgrade citewell")


def migrate(url: str, location: str) -> None:
    """Create or upgrade the citewell schema in the database at ``url`` (``location``: how
    errors name it, without a password). Raises :class:`StoreError` when the database
    cannot be reached, is not a citewell store, or is newer than this citewell."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            tables, version, revision = _current(conn)
        _check(location, tables, version)
        if version == SCHEMA_VERSION and revision == HEAD:
            return
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1), poolclass=NullPool)
        try:
            with engine.begin() as connection:
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
                tables, version, revision = _current(_Raw(connection))
                _check(location, tables, version)
                upgrade(connection, fresh="meta" not in tables, location=location,
                        create_extra=lambda c: [c.exec_driver_sql(ddl) for ddl in LEXICAL_TABLES + VECTOR_DDL])
                connection.execute(text("INSERT INTO meta VALUES ('schema_version', :v) ON CONFLICT (key) DO UPDATE "
                                        "SET value = excluded.value"), {"v": str(SCHEMA_VERSION)})
        finally:
            engine.dispose()
    except psycopg.Error as exc:
        raise StoreError(f"cannot open the store {location}: {exc}") from exc
    except Exception as exc:  # SQLAlchemy wraps the driver's errors
        if isinstance(getattr(exc, "orig", None), psycopg.Error):
            raise StoreError(f"cannot open the store {location}: {exc.orig}") from exc
        raise


class _Raw:
    """A SQLAlchemy connection read like a psycopg one (``execute(sql).fetchall()``)."""

    def __init__(self, connection: object) -> None:
        self.connection = connection

    def execute(self, sql: str) -> object:
        return self.connection.exec_driver_sql(sql)  # type: ignore[attr-defined]
