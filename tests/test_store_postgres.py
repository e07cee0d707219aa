"""The PostgreSQL store so far (citewell.store.postgres): its schema is the SQLite store's
(the same SQLAlchemy Core tables and Alembic revisions), and the concerns it has pass the
conformance suite (tests/store_conformance.py) on a server the session starts itself."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from citewell.errors import StoreError
from citewell.store.migrate import HEAD, SCHEMA_VERSION
from citewell.store.postgres import PostgresStore, safe_location
from citewell.store.tables import metadata

from .pgserver import PostgresServer
from .store_conformance import ChatsContract, EventsContract, KeysContract


@pytest.fixture
def store(postgres_server: PostgresServer) -> Iterator[PostgresStore]:
    """A PostgreSQL store in a new database."""
    opened = PostgresStore(postgres_server.new_database())
    yield opened
    opened.close()


class TestPostgresKeys(KeysContract):
    pass


class TestPostgresEvents(EventsContract):
    pass


class TestPostgresChats(ChatsContract):
    pass


def _columns(url: str) -> dict[str, list[tuple[str, str]]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE "
                            "table_schema = 'public' ORDER BY table_name, ordinal_position").fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, nullable in rows:
        out.setdefault(table, []).append((column, nullable))
    return out


def test_the_schema_is_the_tables_and_opening_again_changes_nothing(postgres_server: PostgresServer) -> None:
    url = postgres_server.new_database()
    PostgresStore(url).close()
    columns = _columns(url)
    assert set(columns) == set(metadata.tables) | {"alembic_version"}
    for name, table in metadata.tables.items():
        assert columns[name] == [(c.name, "YES" if c.nullable else "NO") for c in table.columns]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD,)]
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    store = PostgresStore(url)  # at the newest revision: only read
    assert store.workspace_id("acme") == store.workspace_id("acme")
    store.close()


def test_other_databases_and_newer_stores_are_refused(postgres_server: PostgresServer) -> None:
    url = postgres_server.new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int)")
    with pytest.raises(StoreError, match="not a citewell store"):
        PostgresStore(url)
    newer = postgres_server.new_database()
    PostgresStore(newer).close()
    with psycopg.connect(newer, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}"):
        PostgresStore(newer)
    with pytest.raises(StoreError, match="cannot open the store postgresql://postgres@127.0.0.1"):
        PostgresStore(postgres_server.url("no_such_database"))


def test_errors_never_show_the_password() -> None:
    assert safe_location("postgresql://app:s3cret@db.internal:5433/citewell") == \
        "postgresql://app@db.internal:5433/citewell"
    assert safe_location("postgresql://app@db/citewell") == "postgresql://app@db/citewell"
