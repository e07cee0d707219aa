"""The PostgreSQL store's schema: the tables of :mod:`citewell.store.tables`, migrated by
Alembic (:mod:`citewell.store.migrate`) on open.

A database at the newest revision is only read. Otherwise the migration runs in one
transaction under an advisory lock (so replicas starting together migrate once): a
database without citewell's tables gets them, then stamps the newest revision; an older
one is upgraded. A database with tables but no ``meta`` table is not a citewell store
and is refused, as is one of a newer schema.
"""

from __future__ import annotations

from ...errors import StoreError, StoreUnavailable
from ..migrate import HEAD, SCHEMA_VERSION, check_state, store_state, upgrade
from .lexical import LEXICAL_TABLES
from .vectors import VECTOR_DDL

#: the advisory lock key of migrations (any fixed 64-bit number, the same for every process)
MIGRATION_LOCK = 0x63697465_77656C6C  # "citewell"


#: the names of the tables of the database's current schema
_TABLES_SQL = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"


def _check(location: str, tables: set[str], version: int) -> None:
    """Refuse a database that is not a citewell store or is newer than this citewell
    (:func:`check_state`; a database holding only Alembic's ``alembic_version`` counts as
    empty)."""
    check_state(location, tables - {"alembic_version"}, version, database="a PostgreSQL database",
                option="--store")


def unreachable(exc: Exception) -> bool:
    """Whether a connection attempt's ``exc`` says the server could not be reached right
    now rather than that it refused this login or database: no answer from the server at
    all (refused, timed out, no route), or the server saying it is starting up, shutting
    down or in recovery (SQLSTATE class 57P or 08 when psycopg gives one; libpq reports
    the server's ``FATAL`` of a failed connection as text, read in English)."""
    state = getattr(exc, "sqlstate", None)
    if state is not None:
        return str(state).startswith(("08", "57P"))
    text = str(exc)
    return "FATAL:" not in text or "the database system is" in text


def migrate(url: str, location: str) -> None:
    """Create or upgrade the citewell schema in the database at ``url`` (``location``: how
    errors name it, without a password). Raises :class:`StoreUnavailable` when the server
    cannot be reached (refused, timed out, starting up or shutting down), :class:`StoreError`
    when the connection is refused otherwise (a login, a missing database), or the database
    is not a citewell store, or is newer than this citewell."""
    import psycopg

    from .connection import connect_kwargs, first_line

    try:
        try:
            opened = psycopg.connect(url, **connect_kwargs(url))
        except psycopg.OperationalError as exc:
            if unreachable(exc):
                raise StoreUnavailable(f"cannot open the store {location}: the database cannot be reached "
                                       f"({first_line(exc)}); try again when it is up") from exc
            raise
        with opened as conn:
            tables, version, revision = store_state(conn, _TABLES_SQL)
        _check(location, tables, version)
        if version == SCHEMA_VERSION and revision == HEAD:
            return
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1), poolclass=NullPool)
        try:
            with engine.begin() as connection:
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
                tables, version, revision = store_state(connection.connection.driver_connection, _TABLES_SQL)
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

